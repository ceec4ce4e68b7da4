package dev.ember.backend.cpu.conv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.RowKernels;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The implicit GEMM's slot groups: a pass that leaves out, group by group, the taps that read only zero padding
 * gives bitwise the pass over every tap, on both tile widths; the forward over shifted planes gives bitwise the
 * padded pass; one backward pass gives the separate input- and weight-gradient passes bitwise; and the tile width
 * follows the channel count.
 */
class ImplicitConvTest {
  /** One image through implicitImage with the groups and without, compared bit for bit. */
  private static void groupedIsUngrouped(int inC, int h, int w, int pad, int k, int outC, boolean bias) {
    Random r = new Random(inC * 31 + outC);
    int pitch = w + 2 * pad;
    int oh = h + 2 * pad - k + 1;
    int ow = pitch - k + 1;
    int kdim = inC * k * k;
    float[] src = new float[3 + inC * h * w];
    for (int i = 0; i < src.length; i++) src[i] = (float) r.nextGaussian();
    float[] wf = new float[outC * kdim];
    for (int i = 0; i < wf.length; i++) wf[i] = (float) r.nextGaussian();
    int tile = ImplicitConv.tileFor(outC);
    float[] wp = ImplicitConv.packTiles(outC, tile, kdim, ImplicitConv.identity(kdim), wf);
    float[] init = null;
    if (bias) {
      init = new float[Math.ceilDiv(outC, tile) * tile];
      for (int i = 0; i < outC; i++) init[i] = (float) r.nextGaussian();
    }
    int[] offs = ImplicitConv.tapOffsets(inC, (h + 2 * pad) * pitch, pitch, k, k);
    ImplicitConv.Slots slots = ImplicitConv.slots(oh, ow, pitch);
    ImplicitConv.Group[] groups =
        ImplicitConv.groups(inC, h, w, pad, pad, k, k, slots, offs, tile == RowKernels.CONV_TILE6 ? 4 : 3);
    String what = inC + "x" + h + "x" + w + " pad " + pad + " k" + k + " -> " + outC;
    assertNotNull(groups, what + ": the corner slots should leave taps out");
    int fewest = kdim;
    for (ImplicitConv.Group g : groups) fewest = Math.min(fewest, g.taps().length);
    assertTrue(fewest < kdim, what + ": some group should leave taps out");
    float[] all = new float[outC * oh * ow];
    float[] grouped = new float[outC * oh * ow];
    ImplicitConv.implicitImage(src, 3, inC, h, w, pad, pad, k, k, ImplicitConv.Taps.of(tile, offs, wp, null), slots,
        outC, init, all, 0, false);
    ImplicitConv.implicitImage(src, 3, inC, h, w, pad, pad, k, k, ImplicitConv.Taps.of(tile, offs, wp, groups), slots,
        outC, init, grouped, 0, false);
    for (int i = 0; i < all.length; i++) {
      assertEquals(Float.floatToRawIntBits(all[i]), Float.floatToRawIntBits(grouped[i]), what + " at " + i);
    }
  }

  /** LeNet's second layer's input gradient (6-channel tiles), a padded forward on 8-channel tiles, a wide padding on 6-channel tiles with bias. */
  @Test
  void groupsLeaveOutOnlyTapsThatAddZero() {
    groupedIsUngrouped(16, 10, 10, 4, 5, 6, false);
    groupedIsUngrouped(8, 9, 9, 2, 5, 16, true);
    groupedIsUngrouped(5, 6, 6, 4, 5, 12, true);
  }

  /**
   * The forward over shifted planes (LeNet's second layer, 6- and 8-channel tiles, written in place or through
   * the scratch rows, padded) gives bitwise the padded pass, with the bias and the fused ReLU.
   */
  @Test
  void shiftedPlanesGiveThePaddedPassBitwise() {
    int[][] shapes = {{6, 14, 16, 5, 0}, {6, 14, 12, 5, 0}, {6, 14, 10, 5, 0}, {8, 9, 10, 5, 2}, {3, 7, 32, 3, 1}};
    for (int[] sh : shapes) {
      int c = sh[0], hw = sh[1], o = sh[2], k = sh[3], pad = sh[4], n = 3;
      int ohw = hw + 2 * pad - k + 1;
      ConvGeometry g = new ConvGeometry(hw, hw, k, k, 1, 1, pad, pad, 1, 1, ohw, ohw);
      Tensor x = Tensor.randn(new Generator(1), n, c, hw, hw);
      Tensor w = Tensor.randn(new Generator(2), o, c, k, k);
      double[] bias = Tensor.randn(new Generator(3), o).toDoubleArray();
      for (boolean relu : new boolean[] {false, true}) {
        Tensor out = Tensor.full(Float.NaN, n, o, ohw, ohw);
        ImplicitConv.forward(x, w, bias, out, g, relu);
        int kdim = c * k * k;
        int tile = ImplicitConv.tileFor(o);
        float[] wp = ImplicitConv.packTiles(o, tile, kdim, ImplicitConv.identity(kdim), w.toFloatArray());
        float[] init = new float[Math.ceilDiv(o, tile) * tile];
        for (int i = 0; i < o; i++) init[i] = (float) bias[i];
        int pitch = hw + 2 * pad;
        int[] offs = ImplicitConv.tapOffsets(c, pitch * pitch, pitch, k, k);
        float[] expected = new float[n * o * ohw * ohw];
        float[] xf = x.toFloatArray();
        for (int img = 0; img < n; img++) {
          ImplicitConv.implicitImage(xf, img * c * hw * hw, c, hw, hw, pad, pad, k, k,
              ImplicitConv.Taps.of(tile, offs, wp, null), ImplicitConv.slots(ohw, ohw, pitch), o, init, expected,
              img * o * ohw * ohw, relu);
        }
        float[] actual = out.toFloatArray();
        for (int i = 0; i < expected.length; i++) {
          assertEquals(Float.floatToRawIntBits(expected[i]), Float.floatToRawIntBits(actual[i]),
              java.util.Arrays.toString(sh) + " relu " + relu + " at " + i);
        }
      }
    }
  }

  /**
   * The input and weight gradients in one pass over the pool (each weight chunk's task followed by its images')
   * give bitwise the two passes run apart, on 1 and 2 threads: LeNet's second layer at 19 images (chunks of 3, the
   * last of one image) and a padded layer. The input is a view at an offset: the unpadded weight gradient reads it
   * in place and must give the bits of a copy at offset 0.
   */
  @Test
  void oneBackwardPassGivesTheSeparatePassesBitwise() {
    int[][] shapes = {{19, 6, 14, 16, 5, 0}, {5, 8, 9, 12, 3, 1}};
    int old = Parallel.threads();
    try {
      for (int[] sh : shapes) {
        int n = sh[0], c = sh[1], hw = sh[2], o = sh[3], k = sh[4], pad = sh[5];
        int ohw = hw + 2 * pad - k + 1;
        ConvGeometry g = new ConvGeometry(hw, hw, k, k, 1, 1, pad, pad, 1, 1, ohw, ohw);
        Tensor x = Tensor.randn(new Generator(4), n + 1, c, hw, hw).narrow(0, 1, n);
        Tensor w = Tensor.randn(new Generator(5), o, c, k, k);
        Tensor gOut = Tensor.randn(new Generator(6), n, o, ohw, ohw);
        Parallel.setThreads(1);
        Tensor dxApart = Tensor.full(Float.NaN, n, c, hw, hw);
        Tensor dwApart = Tensor.full(Float.NaN, o, c, k, k);
        ImplicitConv.inputGrad(w, gOut, dxApart, g);
        ImplicitConv.weightGrad(Tensor.of(x.toFloatArray(), n, c, hw, hw), gOut, dwApart, g); // a copy at offset 0
        for (int threads : new int[] {1, 2}) {
          Parallel.setThreads(threads);
          Tensor dx = Tensor.full(Float.NaN, n, c, hw, hw);
          Tensor dw = Tensor.full(Float.NaN, o, c, k, k);
          ImplicitConv.backward(x, w, gOut, dx, dw, g);
          String what = java.util.Arrays.toString(sh) + " on " + threads + " threads";
          assertBits(dxApart.toFloatArray(), dx.toFloatArray(), what + ": input gradient");
          assertBits(dwApart.toFloatArray(), dw.toFloatArray(), what + ": weight gradient");
        }
      }
    } finally {
      Parallel.setThreads(old);
    }
  }

  private static void assertBits(float[] expected, float[] actual, String what) {
    assertEquals(expected.length, actual.length, what);
    for (int i = 0; i < expected.length; i++) {
      assertEquals(Float.floatToRawIntBits(expected[i]), Float.floatToRawIntBits(actual[i]), what + " at " + i);
    }
  }

  @Test
  void unpaddedPassesHaveNoGroups() {
    int[] offs = ImplicitConv.tapOffsets(6, 14 * 14, 14, 5, 5);
    assertNull(ImplicitConv.groups(6, 14, 14, 0, 0, 5, 5, ImplicitConv.slots(10, 10, 14), offs, 3));
  }

  @Test
  void tilesOfSixWhereTheyPadLess() {
    assertEquals(RowKernels.CONV_TILE6, ImplicitConv.tileFor(6));
    assertEquals(RowKernels.CONV_TILE6, ImplicitConv.tileFor(1));
    assertEquals(RowKernels.CONV_TILE6, ImplicitConv.tileFor(12));
    assertEquals(RowKernels.CONV_TILE, ImplicitConv.tileFor(16));
    assertEquals(RowKernels.CONV_TILE, ImplicitConv.tileFor(8));
    assertEquals(RowKernels.CONV_TILE, ImplicitConv.tileFor(64));
  }
}
