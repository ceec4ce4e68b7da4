package dev.ember.backend.cpu.conv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.cpu.RowKernels;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The implicit GEMM's slot groups: a pass that leaves out, group by group, the taps that read only zero padding
 * gives bitwise the pass over every tap, on both tile widths; and the tile width follows the channel count.
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
    float[] wp = ImplicitConv.packTiles(outC, tile, kdim, (o, t) -> o * kdim + t, wf);
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
