package dev.ember.backend.cpu.conv;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.backend.ConvGeometry;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * ConvLoops' im2col and col2im bit for bit against the element-by-element definitions, on strided
 * (the phase-plane paths), dilated, padded and unit geometries; col2im onto a nonzero image, so the
 * order in which each pixel receives its taps (the image value first, then the taps in (i, j) order) is
 * checked too.
 */
class ConvLoopsTest {
  /** h, w, kh, kw, sh, sw, ph, pw, dh, dw. */
  private static final int[][] GEOMETRIES = {
      {32, 32, 4, 4, 2, 2, 1, 1, 1, 1}, // conv_transpose2d k4 s2 p1
      {11, 10, 3, 3, 2, 2, 1, 1, 1, 1},
      {9, 13, 3, 5, 1, 3, 0, 2, 1, 1},
      {12, 11, 3, 2, 3, 2, 2, 1, 2, 3},
      {7, 8, 5, 5, 2, 2, 4, 4, 1, 1}, // padding wider than the image reaches: taps with no rows
      {3, 3, 1, 1, 3, 3, 0, 0, 1, 1}, // stride above the kernel: pixels no tap reaches
      {10, 9, 3, 3, 1, 1, 1, 1, 1, 1},
      {10, 9, 3, 3, 2, 1, 1, 1, 2, 1},
  };

  private static ConvGeometry geometry(int[] a) {
    int oh = (a[0] + 2 * a[6] - a[8] * (a[2] - 1) - 1) / a[4] + 1;
    int ow = (a[1] + 2 * a[7] - a[9] * (a[3] - 1) - 1) / a[5] + 1;
    return new ConvGeometry(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], oh, ow);
  }

  private static float[] random(Random r, int n) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) a[i] = (float) r.nextGaussian();
    return a;
  }

  @Test
  void im2colAndCol2imMatchTheirDefinitionsBitForBit() {
    Random r = new Random(5);
    for (int[] a : GEOMETRIES) {
      ConvGeometry g = geometry(a);
      int cols = g.cols() + 3; // column rows further apart than one grid, as the blocked paths lay them out
      int so = 2;
      int row0 = 5;
      float[] img = random(r, so + g.hw() + 1);
      float[] col = random(r, row0 + g.kk() * cols);
      float[] got = new float[col.length];
      float[] want = new float[col.length];
      java.util.Arrays.fill(got, Float.NaN); // every entry of the column rows must be written
      java.util.Arrays.fill(want, Float.NaN);
      ConvLoops.im2col(img, so, g, got, row0, cols);
      float[] dst = img.clone();
      float[] dstWant = img.clone();
      ConvLoops.col2im(col, row0, g, dst, so, cols);
      for (int i = 0; i < g.kh(); i++) {
        for (int j = 0; j < g.kw(); j++) {
          for (int oy = 0; oy < g.oh(); oy++) {
            for (int ox = 0; ox < g.ow(); ox++) {
              int iy = oy * g.sh() - g.ph() + i * g.dh();
              int ix = ox * g.sw() - g.pw() + j * g.dw();
              int c = row0 + (i * g.kw() + j) * cols + oy * g.ow() + ox;
              boolean in = iy >= 0 && iy < g.h() && ix >= 0 && ix < g.w();
              want[c] = in ? img[so + iy * g.w() + ix] : 0f;
              if (in) dstWant[so + iy * g.w() + ix] += col[c];
            }
          }
        }
      }
      for (int q = 0; q < g.kk(); q++) {
        for (int p = 0; p < g.cols(); p++) {
          int c = row0 + q * cols + p;
          assertEquals(Float.floatToRawIntBits(want[c]), Float.floatToRawIntBits(got[c]),
              "im2col " + g + " tap " + q + " position " + p);
        }
      }
      for (int p = 0; p < dst.length; p++) {
        assertEquals(Float.floatToRawIntBits(dstWant[p]), Float.floatToRawIntBits(dst[p]), "col2im " + g + " at " + p);
      }
    }
  }
}
