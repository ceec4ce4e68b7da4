package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.backend.cpu.Parallel;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The normalization kernels split fixed blocks of rows, or of images for batch norm, over the worker pool
 * (sums over the blocks as per-block partial sums added in block order): outputs and every
 * gradient must be bitwise the same on one and two threads. Sizes are above the kernels' serial
 * threshold so the pool is really used.
 */
class NormDeterminismTest {

  /** Runs forward + backward of {@code op} on fresh leaves; returns the output and all gradients as float arrays. */
  private static List<float[]> run(Function<Tensor[], Tensor> op, int[] xShape, int params) {
    Generator g = new Generator(7);
    Tensor x = Tensor.randn(g, xShape).mul(3).add(1).requiresGrad(true);
    Tensor[] in = new Tensor[1 + 2 * (params > 0 ? 1 : 0)];
    in[0] = x;
    if (params > 0) {
      in[1] = Tensor.randn(g, params).requiresGrad(true);
      in[2] = Tensor.randn(g, params).requiresGrad(true);
    }
    Tensor y = op.apply(in);
    Tensor up = Tensor.randn(g, y.shape());
    y.mul(up).sum().backward();
    List<float[]> out = new ArrayList<>();
    out.add(y.toFloatArray());
    for (Tensor t : in) {
      if (t.grad() != null) out.add(t.grad().toFloatArray());
    }
    return out;
  }

  private static void assertSameOnOneAndTwoThreads(String what, Function<Tensor[], Tensor> op, int[] xShape, int params) {
    int old = Parallel.threads();
    try {
      Parallel.setThreads(1);
      List<float[]> one = run(op, xShape, params);
      Parallel.setThreads(2);
      List<float[]> two = run(op, xShape, params);
      assertEquals(one.size(), two.size());
      for (int i = 0; i < one.size(); i++) {
        float[] a = one.get(i);
        float[] b = two.get(i);
        int[] ba = new int[a.length];
        int[] bb = new int[b.length];
        for (int j = 0; j < a.length; j++) {
          ba[j] = Float.floatToRawIntBits(a[j]);
          bb[j] = Float.floatToRawIntBits(b[j]);
        }
        assertArrayEquals(ba, bb, what + ": " + (i == 0 ? "output" : "gradient of input " + (i - 1)) + " differs");
      }
    } finally {
      Parallel.setThreads(old);
    }
  }

  @Test
  void layerNorm() {
    assertSameOnOneAndTwoThreads("layer_norm [1000, 96]",
        in -> Normalization.layerNorm(in[0], new int[] {96}, in[1], in[2], 1e-5), new int[] {1000, 96}, 96);
  }

  @Test
  void layerNormOnBlocksOfManyRows() {
    // 3000 rows of 24: 47 rows a block of the backward's weight and bias partials (at most 64 blocks)
    assertSameOnOneAndTwoThreads("layer_norm [3000, 24]",
        in -> Normalization.layerNorm(in[0], new int[] {24}, in[1], in[2], 1e-5), new int[] {3000, 24}, 24);
    assertSameOnOneAndTwoThreads("layer_norm [3000, 2, 13] no affine",
        in -> Normalization.layerNorm(in[0], new int[] {2, 13}, null, null, 1e-5), new int[] {3000, 2, 13}, 0);
  }

  @Test
  void batchNormTraining() {
    assertSameOnOneAndTwoThreads("batch_norm [8, 24, 18, 18]",
        in -> Normalization.batchNorm(in[0], null, null, in[1], in[2], true, 0.1, 1e-5), new int[] {8, 24, 18, 18}, 24);
    // blocks of 4 images: 4 + 4 + 2
    assertSameOnOneAndTwoThreads("batch_norm [10, 24, 18, 18]",
        in -> Normalization.batchNorm(in[0], null, null, in[1], in[2], true, 0.1, 1e-5), new int[] {10, 24, 18, 18}, 24);
    // images of more than 32K elements: each image's channels in groups (here of 8 planes of 64 x 64)
    assertSameOnOneAndTwoThreads("batch_norm [2, 20, 64, 64]",
        in -> Normalization.batchNorm(in[0], null, null, in[1], in[2], true, 0.1, 1e-5), new int[] {2, 20, 64, 64}, 20);
  }

  @Test
  void groupNorm() {
    assertSameOnOneAndTwoThreads("group_norm [8, 24, 18, 18] 6 groups",
        in -> Normalization.groupNorm(in[0], 6, in[1], in[2], 1e-5), new int[] {8, 24, 18, 18}, 24);
    assertSameOnOneAndTwoThreads("group_norm [8, 64, 33, 17] 32 groups",
        in -> Normalization.groupNorm(in[0], 32, in[1], in[2], 1e-5), new int[] {8, 64, 33, 17}, 64);
  }

  @Test
  void rmsNorm() {
    assertSameOnOneAndTwoThreads("rms_norm [1000, 96]",
        in -> Normalization.rmsNorm(in[0], new int[] {96}, in[1], 1e-6), new int[] {1000, 96}, 96);
  }
}
