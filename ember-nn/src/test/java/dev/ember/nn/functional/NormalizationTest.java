package dev.ember.nn.functional;

import static dev.ember.testing.Assertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import dev.ember.testing.PoolChecks;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Normalization beyond the op table (NnOpTable holds the float64 gradchecks of every normalization):
 * pooled shapes against composed ops, double oracles for RMS norm's default eps and the momentum rule,
 * and the exact error messages. Values against PyTorch are in NormalizationFixtureTest.
 */
class NormalizationTest {
  private static final Generator GEN = new Generator(11);

  private static void assertError(String expected, Supplier<Tensor> call) {
    TensorArgumentException e = assertThrows(TensorArgumentException.class, call::get);
    assertEquals(expected, e.getMessage());
  }

  /**
   * Batch norm on shapes large enough for the pool: blocks of several images ([6, 8, 40, 40], 12,800 elements
   * an image), and images split into channel groups ([2, 20, 64, 64]). Output and gradients, float64 and
   * float32, against the same normalization composed of tensor ops in float64.
   */
  @Test
  void batchNormOnPooledShapesMatchesComposedOps() {
    for (int[] shape : new int[][] {{6, 8, 40, 40}, {2, 20, 64, 64}}) {
      int c = shape[1];
      Generator g = new Generator(5);
      Tensor x = Tensor.randn(g, DType.F64, shape).mul(2).add(0.5);
      Tensor w = Tensor.randn(g, DType.F64, c);
      Tensor b = Tensor.randn(g, DType.F64, c);
      Tensor up = Tensor.randn(g, DType.F64, shape);
      int[] dims = {0, 2, 3};
      Tensor xr = x.detach().requiresGrad(true);
      Tensor wr = w.detach().requiresGrad(true);
      Tensor br = b.detach().requiresGrad(true);
      Tensor centred = xr.sub(xr.mean(dims, true));
      Tensor ref = centred.mul(centred.square().mean(dims, true).add(1e-5).rsqrt())
          .mul(wr.view(1, c, 1, 1)).add(br.view(1, c, 1, 1));
      ref.mul(up).sum().backward();
      for (DType dt : new DType[] {DType.F64, DType.F32}) {
        double tol = dt == DType.F64 ? 1e-10 : 2e-4;
        Tensor xt = x.detach().to(dt).requiresGrad(true);
        Tensor wt = w.detach().to(dt).requiresGrad(true);
        Tensor bt = b.detach().to(dt).requiresGrad(true);
        Tensor y = Normalization.batchNorm(xt, null, null, wt, bt, true, 0.1, 1e-5);
        y.mul(up.to(dt)).sum().backward();
        String what = "batch_norm " + java.util.Arrays.toString(shape) + " " + dt;
        assertClose(ref.detach(), y.to(DType.F64), tol, tol, what + " output");
        assertClose(xr.grad(), xt.grad().to(DType.F64), tol, tol, what + " grad x");
        assertClose(wr.grad(), wt.grad().to(DType.F64), tol * 100, tol, what + " grad w");
        assertClose(br.grad(), bt.grad().to(DType.F64), tol * 100, tol, what + " grad b");
      }
    }
  }

  @Test
  void batchNormRunningStatsFollowMomentumAndStayOffTheTape() {
    Tensor x = Tensor.of(new double[] {1, 2, 3, 5}, 4, 1);
    Tensor rm = Tensor.zeros(DType.F64, 1);
    Tensor rv = Tensor.ones(DType.F64, 1);
    int before = rm.version();
    Tensor out = Normalization.batchNorm(x.requiresGrad(true), rm, rv, null, null, true, 0.25, 1e-5);
    // mean 2.75, unbiased var ((1.75^2 + 0.75^2 + 0.25^2 + 2.25^2) / 3) = 8.75 / 3
    assertEquals(0.75 * 0 + 0.25 * 2.75, rm.item(), 1e-15);
    assertEquals(0.75 * 1 + 0.25 * 8.75 / 3, rv.item(), 1e-15);
    assertTrue(rm.version() > before, "in-place update bumps the version");
    assertFalse(rm.requiresGrad());
    assertNull(rm.gradFn());
    // normalized with the biased variance 8.75 / 4
    assertEquals((1 - 2.75) / Math.sqrt(8.75 / 4 + 1e-5), out.getDouble(0, 0), 1e-12);
  }

  @Test
  void rmsNormDefaultEpsIsTheDtypesMachineEpsilon() {
    // an all-zero row is 0 * 1/sqrt(eps); a row of tiny values shows the eps actually used
    double v = 1e-4;
    double expected32 = v / Math.sqrt(v * v + Math.ulp(1.0f));
    double expected64 = v / Math.sqrt(v * v + Math.ulp(1.0));
    Tensor x64 = Tensor.full(v, DType.F64, 2, 3);
    assertEquals(expected64, Normalization.rmsNorm(x64, new int[] {3}, null, null).getDouble(1, 2), 1e-12);
    Tensor x32 = Tensor.full(v, DType.F32, 2, 3);
    assertEquals(expected32, Normalization.rmsNorm(x32, new int[] {3}, null, null).getDouble(0, 0), 1e-6);
  }

  @Test
  void float32MatchesFloat64() {
    Tensor x = Tensor.randn(GEN, DType.F64, 3, 4, 5);
    Tensor w = Tensor.randn(GEN, DType.F64, 4);
    Tensor b = Tensor.randn(GEN, DType.F64, 4);
    Tensor ref = Normalization.groupNorm(x, 2, w, b);
    assertClose(ref, Normalization.groupNorm(x.to(DType.F32), 2, w.to(DType.F32), b.to(DType.F32)), 1e-5, 1e-5,
        "group_norm f32");
    Tensor ref2 = Normalization.batchNorm(x, null, null, w, b, true);
    assertClose(ref2, Normalization.batchNorm(x.to(DType.F32), null, null, w.to(DType.F32), b.to(DType.F32), true),
        1e-5, 1e-5, "batch_norm f32");
  }

  /**
   * The float32 row kernels of layer, RMS and group norm (float vector sums, float partials of the weight and
   * bias gradients per block of rows) against the float64 path, output and every gradient: rows of many
   * blocks (3000 rows, 47 a block: the backward's sums of 32 rows, then of 15, each before their gradients), rows with a vector tail (m = 1030, 100), no affine parameters, and group
   * norm planes with tails and a single-element plane.
   */
  @Test
  void float32RowKernelsMatchFloat64() {
    checkF32AgainstF64("layer_norm [3000, 100]", new int[] {3000, 100}, 100,
        in -> Normalization.layerNorm(in[0], new int[] {100}, in[1], in[2]));
    checkF32AgainstF64("layer_norm [37, 1030]", new int[] {37, 1030}, 1030,
        in -> Normalization.layerNorm(in[0], new int[] {1030}, in[1], in[2]));
    checkF32AgainstF64("layer_norm no affine [33, 2, 48]", new int[] {33, 2, 48}, 0,
        in -> Normalization.layerNorm(in[0], new int[] {2, 48}, null, null));
    checkF32AgainstF64("rms_norm [300, 130]", new int[] {300, 130}, 130,
        in -> Normalization.rmsNorm(in[0], new int[] {130}, in[1], 1e-6));
    checkF32AgainstF64("rms_norm [3000, 40]", new int[] {3000, 40}, 40,
        in -> Normalization.rmsNorm(in[0], new int[] {40}, in[1], 1e-6));
    checkF32AgainstF64("group_norm [4, 12, 9, 11] 3 groups", new int[] {4, 12, 9, 11}, 12,
        in -> Normalization.groupNorm(in[0], 3, in[1], in[2]));
    checkF32AgainstF64("group_norm [40, 6, 1] 2 groups", new int[] {40, 6, 1}, 6,
        in -> Normalization.groupNorm(in[0], 2, in[1], in[2]));
    checkF32AgainstF64("group_norm no affine [3, 8, 70] 4 groups", new int[] {3, 8, 70}, 0,
        in -> Normalization.groupNorm(in[0], 4, null, null));
  }

  /**
   * Group norm's output and gradients against a layer norm over each (image, group) row followed by the per-channel
   * affine (another kernel path): 36 rows, so the backward's blocks of 16 rows (run last block first) include a
   * partial one; F64 and F32 (its fused next-row loop).
   */
  @Test
  void groupNormOverSeveralBlocksOfRowsMatchesLayerNormThenAffine() {
    Generator g = new Generator(31);
    int n = 9;
    int c = 8;
    int groups = 4;
    int s = 100;
    Tensor x = Tensor.randn(g, DType.F64, n, c, s).mul(2).add(0.5);
    Tensor up = Tensor.randn(g, DType.F64, n, c, s);
    Tensor w = Tensor.randn(g, DType.F64, c).mul(0.3).add(1);
    Tensor b = Tensor.randn(g, DType.F64, c);
    for (DType dt : new DType[] {DType.F64, DType.F32}) {
      Tensor[] got = groupNormAndGrads(x, up, w, b, dt, false, groups);
      Tensor[] ref = groupNormAndGrads(x, up, w, b, dt, true, groups);
      String[] names = {"output", "input gradient", "weight gradient", "bias gradient"};
      for (int i = 0; i < 4; i++) assertClose(ref[i], got[i], 1e-4, 1e-4, "group_norm " + dt + " " + names[i]);
    }
  }

  private static Tensor[] groupNormAndGrads(Tensor x, Tensor up, Tensor w, Tensor b, DType dt, boolean viaLayerNorm,
      int groups) {
    int[] shape = x.shape();
    int c = shape[1];
    Tensor xi = x.detach().to(dt).requiresGrad(true);
    Tensor wi = w.detach().to(dt).requiresGrad(true);
    Tensor bi = b.detach().to(dt).requiresGrad(true);
    Tensor out;
    if (viaLayerNorm) {
      int m = c / groups * shape[2];
      Tensor rows = Normalization.layerNorm(xi.reshape(shape[0] * groups, m), new int[] {m}, null, null);
      out = rows.reshape(shape).mul(wi.reshape(1, c, 1)).add(bi.reshape(1, c, 1));
    } else {
      out = Normalization.groupNorm(xi, groups, wi, bi);
    }
    out.mul(up.to(dt)).sum().backward();
    return new Tensor[] {out, xi.grad(), wi.grad(), bi.grad()};
  }

  private static void checkF32AgainstF64(String what, int[] shape, int params,
      java.util.function.Function<Tensor[], Tensor> op) {
    Generator g = new Generator(23);
    Tensor x = Tensor.randn(g, DType.F64, shape).mul(2).add(0.5);
    Tensor up = Tensor.randn(g, DType.F64, shape);
    Tensor w = params == 0 ? null : Tensor.randn(g, DType.F64, params).mul(0.3).add(1);
    Tensor b = params == 0 ? null : Tensor.randn(g, DType.F64, params);
    Tensor[][] grads = new Tensor[2][];
    Tensor[] outs = new Tensor[2];
    DType[] types = {DType.F64, DType.F32};
    for (int k = 0; k < 2; k++) {
      Tensor[] in = {x.detach().to(types[k]).requiresGrad(true),
          w == null ? null : w.detach().to(types[k]).requiresGrad(true),
          b == null ? null : b.detach().to(types[k]).requiresGrad(true)};
      outs[k] = op.apply(in);
      outs[k].mul(up.to(types[k])).sum().backward();
      grads[k] = new Tensor[] {in[0].grad(), in[1] == null ? null : in[1].grad(), in[2] == null ? null : in[2].grad()};
    }
    assertClose(outs[0], outs[1], 1e-4, 1e-5, what + " output");
    String[] names = {"input", "weight", "bias"};
    for (int i = 0; i < 3; i++) {
      if (grads[0][i] == null) continue;
      assertClose(grads[0][i], grads[1][i], 1e-4, 1e-4, what + " gradient of " + names[i]);
    }
  }

  @Test
  void badInputsNameTheProblemAndShapes() {
    assertError("batch_norm: weight must have shape [C] = [3]: input=[2, 3], weight=[4]",
        () -> Normalization.batchNorm(Tensor.zeros(2, 3), null, null, Tensor.ones(4), null, true));
    assertError("batch_norm: expected more than 1 value per channel when training (got 1): input=[1, 3]",
        () -> Normalization.batchNorm(Tensor.zeros(1, 3), null, null, null, null, true));
    assertError("batch_norm: eval mode needs running_mean and running_var: input=[2, 3];"
            + " hint: pass training=true to normalize with the batch statistics",
        () -> Normalization.batchNorm(Tensor.zeros(2, 3), null, null, null, null, false));
    assertError("layer_norm: the input's trailing dims must equal normalized_shape [4]: input=[2, 3]",
        () -> Normalization.layerNorm(Tensor.zeros(2, 3), new int[] {4}, null, null));
    assertError("group_norm: the number of channels must be divisible by num_groups (6 channels, 4 groups):"
        + " input=[2, 6, 3]", () -> Normalization.groupNorm(Tensor.zeros(2, 6, 3), 4, null, null));
    assertError("rms_norm: weight must have shape normalized_shape [3]: input=[2, 3], weight=[2]",
        () -> Normalization.rmsNorm(Tensor.zeros(2, 3), new int[] {3}, Tensor.ones(2), null));
  }

  /**
   * Every normalization takes an uninitialized output and input gradient (no zero-fill of a pooled
   * array), so its kernels must write every element: with the pool holding only NaN-filled arrays of
   * each length, a scoped forward and backward gives bitwise what an unscoped one gives.
   */
  @Test
  void normalizationsWriteEveryElementOfTheirUninitializedBuffers() {
    Supplier<float[][]> step = () -> {
      Generator g = new Generator(5);
      Tensor x = Tensor.randn(g, 2, 4, 3, 5).requiresGrad(true);
      Tensor w = Tensor.randn(g, 4).requiresGrad(true);
      Tensor b = Tensor.randn(g, 4).requiresGrad(true);
      Tensor lw = Tensor.randn(g, 5).requiresGrad(true);
      Tensor rm = Tensor.zeros(DType.F32, 4);
      Tensor rv = Tensor.ones(DType.F32, 4);
      Tensor train = Normalization.batchNorm(x, rm, rv, w, b, true);
      Tensor eval = Normalization.batchNorm(x, rm, rv, w, b, false);
      Tensor layer = Normalization.layerNorm(x, new int[] {5}, lw, null);
      Tensor rms = Normalization.rmsNorm(x, new int[] {5}, lw, null);
      Tensor group = Normalization.groupNorm(x, 2, w, b);
      Tensor mix = Tensor.randn(g, 2, 4, 3, 5);
      train.add(eval).add(layer).add(rms).add(group).mul(mix).sum().backward();
      return new float[][] {train.toFloatArray(), eval.toFloatArray(), layer.toFloatArray(), rms.toFloatArray(),
          group.toFloatArray(), x.grad().toFloatArray(), w.grad().toFloatArray(), lw.grad().toFloatArray()};
    };
    PoolChecks.assertEveryElementWritten(step, 4); // 24 NaN arrays of the inputs' length: 6 outputs have it
  }
}
