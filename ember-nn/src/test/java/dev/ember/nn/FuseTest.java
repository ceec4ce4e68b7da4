package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FuseTest {
  /** Random running statistics and affine parameters, so the fold has something to fold. */
  private static void randomStats(BatchNormBase bn, Generator gen) {
    int c = bn.numFeatures();
    try (Grad ignored = Grad.off()) {
      bn.runningMean().copy_(Tensor.rand(gen, c).sub(0.5));
      bn.runningVar().copy_(Tensor.rand(gen, c).mul(1.5).add(0.5));
      if (bn.affine()) {
        bn.weight().copy_(Tensor.rand(gen, c).mul(1.5).add(0.25));
        bn.bias().copy_(Tensor.rand(gen, c).sub(0.5));
      }
    }
  }

  private static void randomStats(Module model, Generator gen) {
    for (Module m : model.modules()) if (m instanceof BatchNormBase bn) randomStats(bn, gen);
  }

  /** max |a - b| &lt;= rel * max |b|. */
  private static void assertRelClose(Tensor expected, Tensor actual, double rel) {
    assertArrayEquals(expected.shape(), actual.shape());
    double[] e = expected.toDoubleArray();
    double[] a = actual.toDoubleArray();
    double scale = 0;
    double diff = 0;
    for (int i = 0; i < e.length; i++) {
      scale = Math.max(scale, Math.abs(e[i]));
      diff = Math.max(diff, Math.abs(e[i] - a[i]));
    }
    assertTrue(diff <= rel * scale, "max |diff| " + diff + " > " + rel + " * " + scale);
  }

  private static Map<String, double[]> snapshot(Module m) {
    Map<String, double[]> s = new LinkedHashMap<>();
    m.stateDict().forEach((k, v) -> s.put(k, v.toDoubleArray()));
    return s;
  }

  private static void assertSameState(Map<String, double[]> expected, Module m) {
    Map<String, double[]> now = snapshot(m);
    assertEquals(expected.keySet(), now.keySet());
    expected.forEach((k, v) -> assertArrayEquals(v, now.get(k), k));
  }

  @Test
  void convnetFusedEqualsUnfusedEvalAndLeavesTheModelAlone() {
    Generator.manualSeed(3);
    Sequential model = Models.convnet(3, 32, 10);
    Generator gen = new Generator(7);
    randomStats(model, gen);
    model.eval();
    Map<String, double[]> before = snapshot(model);
    Sequential fused = Fuse.fuse(model);
    Tensor x = Tensor.randn(gen, 4, 3, 32, 32);
    try (Grad ignored = Grad.off()) {
      assertRelClose(model.call(x), fused.call(x), 1e-5);
    }
    assertRelClose(model.call(x), fused.call(x), 1e-5); // with the tape too
    assertSameState(before, model);
    assertEquals(model.size(), fused.size());
    Class<?>[] kinds = {ConvReLU2d.class, Identity.class, Identity.class, ConvReLU2d.class, Identity.class,
        Identity.class, MaxPool2d.class, ConvReLU2d.class, Identity.class, Identity.class, ConvReLU2d.class,
        Identity.class, Identity.class, MaxPool2d.class, Flatten.class, LinearReLU.class, Identity.class, Linear.class};
    for (int i = 0; i < kinds.length; i++) assertInstanceOf(kinds[i], fused.get(i), "position " + i);
    assertEquals(List.of("0.0.weight", "0.0.bias", "3.0.weight", "3.0.bias", "7.0.weight", "7.0.bias", "10.0.weight",
        "10.0.bias", "15.0.weight", "15.0.bias", "17.weight", "17.bias"), List.copyOf(fused.stateDict().keySet()));
    // layers that are not folded are shared: the same parameters, not copies
    assertSame(model.get(15), ((LinearReLU) fused.get(15)).linear());
    assertSame(model.get(17), fused.get(17));
    assertTrue(!fused.isTraining());
  }

  @Test
  void convBnFoldsGroupsStridesBiaslessLayersAndStringPadding() {
    Generator gen = new Generator(11);
    Conv2d grouped = new Conv2d(4, 6, new int[] {3, 3}, new int[] {2, 2}, new int[] {1, 1}, new int[] {1, 1}, 2, false,
        "zeros", gen);
    Conv2d same = new Conv2d(4, 6, new int[] {3, 2}, new int[] {1, 1}, "same", new int[] {2, 1}, 1, true, "reflect",
        gen);
    Tensor x = Tensor.randn(gen, 2, 4, 9, 8);
    for (Conv2d conv : new Conv2d[] {grouped, same}) {
      BatchNorm2d bn = new BatchNorm2d(6);
      randomStats(bn, gen);
      conv.eval();
      bn.eval();
      Conv2d fused = Fuse.convBn(conv, bn);
      assertTrue(fused.bias() != null);
      assertEquals(conv.toString().replace(", bias=False", ""), fused.toString());
      assertRelClose(bn.call(conv.call(x)), fused.call(x), 1e-5);
    }
  }

  @Test
  void float64FoldIsExactToRounding() {
    Generator gen = new Generator(5);
    Conv2d conv = new Conv2d(3, 5, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1, true,
        "zeros", gen);
    conv.to(DType.F64);
    BatchNorm2d bn = new BatchNorm2d(5, 1e-3, 0.1, false, true); // no affine: gamma 1, beta 0
    randomStats(bn, gen);
    bn.to(DType.F64);
    conv.eval();
    bn.eval();
    Conv2d fused = Fuse.convBn(conv, bn);
    assertEquals(DType.F64, fused.weight().dtype());
    Tensor x = Tensor.randn(gen, DType.F64, 2, 3, 6, 6);
    assertRelClose(bn.call(conv.call(x)), fused.call(x), 1e-12);
  }

  @Test
  void linearBnAndLinearBnReluRuns() {
    Generator gen = new Generator(9);
    Linear lin = new Linear(12, 7, false, gen);
    BatchNorm1d bn = new BatchNorm1d(7);
    randomStats(bn, gen);
    Sequential model = new Sequential(new Flatten(), lin, bn, new ReLU(), new Linear(7, 3, true, gen));
    model.eval();
    Tensor x = Tensor.randn(gen, 5, 3, 4);
    Linear folded = Fuse.linearBn(lin, bn);
    Tensor flat = x.reshape(5, 12);
    assertRelClose(bn.call(lin.call(flat)), folded.call(flat), 1e-5);
    Sequential fused = Fuse.fuse(model);
    assertInstanceOf(LinearReLU.class, fused.get(1));
    assertRelClose(model.call(x), fused.call(x), 1e-5);
  }

  @Test
  void nestedSequentialsAreFused() {
    Generator gen = new Generator(2);
    BatchNorm2d bn = new BatchNorm2d(4);
    randomStats(bn, gen);
    Sequential features = new Sequential(new Conv2d(2, 4, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1},
        new int[] {1, 1}, 1, true, "zeros", gen), bn, new ReLU(), new MaxPool2d(2));
    Sequential model = new Sequential(features, new Flatten(), new Linear(64, 3, true, gen));
    model.eval();
    Sequential fused = Fuse.fuse(model);
    assertNotSame(features, fused.get(0));
    assertInstanceOf(ConvReLU2d.class, ((Sequential) fused.get(0)).get(0));
    Tensor x = Tensor.randn(gen, 3, 2, 8, 8);
    assertRelClose(model.call(x), fused.call(x), 1e-5);
  }

  @Test
  void convReluFusedIsBitwiseConvThenReluAndKeepsGradients() {
    Generator gen = new Generator(4);
    Conv2d conv = new Conv2d(3, 8, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1, true,
        "zeros", gen);
    ConvReLU2d fused = new ConvReLU2d(conv);
    Tensor x = Tensor.randn(gen, 2, 3, 10, 10);
    try (Grad ignored = Grad.off()) {
      assertArrayEquals(conv.call(x).relu().toFloatArray(), fused.call(x).toFloatArray());
    }
    conv.call(x).relu().sum().backward();
    float[] expected = conv.weight().grad().toFloatArray();
    conv.zeroGrad(true);
    fused.call(x).sum().backward();
    assertArrayEquals(expected, conv.weight().grad().toFloatArray());

    Linear lin = new Linear(6, 5, true, gen);
    LinearReLU lr = new LinearReLU(lin);
    Tensor v = Tensor.randn(gen, 4, 6);
    try (Grad ignored = Grad.off()) {
      assertArrayEquals(lin.call(v).relu().toFloatArray(), lr.call(v).toFloatArray());
    }
  }

  /**
   * The fused epilogue on every CPU convolution path (implicit GEMM, direct, blocked GEMM, depthwise, per-image
   * GEMM for groups and F64, and "same" padding whose implicit tiles go through scratch), bitwise against conv2d
   * then relu without the tape (float arrays compare -0 and +0 as different), including a channel of exact zeros.
   */
  @Test
  void fusedConvReluIsBitwiseConvThenReluOnEveryPath() {
    Generator gen = new Generator(21);
    record Case(String what, int cin, int cout, int k, int stride, int groups, int size, DType dt, String pad) {}
    List<Case> cases = List.of(
        new Case("implicit", 8, 16, 3, 1, 1, 12, DType.F32, null),
        new Case("implicit, part tile, scratch", 6, 10, 3, 1, 1, 7, DType.F32, null),
        new Case("implicit, same padding, even kernel", 8, 8, 2, 1, 1, 9, DType.F32, "same"),
        new Case("direct", 3, 6, 5, 1, 1, 14, DType.F32, null),
        new Case("blocked gemm", 5, 12, 3, 2, 1, 11, DType.F32, null),
        new Case("depthwise", 6, 12, 3, 1, 6, 10, DType.F32, null),
        new Case("depthwise strided", 4, 4, 3, 2, 4, 9, DType.F32, null),
        new Case("grouped", 4, 6, 3, 1, 2, 8, DType.F32, null),
        new Case("float64", 3, 5, 3, 1, 1, 8, DType.F64, null),
        new Case("bfloat16", 8, 16, 3, 1, 1, 8, DType.BF16, null));
    for (Case c : cases) {
      int[] two = {c.k(), c.k()};
      Conv2d conv = c.pad() != null
          ? new Conv2d(c.cin(), c.cout(), two, new int[] {1, 1}, c.pad(), new int[] {1, 1}, c.groups(), true, "zeros",
              gen)
          : new Conv2d(c.cin(), c.cout(), two, new int[] {c.stride(), c.stride()}, new int[] {1, 1}, new int[] {1, 1},
              c.groups(), true, "zeros", gen);
      try (Grad ignored = Grad.off()) {
        conv.weight().select(0, 0).zero_(); // channel 0: -0 bias plus zero products, signed zeros for relu to clear
        conv.bias().select(0, 0).fill_(-0.0);
      }
      conv.to(c.dt());
      ConvReLU2d fused = new ConvReLU2d(conv);
      Tensor x = Tensor.randn(gen, 3, c.cin(), c.size(), c.size()).to(c.dt());
      try (Grad ignored = Grad.off()) {
        Tensor expected = conv.call(x).relu();
        Tensor actual = fused.call(x);
        assertEquals(c.dt(), actual.dtype(), c.what());
        assertArrayEquals(expected.to(DType.F64).toDoubleArray(), actual.to(DType.F64).toDoubleArray(), c.what());
        if (c.dt() == DType.F32) assertArrayEquals(expected.toFloatArray(), actual.toFloatArray(), c.what());
      }
    }
  }

  @Test
  void trainingModeAndUnfoldableBatchNormsAreRefused() {
    Sequential model = Models.convnet(1, 8, 2);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> Fuse.fuse(model));
    assertTrue(e.getMessage().startsWith("Fuse.fuse: the model is in training mode"), e.getMessage());
    Conv2d conv = new Conv2d(2, 3, 1);
    BatchNorm2d bn = new BatchNorm2d(3);
    conv.eval();
    e = assertThrows(IllegalStateException.class, () -> Fuse.convBn(conv, bn));
    assertTrue(e.getMessage().contains("BatchNorm2d is training"), e.getMessage());
    bn.eval();
    BatchNorm2d noStats = new BatchNorm2d(3, 1e-5, 0.1, true, false);
    noStats.eval();
    IllegalArgumentException a = assertThrows(IllegalArgumentException.class, () -> Fuse.convBn(conv, noStats));
    assertTrue(a.getMessage().contains("does not track running statistics"), a.getMessage());
    BatchNorm2d wide = new BatchNorm2d(4);
    wide.eval();
    assertEquals("Fuse.convBn: BatchNorm2d has 4 features but the Conv2d has 3 output channels: conv="
        + conv + ", bn=" + wide, assertThrows(IllegalArgumentException.class, () -> Fuse.convBn(conv, wide)).getMessage());
    Linear lin = new Linear(2, 3);
    lin.eval();
    BatchNorm1d bn1 = new BatchNorm1d(5);
    bn1.eval();
    assertThrows(IllegalArgumentException.class, () -> Fuse.linearBn(lin, bn1));
  }
}
