package dev.ember.nn.prune;

import static dev.ember.testing.Assertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.BatchNorm1d;
import dev.ember.nn.BatchNorm2d;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Flatten;
import dev.ember.nn.LayerNorm;
import dev.ember.nn.Linear;
import dev.ember.nn.MaxPool2d;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

class ShrinkTest {
  /** Conv(2->4) + BN + ReLU + pool + Flatten + Linear(16->5) + ReLU + Linear(5->3), with trained BN statistics. */
  static Sequential convNet() {
    Generator g = new Generator(21);
    Sequential net = new Sequential(
        new Conv2d(2, 4, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1, true, "zeros", g),
        new BatchNorm2d(4), new ReLU(), new MaxPool2d(2), new Flatten(), new Linear(16, 5, true, g), new ReLU(),
        new Linear(5, 3, true, g));
    try (Grad ignored = Grad.off()) {
      net.train();
      for (int i = 0; i < 3; i++) net.forward(Tensor.randn(new Generator(30 + i), DType.F32, 6, 2, 4, 4).mul(2).add(1));
      Module bn = net.get(1);
      bn.param("weight").copy_(Tensor.of(new float[] {1.5f, 0.5f, -1f, 2f}, 4));
      bn.param("bias").copy_(Tensor.of(new float[] {0.1f, -0.2f, 0.3f, 0.4f}, 4));
    }
    return (Sequential) net.eval();
  }

  static Tensor prefix(Sequential net, int layers, Tensor x) {
    for (int i = 0; i < layers; i++) x = net.get(i).call(x);
    return x;
  }

  /** Zeroes the inputs of {@code lin} that come from the dropped channels, so they do not count downstream. */
  static void zeroColumns(Linear lin, int channels, int[] dropped) {
    int block = lin.inFeatures() / channels;
    float[] w = lin.weight().toFloatArray();
    for (int o = 0; o < lin.outFeatures(); o++) {
      for (int c : dropped) for (int j = 0; j < block; j++) w[o * lin.inFeatures() + c * block + j] = 0;
    }
    try (Grad ignored = Grad.off()) {
      lin.weight().copy_(Tensor.of(w, lin.outFeatures(), lin.inFeatures()));
    }
  }

  @Test
  void shrinksConvChannelsThroughBatchNormAndFlatten() {
    Sequential net = convNet();
    Tensor x = Tensor.randn(new Generator(40), DType.F32, 3, 2, 4, 4);
    int[] keep = {0, 2};
    Sequential small = Prune.shrinkOutputs(net, 0, keep);

    Conv2d conv = (Conv2d) small.get(0);
    assertEquals(2, conv.outChannels());
    assertEquals(2, ((BatchNorm2d) small.get(1)).numFeatures());
    assertEquals(8, ((Linear) small.get(5)).inFeatures());
    assertSame(net.get(7), small.get(7));
    assertArrayEquals(new int[] {1, 1}, conv.padding());
    // the kept channels are computed exactly as before, through conv, BN (eval), ReLU and pooling
    Tensor keptIdx = Tensor.of(new long[] {0, 2}, 2);
    try (Grad ignored = Grad.off()) {
      assertClose(prefix(net, 4, x).indexSelect(1, keptIdx), prefix(small, 4, x), 0, 0, "kept channels");
    }
    // with the dropped channels' columns zeroed in the original, the whole model's outputs are equal
    zeroColumns((Linear) net.get(5), 4, new int[] {1, 3});
    Sequential small2 = Prune.shrinkOutputs(net, 0, keep);
    try (Grad ignored = Grad.off()) {
      assertClose(net.forward(x), small2.forward(x), 1e-6, 1e-5, "shrunk model");
    }
    assertTrue(small2.numParameters(false) < net.numParameters(false));
    assertEquals(false, small2.isTraining());
  }

  @Test
  void shrinksLinearOutputsThroughBatchNorm1d() {
    Generator g = new Generator(5);
    Sequential net = new Sequential(new Linear(4, 6, true, g), new BatchNorm1d(6), new ReLU(), new Linear(6, 3, true, g));
    net.eval();
    int[] keep = {1, 3, 4};
    zeroColumns((Linear) net.get(3), 6, new int[] {0, 2, 5});
    Sequential small = Prune.shrinkOutputs(net, 0, keep);
    assertEquals(3, ((Linear) small.get(0)).outFeatures());
    assertEquals(3, ((Linear) small.get(3)).inFeatures());
    Tensor x = Tensor.randn(new Generator(6), DType.F32, 5, 4);
    try (Grad ignored = Grad.off()) {
      assertClose(net.forward(x), small.forward(x), 1e-6, 1e-5, "shrunk MLP");
    }
    // the shrunk model trains: its parameters are fresh leaves
    small.train();
    small.forward(x).sum().backward();
    assertEquals(3 * 4, small.get(0).param("weight").grad().numel());
  }

  @Test
  void structuredPruningThenShrinking() {
    Sequential net = convNet();
    Prune.lnStructured(net.get(0), "weight", 0.5, 2, 0);
    int[] keep = Prune.keptOutputs(net.get(0));
    assertEquals(2, keep.length);
    Sequential small = Prune.shrinkOutputs(net, 0, keep);
    Tensor x = Tensor.randn(new Generator(41), DType.F32, 2, 2, 4, 4);
    Tensor idx = Tensor.of(new long[] {keep[0], keep[1]}, 2);
    try (Grad ignored = Grad.off()) {
      assertClose(prefix(net, 1, x).indexSelect(1, idx), prefix(small, 1, x), 1e-6, 1e-6, "pruned then shrunk conv");
    }
    // the rebuilt layer is a plain layer again
    assertTrue(!Prune.isPruned(small.get(0)));
  }

  @Test
  void shrinkStructuredIsPruneRemoveAndShrinkInOneCall() {
    Generator.manualSeed(4);
    Module manual = dev.ember.nn.Models.lenet5(10).eval();
    Generator.manualSeed(4);
    Module oneCall = dev.ember.nn.Models.lenet5(10).eval();
    for (String name : new String[] {"features.0", "features.3", "classifier.1"}) {
      Module layer = manual.namedModules().get(name);
      Prune.lnStructured(layer, "weight", 0.5, 1, 0);
      int[] keep = Prune.keptOutputs(layer);
      Prune.remove(layer, "weight");
      Prune.shrinkOutputs(manual, name, keep);
      assertSame(oneCall, Prune.shrinkStructured(oneCall, name, 0.5, 1));
    }
    assertEquals(manual.numParameters(false), oneCall.numParameters(false));
    assertEquals(3, ((Conv2d) oneCall.namedModules().get("features.0")).outChannels());
    Tensor x = Tensor.randn(new Generator(51), DType.F32, 2, 1, 28, 28);
    try (Grad ignored = Grad.off()) {
      assertClose(manual.forward(x), oneCall.forward(x), 0, 0, "the same model both ways");
    }
    var e = assertThrows(IllegalArgumentException.class, () -> Prune.shrinkStructured(oneCall, "features.9", 0.5, 1));
    assertTrue(e.getMessage().startsWith("shrinkStructured: LeNet5 has no layer 'features.9'; has [features.0, "),
        e.getMessage());
  }

  @Test
  void shrinksLeNetAcrossItsContainersInPlace() {
    Generator.manualSeed(3);
    Module lenet = dev.ember.nn.Models.lenet5(10).eval();
    int[] keep = {0, 2, 3, 5, 8, 9, 12, 15};
    int[] dropped = {1, 4, 6, 7, 10, 11, 13, 14};
    Linear fc1 = (Linear) lenet.namedModules().get("classifier.1");
    zeroColumns(fc1, 16, dropped);
    Tensor x = Tensor.randn(new Generator(50), DType.F32, 4, 1, 28, 28);
    Tensor before;
    try (Grad ignored = Grad.off()) {
      before = lenet.forward(x);
    }
    long params = lenet.numParameters(false);
    assertSame(lenet, Prune.shrinkOutputs(lenet, "features.3", keep));
    assertEquals(8, ((Conv2d) lenet.namedModules().get("features.3")).outChannels());
    assertEquals(200, ((Linear) lenet.namedModules().get("classifier.1")).inFeatures());
    assertEquals(params - 8 * (6 * 25 + 1) - 8 * 25 * 120, lenet.numParameters(false));
    try (Grad ignored = Grad.off()) {
      assertClose(before, lenet.forward(x), 1e-6, 1e-5, "shrunk LeNet-5");
    }
    var e = assertThrows(IllegalArgumentException.class, () -> Prune.shrinkOutputs(lenet, "features.9", keep));
    assertTrue(e.getMessage().startsWith("shrinkOutputs: LeNet5 has no layer 'features.9'; has [features.0, "),
        e.getMessage());
  }

  @Test
  void badShrinksNameTheLayer() {
    Sequential withNorm = new Sequential(new Linear(4, 6), new LayerNorm(6), new Linear(6, 2));
    var e = assertThrows(IllegalArgumentException.class, () -> Prune.shrinkOutputs(withNorm, 0, new int[] {0, 1}));
    assertTrue(e.getMessage().startsWith("shrinkOutputs: cannot carry the removal of outputs of layer 0 through layer 1 "
        + "(LayerNorm)"), e.getMessage());
    Sequential mlp = new Sequential(new Linear(4, 6), new ReLU(), new Linear(6, 2));
    e = assertThrows(IllegalArgumentException.class, () -> Prune.shrinkOutputs(mlp, 0, new int[] {3, 1}));
    assertEquals("shrinkOutputs: keep must be increasing indices in [0, 6) for layer 0 (Linear), got [3, 1]",
        e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Prune.shrinkOutputs(mlp, 0, new int[] {6}));
    assertEquals("shrinkOutputs: keep must be increasing indices in [0, 6) for layer 0 (Linear), got [6]",
        e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Prune.shrinkOutputs(mlp, 1, new int[] {0}));
    assertEquals("shrinkOutputs: layer 1 must be a Linear or a Conv2d with groups=1, got ReLU()", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Prune.shrinkOutputs(mlp, 3, new int[] {0}));
    assertEquals("shrinkOutputs: layer index 3 out of range for a Sequential of 3 layers", e.getMessage());
  }
}
