package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.init.Init;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Norm, dropout and embedding modules: reprs, state dict layout, modes, errors and float64 gradchecks. */
class NormDropoutEmbeddingModulesTest {
  private static Tensor randn(Generator g, int... shape) {
    return Tensor.randn(g, DType.F64, shape);
  }

  /** The module in float64 with every parameter moved off its initial value. */
  private static <M extends Module> M f64Perturbed(M m, Generator g) {
    m.to(DType.F64);
    try (Grad ignored = Grad.off()) {
      for (Tensor p : m.parameters()) p.add_(randn(g, p.shape()).mul(0.3));
    }
    return m;
  }

  private static List<Tensor> with(Tensor x, Module m) {
    List<Tensor> in = new ArrayList<>(List.of(x));
    in.addAll(m.parameters());
    return in;
  }

  @Test
  void pythonFloatRepr() {
    assertEquals("1e-05", Reprs.fmt(1e-5));
    assertEquals("0.0001", Reprs.fmt(1e-4));
    assertEquals("0.001", Reprs.fmt(0.001));
    assertEquals("1.5e-07", Reprs.fmt(1.5e-7));
    assertEquals("0.1", Reprs.fmt(0.1));
    assertEquals("2.0", Reprs.fmt(2.0));
    assertEquals("123.456", Reprs.fmt(123.456));
    assertEquals("1000000000000000.0", Reprs.fmt(1e15));
    assertEquals("1e+16", Reprs.fmt(1e16));
    assertEquals("-0.5", Reprs.fmt(-0.5));
    assertEquals("inf", Reprs.fmt(Double.POSITIVE_INFINITY));
    assertEquals("None", Reprs.fmt((Double) null));
  }

  @Test
  void reprsMatchPyTorch() {
    // strings printed by PyTorch 1.13 (print(module)); RMSNorm's by PyTorch 2.4
    assertEquals("BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)",
        new BatchNorm1d(4).toString());
    assertEquals("BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)",
        new BatchNorm2d(16).toString());
    assertEquals("BatchNorm2d(16, eps=1e-05, momentum=None, affine=False, track_running_stats=False)",
        new BatchNorm2d(16, 1e-5, null, false, false).toString());
    assertEquals("BatchNorm1d(4, eps=0.001, momentum=0.01, affine=True, track_running_stats=True)",
        new BatchNorm1d(4, 1e-3, 0.01, true, true).toString());
    assertEquals("LayerNorm((64,), eps=1e-05, elementwise_affine=True)", new LayerNorm(64).toString());
    assertEquals("LayerNorm((3, 4), eps=1e-05, elementwise_affine=False)",
        new LayerNorm(new int[] {3, 4}, 1e-5, false, true).toString());
    assertEquals("GroupNorm(2, 4, eps=1e-05, affine=True)", new GroupNorm(2, 4).toString());
    assertEquals("GroupNorm(2, 4, eps=1e-05, affine=False)", new GroupNorm(2, 4, 1e-5, false).toString());
    assertEquals("RMSNorm((8,), eps=None, elementwise_affine=True)", new RMSNorm(8).toString());
    assertEquals("RMSNorm((4, 8), eps=1e-06, elementwise_affine=False)",
        new RMSNorm(new int[] {4, 8}, 1e-6, false).toString());
    assertEquals("Dropout(p=0.5, inplace=False)", new Dropout().toString());
    assertEquals("Dropout2d(p=0.2, inplace=False)", new Dropout2d(0.2).toString());
    assertEquals("Embedding(10, 3, padding_idx=0)", new Embedding(10, 3, 0).toString());
    assertEquals("Embedding(10, 3, padding_idx=9)", new Embedding(10, 3, -1).toString());
    assertEquals("Embedding(10, 3, max_norm=1.0)", new Embedding(10, 3, null, 1.0, 2.0, new Generator(1)).toString());
    assertEquals("Embedding(10, 3, max_norm=1.0, norm_type=1.0)",
        new Embedding(10, 3, null, 1.0, 1.0, new Generator(1)).toString());
  }

  @Test
  void stateDictKeysInPyTorchsOrder() {
    // list(m.state_dict().keys()) in PyTorch
    assertEquals(List.of("weight", "bias", "running_mean", "running_var", "num_batches_tracked"),
        List.copyOf(new BatchNorm2d(3).stateDict().keySet()));
    assertEquals(List.of("running_mean", "running_var", "num_batches_tracked"),
        List.copyOf(new BatchNorm1d(3, 1e-5, 0.1, false, true).stateDict().keySet()));
    assertEquals(List.of(), List.copyOf(new BatchNorm1d(3, 1e-5, 0.1, false, false).stateDict().keySet()));
    assertEquals(List.of("weight", "bias"), List.copyOf(new LayerNorm(4).stateDict().keySet()));
    assertEquals(List.of("weight"), List.copyOf(new LayerNorm(new int[] {4}, 1e-5, true, false).stateDict().keySet()));
    assertEquals(List.of("weight"), List.copyOf(new RMSNorm(4).stateDict().keySet()));
    assertEquals(List.of("weight", "bias"), List.copyOf(new GroupNorm(2, 4).stateDict().keySet()));
    assertEquals(List.of("weight"), List.copyOf(new Embedding(5, 2).stateDict().keySet()));
    assertEquals(List.of(), List.copyOf(new Dropout().stateDict().keySet()));
    BatchNorm1d bn = new BatchNorm1d(3);
    assertEquals(DType.I64, bn.stateDict().get("num_batches_tracked").dtype());
    assertArrayEquals(new int[0], bn.stateDict().get("num_batches_tracked").shape());
    assertEquals(List.of("weight", "bias"), List.copyOf(bn.namedParameters().keySet()));
  }

  @Test
  void batchNormModesAndRunningStats() {
    Generator g = new Generator(5);
    BatchNorm1d bn = new BatchNorm1d(3);
    Tensor x = Tensor.randn(g, 8, 3).mul(2).add(1);
    bn.forward(x);
    assertEquals(1, bn.numBatchesTracked());
    double[] mean = x.mean(0, false).toDoubleArray();
    double[] rm = bn.runningMean().toDoubleArray();
    for (int c = 0; c < 3; c++) assertEquals(0.1 * mean[c], rm[c], 1e-6);
    // eval normalizes with the running statistics and leaves them alone
    bn.eval();
    Tensor y = bn.forward(x);
    double[] rv = bn.runningVar().toDoubleArray();
    assertEquals((x.getDouble(0, 1) - rm[1]) / Math.sqrt(rv[1] + 1e-5), y.getDouble(0, 1), 1e-5);
    assertEquals(1, bn.numBatchesTracked());
    bn.resetRunningStats();
    assertEquals(0, bn.numBatchesTracked());
    assertEquals(3.0, bn.runningVar().sum().item());
    // without running statistics, eval still uses the batch's
    BatchNorm1d nt = new BatchNorm1d(3, 1e-5, 0.1, false, false);
    nt.eval();
    assertEquals(0.0, nt.forward(x).mean(0, false).abs().max().item(), 1e-6);
    assertNull(nt.runningMean());
    // float64 conversion keeps the counter an integer
    bn.to(DType.F64);
    assertEquals(DType.F64, bn.runningMean().dtype());
    assertEquals(DType.I64, bn.buffer("num_batches_tracked").dtype());
  }

  @Test
  void batchNormErrors() {
    assertEquals("BatchNorm1d: expected 2-d or 3-d input (got 4-d input): input=[2, 3, 4, 5]",
        assertThrows(IllegalArgumentException.class, () -> new BatchNorm1d(3).forward(Tensor.zeros(2, 3, 4, 5)))
            .getMessage());
    assertEquals("BatchNorm2d: expected 4-d input (got 3-d input): input=[2, 3, 4]",
        assertThrows(IllegalArgumentException.class, () -> new BatchNorm2d(3).forward(Tensor.zeros(2, 3, 4)))
            .getMessage());
    assertEquals("BatchNorm2d: expected 3 channels in dimension 1, got 4: input=[2, 4, 5, 5]",
        assertThrows(IllegalArgumentException.class, () -> new BatchNorm2d(3).forward(Tensor.zeros(2, 4, 5, 5)))
            .getMessage());
    assertEquals("batch_norm: expected more than 1 value per channel when training (got 1): input=[1, 4]",
        assertThrows(IllegalArgumentException.class, () -> new BatchNorm1d(4).forward(Tensor.zeros(1, 4)))
            .getMessage());
    assertEquals("BatchNorm1d: momentum must be in [0, 1] or null, got 1.5",
        assertThrows(IllegalArgumentException.class, () -> new BatchNorm1d(4, 1e-5, 1.5, true, true)).getMessage());
    assertEquals("GroupNorm: num_channels must be divisible by num_groups, got num_groups=4, num_channels=6",
        assertThrows(IllegalArgumentException.class, () -> new GroupNorm(4, 6)).getMessage());
    assertEquals("Embedding: padding_idx must be within num_embeddings (10, num_embeddings 10)",
        assertThrows(IllegalArgumentException.class, () -> new Embedding(10, 3, 10)).getMessage());
    assertEquals("Dropout: dropout probability has to be between 0 and 1, but got 1.5",
        assertThrows(IllegalArgumentException.class, () -> new Dropout(1.5)).getMessage());
  }

  @Test
  void batchNormGradcheckTrainAndEval() {
    Generator g = new Generator(7);
    for (boolean cma : new boolean[] {false, true}) {
      BatchNorm2d bn = f64Perturbed(new BatchNorm2d(3, 1e-5, cma ? null : 0.1, true, true), g);
      Tensor x = randn(g, 2, 3, 2, 3).requiresGrad(true);
      GradCheck.check("BatchNorm2d train", in -> bn.forward(in.get(0)), with(x, bn));
      bn.eval();
      GradCheck.check("BatchNorm2d eval", in -> bn.forward(in.get(0)), with(x, bn));
    }
    BatchNorm1d bn1 = f64Perturbed(new BatchNorm1d(4), g);
    Tensor x1 = randn(g, 3, 4, 2).requiresGrad(true);
    GradCheck.check("BatchNorm1d train 3-d", in -> bn1.forward(in.get(0)), with(x1, bn1));
  }

  @Test
  void layerGroupRmsNormGradcheck() {
    Generator g = new Generator(8);
    LayerNorm ln = f64Perturbed(new LayerNorm(new int[] {2, 3}), g);
    GradCheck.check("LayerNorm", in -> ln.forward(in.get(0)), with(randn(g, 4, 2, 3).requiresGrad(true), ln));
    LayerNorm lnb = f64Perturbed(new LayerNorm(new int[] {5}, 1e-5, true, false), g);
    GradCheck.check("LayerNorm bias=False", in -> lnb.forward(in.get(0)), with(randn(g, 3, 5).requiresGrad(true), lnb));
    GroupNorm gn = f64Perturbed(new GroupNorm(2, 4), g);
    GradCheck.check("GroupNorm", in -> gn.forward(in.get(0)), with(randn(g, 2, 4, 3).requiresGrad(true), gn));
    RMSNorm rms = f64Perturbed(new RMSNorm(new int[] {6}, null, true), g);
    GradCheck.check("RMSNorm", in -> rms.forward(in.get(0)), with(randn(g, 3, 6).requiresGrad(true), rms));
  }

  @Test
  void dropoutTrainVersusEval() {
    Tensor x = Tensor.ones(40, 50);
    Dropout d = new Dropout(0.5, new Generator(3));
    double[] y = d.forward(x).toDoubleArray();
    int zeros = 0;
    for (double v : y) {
      assertTrue(v == 0 || v == 2, "dropped or scaled by 1 / (1 - p)");
      if (v == 0) zeros++;
    }
    assertTrue(zeros > 900 && zeros < 1100, "about half dropped, got " + zeros);
    d.eval();
    assertSame(x, d.forward(x), "eval is the identity");
    assertFalse(d.isTraining());

    Dropout2d d2 = new Dropout2d(0.5, new Generator(4));
    Tensor y2 = d2.forward(Tensor.ones(4, 6, 3, 3));
    int dropped = 0;
    for (int n = 0; n < 4; n++) {
      for (int c = 0; c < 6; c++) {
        double[] ch = y2.select(0, n).select(0, c).toDoubleArray();
        for (double v : ch) assertEquals(ch[0], v, "a whole channel is kept or dropped");
        if (ch[0] == 0) dropped++;
      }
    }
    assertTrue(dropped > 0 && dropped < 24);
    d2.eval();
    Tensor z = Tensor.ones(4, 6, 3, 3);
    assertSame(z, d2.forward(z));
  }

  @Test
  void embeddingInitAndFromPretrained() {
    Embedding e = new Embedding(1000, 8, 3, null, 2.0, new Generator(9));
    Tensor w = e.weight();
    assertArrayEquals(new double[8], w.select(0, 3).toDoubleArray(), "padding row zeroed");
    assertEquals(0.0, w.mean().item(), 0.03);
    assertEquals(1.0, w.square().mean().item(), 0.05);
    assertTrue(w.requiresGrad());
    Tensor y = e.forward(Tensor.of(new long[] {3, 5, 3}, 3));
    assertArrayEquals(w.select(0, 5).toDoubleArray(), y.select(0, 1).toDoubleArray());

    Tensor pre = Tensor.of(new double[] {1, 2, 3, 4, 5, 6}, 3, 2);
    Embedding frozen = Embedding.fromPretrained(pre);
    assertFalse(frozen.weight().requiresGrad());
    assertFalse(pre.requiresGrad(), "the caller's tensor keeps its flag");
    assertEquals("Embedding(3, 2)", frozen.toString());
    Embedding trainable = Embedding.fromPretrained(pre, false, 1);
    assertTrue(trainable.weight().requiresGrad());
    assertArrayEquals(new double[] {3, 4}, trainable.weight().select(0, 1).toDoubleArray(), "padding row kept as given");
    Tensor out = trainable.forward(Tensor.of(new long[] {1, 2}, 2));
    assertArrayEquals(new double[] {3, 4, 5, 6}, out.toDoubleArray());
    out.sum().backward();
    assertArrayEquals(new double[] {0, 0, 0, 0, 1, 1}, trainable.weight().grad().toDoubleArray());
    try (Grad ignored = Grad.off()) {
      pre.mul_(10);
    }
    assertEquals(60.0, frozen.weight().getDouble(2, 1), "the weight shares the given storage");
    assertEquals("Embedding.fromPretrained: embeddings must be 2-d [num_embeddings, embedding_dim]: weight=[6]",
        assertThrows(IllegalArgumentException.class, () -> Embedding.fromPretrained(Tensor.zeros(6))).getMessage());
  }

  @Test
  void embeddingGradcheck() {
    Generator g = new Generator(10);
    // no padding_idx: its row's zero gradient is by design, not the derivative
    Embedding e = new Embedding(6, 3, null, null, 2.0, g);
    e.to(DType.F64);
    Init.normal_(e.weight(), 0, 1, g);
    Tensor idx = Tensor.of(new long[] {0, 2, 5, 2, 0, 1}, 2, 3);
    GradCheck.check("Embedding", in -> e.forward(idx), List.of(e.weight()));
  }
}
