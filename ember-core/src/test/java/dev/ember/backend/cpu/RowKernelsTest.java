package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The vector row loops against the scalar ones at every tail length and offset: axpy bitwise, dot within rounding. */
class RowKernelsTest {
  private final RowKernels vector = vectorLoops();
  private final RowKernels scalar = new RowKernels.Scalar();

  private static RowKernels vectorLoops() {
    RowKernels vector = RowKernels.Choice.vectorOrNull();
    assertNotNull(vector, "the tests run with jdk.incubator.vector; the vector loops must load");
    return vector;
  }

  @Test
  void vectorLoopsAgreeWithScalar() {
    Random r = new Random(5);
    for (int n : new int[] {0, 1, 3, 7, 15, 16, 17, 33, 1000, 4099}) {
      for (int[] off : new int[][] {{0, 0}, {3, 1}, {1, 5}}) {
        float[] x = new float[n + 8];
        float[] y = new float[n + 8];
        for (int i = 0; i < x.length; i++) {
          x[i] = (float) r.nextGaussian() * 1e3f;
          y[i] = (float) r.nextGaussian();
        }
        float a = (float) r.nextGaussian();
        float[] ys = y.clone();
        float[] yv = y.clone();
        for (int rep = 0; rep < 200; rep++) { // enough calls for C2 to compile the vector loop
          scalar.axpy(a, x, off[0], ys, off[1], n);
          vector.axpy(a, x, off[0], yv, off[1], n);
        }
        assertArrayEquals(ys, yv, "n=" + n + " offsets " + off[0] + "," + off[1]);
        // dot: the orders differ, so within float rounding of the sum of |products|; each is repeatable
        double exact = 0, mag = 0;
        for (int i = 0; i < n; i++) {
          exact += (double) x[off[0] + i] * ys[off[1] + i];
          mag += Math.abs((double) x[off[0] + i] * ys[off[1] + i]);
        }
        float dv = vector.dot(x, off[0], ys, off[1], n);
        assertEquals(exact, scalar.dot(x, off[0], ys, off[1], n), 1e-6 * mag + 1e-30, "scalar dot n=" + n);
        assertEquals(exact, dv, 1e-6 * mag + 1e-30, "vector dot n=" + n);
        assertEquals(Float.floatToIntBits(dv), Float.floatToIntBits(vector.dot(x, off[0], ys, off[1], n)));
      }
    }
  }

  /**
   * maxPool2x2Row: values and argmax bitwise equal, with ties (small integers), -0/+0, NaN and
   * -inf placed everywhere, every row width up to past two vectors, rows at the very end of the
   * array (where the vector loop must hand over to the scalar one) and with or without arg.
   */
  /** dot3x3: the nine shifted dots of both implementations against a double sum, within float rounding. */
  @Test
  void dot3x3AgreesWithTheNineDots() {
    Random r = new Random(13);
    for (int n : new int[] {1, 15, 16, 17, 58 * 56, 1000}) {
      int pitch = 58;
      float[] a = new float[n + 3];
      float[] b = new float[n + 2 * pitch + 5];
      for (int i = 0; i < a.length; i++) a[i] = (float) r.nextGaussian();
      for (int i = 0; i < b.length; i++) b[i] = (float) r.nextGaussian();
      for (RowKernels k : new RowKernels[] {scalar, vector}) {
        float[] out = new float[9];
        for (int rep = 0; rep < 50; rep++) k.dot3x3(a, 2, b, 1, pitch, n, out);
        for (int i = 0; i < 3; i++) {
          for (int j = 0; j < 3; j++) {
            double exact = 0;
            double abs = 0;
            for (int p = 0; p < n; p++) {
              double t = (double) a[2 + p] * b[1 + i * pitch + j + p];
              exact += t;
              abs += Math.abs(t);
            }
            assertEquals(exact, out[i * 3 + j], 1e-6 * (1 + abs), k.getClass().getSimpleName() + " n=" + n + " tap "
                + i + "," + j);
          }
        }
      }
    }
  }

  /**
   * depthwise3x3: both implementations bitwise equal to convPlane over the explicitly zero-padded plane, and
   * depthwise3x3Weight equal to a double sum within float rounding and bitwise between the implementations when their
   * lane counts agree; planes at the start and at the end of their arrays (the masked border loads and stores reach
   * past both ends), every padding up to 2, widths around the vector length.
   */
  @Test
  void depthwise3x3KernelsMatchThePaddedPlane() {
    Random r = new Random(17);
    int[][] shapes = {{56, 56, 1, 1}, {5, 7, 0, 0}, {9, 17, 2, 2}, {4, 33, 1, 0}, {6, 16, 0, 1}, {3, 1, 1, 1},
        {7, 32, 2, 1}};
    for (int[] sh : shapes) {
      int h = sh[0], w = sh[1], ph = sh[2], pw = sh[3];
      int oh = h + 2 * ph - 2, ow = w + 2 * pw - 2;
      float[] taps = new float[9];
      for (int i = 0; i < 9; i++) taps[i] = (float) r.nextGaussian();
      float bias = (float) r.nextGaussian();
      for (int lead : new int[] {0, 3}) {
        float[] x = new float[lead + h * w];
        float[] g = new float[lead + oh * ow];
        for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
        for (int i = 0; i < g.length; i++) g[i] = (float) r.nextGaussian();
        int pitch = (ow + 31) / 32 * 32 + 2;
        float[] xp = new float[(oh + 2) * pitch];
        for (int iy = 0; iy < h; iy++) {
          for (int ix = 0; ix < w; ix++) {
            int py = iy + ph, px = ix + pw;
            if (py < oh + 2 && px < pitch) xp[py * pitch + px] = x[lead + iy * w + ix];
          }
        }
        float[] want = new float[lead + oh * ow];
        scalar.convPlane(xp, 0, pitch, 0, 1, 3, 3, taps, 0, bias, want, lead, oh, ow);
        float[][] weights = new float[2][9];
        int kind = 0;
        for (RowKernels k : new RowKernels[] {scalar, vector}) {
          String what = k.getClass().getSimpleName() + " " + h + "x" + w + " p" + ph + "," + pw + " lead " + lead;
          float[] y = new float[lead + oh * ow];
          java.util.Arrays.fill(y, Float.NaN);
          for (int rep = 0; rep < 30; rep++) k.depthwise3x3(x, lead, h, w, ph, pw, taps, 0, bias, y, lead, oh, ow);
          for (int i = lead; i < y.length; i++) {
            assertEquals(Float.floatToRawIntBits(want[i]), Float.floatToRawIntBits(y[i]), what + " at " + i);
          }
          for (int rep = 0; rep < 30; rep++) k.depthwise3x3Weight(g, lead, oh, ow, x, lead, h, w, ph, pw, weights[kind]);
          for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) {
              double exact = 0, abs = 0;
              for (int oy = 0; oy < oh; oy++) {
                for (int ox = 0; ox < ow; ox++) {
                  int iy = oy + i - ph, ix = ox + j - pw;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  double t = (double) g[lead + oy * ow + ox] * x[lead + iy * w + ix];
                  exact += t;
                  abs += Math.abs(t);
                }
              }
              assertEquals(exact, weights[kind][i * 3 + j], 1e-6 * (1 + abs), what + " weight tap " + i + "," + j);
            }
          }
          kind++;
        }
        if (vector.convLanes() == scalar.convLanes()) {
          assertArrayEquals(weights[0], weights[1], "weight bits " + h + "x" + w + " p" + ph + "," + pw);
        }
      }
    }
  }

  @Test
  void maxPool2x2RowVectorAgreesWithScalar() {
    float[] specials = {Float.NaN, -0f, 0f, Float.NEGATIVE_INFINITY, Float.POSITIVE_INFINITY};
    Random r = new Random(8);
    for (int ow = 1; ow <= 40; ow++) {
      int iw = 2 * ow;
      int rows = 3;
      for (int lead : new int[] {0, 5}) {
        float[] x = new float[lead + rows * 2 * iw];
        for (int i = 0; i < x.length; i++) {
          int k = r.nextInt(10);
          x[i] = k < specials.length && r.nextInt(4) == 0 ? specials[k] : r.nextInt(3);
        }
        for (int rep = 0; rep < 30; rep++) { // enough calls for C2 to compile the vector loop
          float[] ys = new float[rows * ow], yv = new float[rows * ow];
          float[] ysv = new float[rows * ow], yvv = new float[rows * ow]; // maxPool2x2RowValues
          int[] as = new int[rows * ow], av = new int[rows * ow];
          boolean withArg = rep % 2 == 0;
          for (int row = 0; row < rows; row++) {
            int xo = lead + row * 2 * iw;
            scalar.maxPool2x2Row(x, xo, iw, lead, ys, withArg ? as : null, row * ow, ow);
            vector.maxPool2x2Row(x, xo, iw, lead, yv, withArg ? av : null, row * ow, ow);
            scalar.maxPool2x2RowValues(x, xo, iw, ysv, row * ow, ow);
            vector.maxPool2x2RowValues(x, xo, iw, yvv, row * ow, ow);
          }
          for (int i = 0; i < ys.length; i++) {
            assertEquals(Float.floatToRawIntBits(ys[i]), Float.floatToRawIntBits(yv[i]), "ow=" + ow + " i=" + i);
            assertEquals(Float.floatToRawIntBits(ys[i]), Float.floatToRawIntBits(ysv[i]), "values ow=" + ow);
            assertEquals(Float.floatToRawIntBits(ys[i]), Float.floatToRawIntBits(yvv[i]), "values ow=" + ow);
          }
          assertArrayEquals(as, av, "ow=" + ow);
        }
      }
    }
    // the scalar loop against the definition: first maximum in scan order, the last NaN
    float[] x = {1, 2, 2, 0, /* row 2 */ 2, 1, Float.NaN, Float.NaN};
    float[] y = new float[2];
    int[] arg = new int[2];
    scalar.maxPool2x2Row(x, 0, 4, 0, y, arg, 0, 2);
    assertEquals(2f, y[0]);
    assertEquals(1, arg[0]);
    assertEquals(Float.NaN, y[1]);
    assertEquals(7, arg[1]);
  }

  /**
   * convTile bitwise against the scalar loop (both fma every tap in tap order from the tile's start
   * values), for slot counts around multiples of the vector kernel's three, slots that overlap (the
   * later one's values must win), tap offsets in any order, with and without start values, writing
   * where it reads or elsewhere, with the fused ReLU (each value bitwise the RELU kernel's of the plain
   * one); nothing outside the written slots changes. The same for convTile6 (6-channel tiles, slots four, two and
   * one at a time).
   */
  @Test
  void convTileVectorAgreesWithScalar() {
    convTileAgrees(RowKernels.CONV_TILE);
    convTileAgrees(RowKernels.CONV_TILE6);
  }

  /** convTile (tile CONV_TILE) or convTile6 (CONV_TILE6), each a plain call of the method. */
  private static void convTile(RowKernels k, int tile, float[] xp, int[] offs, int kdim, float[] wp, float[] init,
      int[] read, int[] write, int nslots, float[] y, int ldy, boolean relu) {
    if (tile == RowKernels.CONV_TILE6) k.convTile6(xp, offs, kdim, wp, 3, init, 4, read, write, nslots, y, 7, ldy, relu);
    else k.convTile(xp, offs, kdim, wp, 3, init, 4, read, write, nslots, y, 7, ldy, relu);
  }

  private void convTileAgrees(int tile) {
    Random r = new Random(10);
    for (int nslots : new int[] {1, 2, 3, 4, 5, 6, 7, 22}) {
      for (int kdim : new int[] {1, 9, 27}) {
        // 0: write where read, no start values; 1: shifted writes, start values; 2: as 1 with the fused ReLU
        for (int variant = 0; variant < 3; variant++) {
          boolean relu = variant == 2;
          int lanes = vector.convLanes();
          int[] read = new int[nslots];
          for (int i = 1; i < nslots; i++) read[i] = read[i - 1] + lanes - 3 + r.nextInt(8); // some overlap
          int[] write = read.clone();
          if (variant >= 1) for (int i = 0; i < nslots; i++) write[i] = read[i] + 2 * i + 1;
          int span = write[nslots - 1] + Math.max(lanes, scalar.convLanes());
          int[] offs = new int[kdim];
          for (int k = 0; k < kdim; k++) offs[k] = r.nextInt(60);
          float[] xp = new float[60 + span];
          for (int i = 0; i < xp.length; i++) xp[i] = (float) r.nextGaussian();
          float[] wp = new float[3 + kdim * tile];
          for (int i = 0; i < wp.length; i++) wp[i] = (float) r.nextGaussian();
          float[] init = variant >= 1 ? new float[4 + tile] : null;
          if (init != null) for (int i = 0; i < init.length; i++) init[i] = (float) r.nextGaussian();
          int ldy = span + 5;
          float[] ys = new float[7 + tile * ldy];
          float[] yv = new float[7 + tile * ldy];
          java.util.Arrays.fill(ys, -1f);
          java.util.Arrays.fill(yv, -1f);
          float[] yp = new float[7 + tile * ldy];
          convTile(scalar, tile, xp, offs, kdim, wp, init, read, write, nslots, ys, ldy, relu);
          convTile(vector, tile, xp, offs, kdim, wp, init, read, write, nslots, yv, ldy, relu);
          convTile(vector, tile, xp, offs, kdim, wp, init, read, write, nslots, yp, ldy, false);
          String what = "tile=" + tile + " nslots=" + nslots + " kdim=" + kdim + " variant=" + variant;
          int[] from = new int[ldy]; // the read position whose value lands at each written position (the last slot wins)
          java.util.Arrays.fill(from, -1);
          for (int i = 0; i < nslots; i++) for (int l = 0; l < lanes; l++) from[write[i] + l] = read[i] + l;
          for (int row = 0; row < tile; row++) {
            for (int q = 0; q < ldy; q++) {
              float v = yv[7 + row * ldy + q];
              if (from[q] < 0) {
                assertEquals(-1f, v, what + " wrote outside the slots at row " + row + " q " + q);
                continue;
              }
              double exact = init == null ? 0 : init[4 + row];
              for (int k = 0; k < kdim; k++) exact += (double) wp[3 + k * tile + row] * xp[offs[k] + from[q]];
              assertEquals(relu ? Math.max(exact, 0) : exact, v, 1e-4 * kdim, what + " row " + row + " q " + q
                  + " against a double sum");
              float plain = yp[7 + row * ldy + q];
              assertEquals(Float.floatToRawIntBits(relu ? Math.max(plain, 0f) : plain), Float.floatToRawIntBits(v),
                  what + " fused ReLU bits at row " + row + " q " + q);
              if (lanes == scalar.convLanes()) {
                assertEquals(Float.floatToRawIntBits(ys[7 + row * ldy + q]), Float.floatToRawIntBits(v),
                    what + " bits at row " + row + " q " + q);
              }
            }
          }
        }
      }
    }
  }

  /**
   * convWeightTile against a double sum (and bitwise against the scalar loop when both tile the
   * channels alike): it adds to what c holds, reads only the valid positions of each row (a NaN in
   * the padding columns must not reach c) and writes only its 12 x width block; the same for
   * convWeightTileNarrow (width convLanes()), whose bits are the wide tile's first convLanes() channels, and
   * convWeightTile6 (6 taps x convWeightWidth6()), whose bits are the wide tile's first 6 taps on its channels.
   */
  @Test
  void convWeightTileVectorAgreesWithScalar() {
    Random r = new Random(11);
    for (int[] shape : new int[][] {{1, 1, 3}, {3, 5, 8}, {4, 16, 18}, {2, 33, 36}}) {
      int oh = shape[0], ow = shape[1], pitch = shape[2];
      int[] offs = new int[RowKernels.WEIGHT_TAPS + 2];
      int jmax = (pitch - ow) / 2; // taps at row offsets 0-1 and column offsets 0..jmax: columns past ow + jmax are never valid
      for (int k = 0; k < offs.length; k++) offs[k] = r.nextInt(2) * pitch + r.nextInt(jmax + 1);
      float[] xp = new float[4 + 2 * pitch + oh * pitch];
      for (int i = 0; i < xp.length; i++) xp[i] = (float) r.nextGaussian();
      for (int row = 0; 4 + row * pitch < xp.length; row++) {
        for (int col = ow + jmax; col < pitch && 4 + row * pitch + col < xp.length; col++) xp[4 + row * pitch + col] = Float.NaN;
      }
      for (int run = 0; run < 6; run++) { // scalar and vector, wide, narrow and 6-tap tiles
        RowKernels kernels = run % 2 == 0 ? scalar : vector;
        boolean narrow = run == 2 || run == 3;
        boolean six = run >= 4;
        int taps = six ? RowKernels.WEIGHT_TAPS6 : RowKernels.WEIGHT_TAPS;
        int width = narrow ? kernels.convLanes() : six ? kernels.convWeightWidth6() : kernels.convWeightWidth();
        float[] gp = new float[3 + oh * ow * width];
        for (int i = 0; i < gp.length; i++) gp[i] = (float) r.nextGaussian();
        int ldc = width + 5;
        float[] c = new float[2 + (RowKernels.WEIGHT_TAPS + 1) * ldc];
        for (int i = 0; i < c.length; i++) c[i] = (float) r.nextGaussian();
        float[] before = c.clone();
        if (narrow) kernels.convWeightTileNarrow(xp, 4, offs, 2, pitch, oh, ow, gp, 3, c, 2, ldc);
        else if (six) kernels.convWeightTile6(xp, 4, offs, 2, pitch, oh, ow, gp, 3, c, 2, ldc);
        else kernels.convWeightTile(xp, 4, offs, 2, pitch, oh, ow, gp, 3, c, 2, ldc);
        String what = kernels.getClass().getSimpleName() + (narrow ? " narrow" : six ? " six" : "") + " oh=" + oh
            + " ow=" + ow;
        for (int i = 0; i < c.length; i++) {
          int row = (i - 2) / ldc, l = (i - 2) % ldc;
          if (i < 2 || row >= taps || l >= width) {
            assertEquals(before[i], c[i], what + " wrote outside its block at " + i);
            continue;
          }
          double exact = before[i], mag = Math.abs(before[i]);
          for (int oy = 0; oy < oh; oy++) {
            for (int ox = 0; ox < ow; ox++) {
              double p = (double) xp[4 + offs[2 + row] + oy * pitch + ox] * gp[3 + (oy * ow + ox) * width + l];
              exact += p;
              mag += Math.abs(p);
            }
          }
          assertEquals(exact, c[i], 1e-5 * mag + 1e-6, what + " tap " + row + " channel " + l);
        }
      }
      if (scalar.convWeightWidth() == vector.convWeightWidth()) {
        int taps = RowKernels.WEIGHT_TAPS;
        int width = vector.convWeightWidth();
        float[] gp = new float[3 + oh * ow * width];
        for (int i = 0; i < gp.length; i++) gp[i] = (float) r.nextGaussian();
        float[] cs = new float[2 + taps * width];
        float[] cv = new float[2 + taps * width];
        scalar.convWeightTile(xp, 4, offs, 2, pitch, oh, ow, gp, 3, cs, 2, width);
        vector.convWeightTile(xp, 4, offs, 2, pitch, oh, ow, gp, 3, cv, 2, width);
        assertArrayEquals(cs, cv, "convWeightTile bits oh=" + oh + " ow=" + ow);
        // the narrow tile is the wide tile's first convLanes() channels, element for element
        int lanes = vector.convLanes();
        float[] gn = new float[3 + oh * ow * lanes];
        for (int p = 0; p < oh * ow; p++) System.arraycopy(gp, 3 + p * width, gn, 3 + p * lanes, lanes);
        float[] cn = new float[2 + taps * width];
        float[] cns = new float[2 + taps * width];
        vector.convWeightTileNarrow(xp, 4, offs, 2, pitch, oh, ow, gn, 3, cn, 2, width);
        scalar.convWeightTileNarrow(xp, 4, offs, 2, pitch, oh, ow, gn, 3, cns, 2, width);
        for (int t = 0; t < taps; t++) {
          for (int l = 0; l < width; l++) {
            int at = 2 + t * width + l;
            assertEquals(l < lanes ? cv[at] : 0f, cn[at], "narrow tile bits tap " + t + " channel " + l);
            assertEquals(cn[at], cns[at], "narrow tile scalar bits tap " + t + " channel " + l);
          }
        }
        // the 6-tap tile: its first width channels (the rest of its gp random) are the wide tile's first 6 taps
        int six = vector.convWeightWidth6();
        float[] g6 = new float[3 + oh * ow * six];
        for (int i = 0; i < g6.length; i++) g6[i] = (float) r.nextGaussian();
        for (int p = 0; p < oh * ow; p++) System.arraycopy(gp, 3 + p * width, g6, 3 + p * six, width);
        float[] c6 = new float[2 + RowKernels.WEIGHT_TAPS6 * six];
        float[] c6s = new float[2 + RowKernels.WEIGHT_TAPS6 * six];
        vector.convWeightTile6(xp, 4, offs, 2, pitch, oh, ow, g6, 3, c6, 2, six);
        scalar.convWeightTile6(xp, 4, offs, 2, pitch, oh, ow, g6, 3, c6s, 2, six);
        assertArrayEquals(c6s, c6, "convWeightTile6 scalar bits oh=" + oh + " ow=" + ow);
        for (int t = 0; t < RowKernels.WEIGHT_TAPS6; t++) {
          for (int l = 0; l < width; l++) {
            assertEquals(cv[2 + t * width + l], c6[2 + t * six + l], "6-tap tile bits tap " + t + " channel " + l);
          }
        }
      }
    }
  }

  /**
   * The direct convolution kernel convPlane bitwise (both fma each tap in the same order), for widths
   * around one and two vectors and rows wider than that (taken in blocks of directWidth() columns, as a
   * depthwise layer's 56), 1-3 input channels and odd and even kernel widths. Nothing past the plane is
   * written: the outputs end in 40 sentinels.
   */
  @Test
  void directConvolutionVectorAgreesWithScalar() {
    int dw = vector.directWidth();
    Random r = new Random(9);
    for (int ow : new int[] {1, 5, 8, 15, 16, 17, 28, dw, dw + 1, 45, 56, 2 * dw, 2 * dw + 7, 3 * dw + 1}) {
      for (int[] kc : new int[][] {{1, 1, 1}, {3, 3, 2}, {5, 5, 1}, {2, 4, 3}, {5, 3, 2}, {7, 7, 1}}) {
        int kh = kc[0], kw = kc[1], cin = kc[2];
        int oh = 1 + r.nextInt(9);
        int ph = oh + kh - 1, pw = (ow + dw - 1) / dw * dw + kw - 1, ps = ph * pw;
        float[] xp = new float[3 + cin * ps];
        for (int i = 0; i < xp.length; i++) xp[i] = (float) r.nextGaussian();
        float[] w = new float[2 + cin * kh * kw];
        for (int i = 0; i < w.length; i++) w[i] = (float) r.nextGaussian();
        float[] ys = new float[4 + oh * ow + 40], yv = new float[4 + oh * ow + 40];
        java.util.Arrays.fill(ys, 4 + oh * ow, ys.length, -7f);
        java.util.Arrays.fill(yv, 4 + oh * ow, yv.length, -7f);
        String what = "ow=" + ow + " oh=" + oh + " k=" + kh + "x" + kw + " cin=" + cin;
        for (int rep = 0; rep < 20; rep++) {
          scalar.convPlane(xp, 3, pw, ps, cin, kh, kw, w, 2, 0.5f, ys, 4, oh, ow);
          vector.convPlane(xp, 3, pw, ps, cin, kh, kw, w, 2, 0.5f, yv, 4, oh, ow);
        }
        assertArrayEquals(ys, yv, "convPlane " + what);
      }
    }
  }

  /**
   * convWeightTaps: each slot's total against a double sum, scalar and vector bitwise when their lane
   * counts agree, slots accumulating across calls, offsets anywhere in the arrays, and only the
   * 6 x 4 block of slots (at row stride ldk) written.
   */
  @Test
  void convWeightTapsVectorAgreesWithScalar() {
    Random r = new Random(12);
    int lanes = vector.convLanes();
    for (int vectors : new int[] {1, 3, 8}) {
      int n = vectors * lanes;
      float[] g = new float[5 + 7 * n], x = new float[3 + 9 * n];
      for (int i = 0; i < g.length; i++) g[i] = (float) r.nextGaussian();
      for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
      int[] gOff = {99, 5, 5 + 3 * n, 5 + n, 7 + 6 * n - 2, 5 + 2 * n + 1, 5 + 4 * n, 5 + 5 * n}; // from index 1
      int[] xOff = {77, 3, 3 + n + 2, 3 + 8 * n, 3 + 5 * n - 1, 3 + 2 * n}; // from index 1
      int ldk = 5;
      for (RowKernels k : new RowKernels[] {scalar, vector}) {
        int l = k.convLanes();
        float[] acc = new float[2 + (5 * ldk + 4) * l + 3];
        for (int i = 0; i < acc.length; i++) acc[i] = (float) r.nextGaussian();
        float[] before = acc.clone();
        k.convWeightTaps(g, gOff, 1, x, xOff, 1, n, acc, 2, ldk);
        k.convWeightTaps(g, gOff, 1, x, xOff, 1, n, acc, 2, ldk);
        boolean[] touched = new boolean[acc.length];
        for (int c = 0; c < 6; c++) {
          for (int m = 0; m < 4; m++) {
            int at = 2 + (c * ldk + m) * l;
            double exact = 0, mag = 0;
            for (int p = 0; p < n; p++) {
              double t = (double) g[gOff[1 + c] + p] * x[xOff[1 + m] + p];
              exact += t;
              mag += Math.abs(t);
            }
            double start = 0;
            for (int i = 0; i < l; i++) {
              start += before[at + i];
              touched[at + i] = true;
            }
            assertEquals(start + 2 * exact, RowKernels.sumSlots(acc, at, l), 1e-5 * (mag + 1),
                k.getClass().getSimpleName() + " n=" + n + " channel " + c + " tap " + m);
          }
        }
        for (int i = 0; i < acc.length; i++) if (!touched[i]) assertEquals(before[i], acc[i], "slot " + i + " written");
      }
      if (scalar.convLanes() == lanes) {
        float[] as = new float[2 + (5 * ldk + 4) * lanes], av = as.clone();
        for (int rep = 0; rep < 30; rep++) { // enough calls for C2 to compile the vector loop
          scalar.convWeightTaps(g, gOff, 1, x, xOff, 1, n, as, 2, ldk);
          vector.convWeightTaps(g, gOff, 1, x, xOff, 1, n, av, 2, ldk);
        }
        assertArrayEquals(as, av, "convWeightTaps bits n=" + n);
      }
    }
  }

  /** copyRows and addRows bitwise against the scalar loops, for row lengths around the vector width and rows ending at the array's end. */
  @Test
  void copyAndAddRowsAgreeWithScalar() {
    Random r = new Random(10);
    for (int n : new int[] {0, 1, 5, 10, 15, 16, 17, 28, 33}) {
      for (int rows : new int[] {1, 3, 7}) {
        int ss = n + 4, ds = n + 1;
        float[] src = new float[2 + rows * ss - 4]; // the last row ends at the array's end
        float[] dst0 = new float[3 + (rows - 1) * ds + n];
        for (int i = 0; i < src.length; i++) src[i] = (float) r.nextGaussian();
        for (int i = 0; i < dst0.length; i++) dst0[i] = (float) r.nextGaussian();
        for (int rep = 0; rep < 50; rep++) { // enough calls for C2 to compile the vector loops
          float[] cs = dst0.clone(), cv = dst0.clone(), as = dst0.clone(), av = dst0.clone();
          scalar.copyRows(src, 2, ss, cs, 3, ds, rows, n);
          vector.copyRows(src, 2, ss, cv, 3, ds, rows, n);
          assertArrayEquals(cs, cv, "copyRows n=" + n + " rows=" + rows);
          scalar.addRows(src, 2, ss, as, 3, ds, rows, n);
          vector.addRows(src, 2, ss, av, 3, ds, rows, n);
          assertArrayEquals(as, av, "addRows n=" + n + " rows=" + rows);
        }
      }
    }
  }

  /**
   * interleave2 and deinterleave2 (a stride-2 transposed convolution's column phases) against their definitions, scalar
   * and vector, for lengths around the vector width, rows ending at the arrays' ends, and each other's inverse.
   */
  @Test
  void interleaveTwoRowsAndBack() {
    Random r = new Random(12);
    for (int n : new int[] {0, 1, 7, 15, 16, 17, 31, 32, 33, 50}) {
      float[] a = new float[1 + n];
      float[] b = new float[3 + n];
      for (int i = 0; i < a.length; i++) a[i] = (float) r.nextGaussian();
      for (int i = 0; i < b.length; i++) b[i] = (float) r.nextGaussian();
      float[] want = new float[2 + 2 * n];
      Arrays.fill(want, -7f);
      for (int i = 0; i < n; i++) {
        want[2 + 2 * i] = a[1 + i];
        want[2 + 2 * i + 1] = b[3 + i];
      }
      for (int rep = 0; rep < 50; rep++) { // enough calls for C2 to compile the vector loops
        for (RowKernels k : new RowKernels[] {scalar, vector}) {
          float[] d = new float[2 + 2 * n];
          Arrays.fill(d, -7f);
          k.interleave2(a, 1, b, 3, d, 2, n);
          assertArrayEquals(want, d, "interleave2 n=" + n);
          float[] a2 = new float[1 + n];
          float[] b2 = new float[3 + n];
          k.deinterleave2(d, 2, a2, 1, b2, 3, n);
          assertArrayEquals(Arrays.copyOfRange(a, 1, 1 + n), Arrays.copyOfRange(a2, 1, 1 + n), "deinterleave2 a n=" + n);
          assertArrayEquals(Arrays.copyOfRange(b, 3, 3 + n), Arrays.copyOfRange(b2, 3, 3 + n), "deinterleave2 b n=" + n);
        }
      }
    }
  }

  /** Batch norm's plane loops: sums within float rounding of the exact value, the backward row bitwise equal. */
  @Test
  void normLoopsVectorAgreeWithScalar() {
    Random r = new Random(11);
    for (int n : new int[] {0, 1, 3, 7, 15, 16, 17, 33, 1000, 4099}) {
      float[] x = new float[n + 8];
      float[] g = new float[n + 8];
      for (int i = 0; i < x.length; i++) {
        x[i] = (float) r.nextGaussian() * 3f + 2f;
        g[i] = (float) r.nextGaussian();
      }
      float mu = 2.1f;
      double sum = 0, sumAbs = 0, ss = 0, dot = 0, dotAbs = 0;
      for (int i = 0; i < n; i++) {
        sum += x[1 + i];
        sumAbs += Math.abs(x[1 + i]);
        double dev = x[1 + i] - (double) mu;
        ss += dev * dev;
        dot += g[3 + i] * dev;
        dotAbs += Math.abs(g[3 + i] * dev);
      }
      for (int rep = 0; rep < 200; rep++) vector.sum(x, 1, n); // let C2 compile the vector loop
      for (RowKernels k : new RowKernels[] {scalar, vector}) {
        String who = (k == scalar ? "scalar" : "vector") + " n=" + n;
        assertEquals(sum, k.sum(x, 1, n), 1e-6 * sumAbs + 1e-30, who + " sum");
        assertEquals(ss, k.sumSquaredDeviations(x, 1, n, mu), 1e-6 * ss + 1e-30, who + " sumSquaredDeviations");
        assertEquals(dot, k.dotCentred(g, 3, x, 1, n, mu), 1e-6 * dotAbs + 1e-30, who + " dotCentred");
        float[] two = {Float.NaN, Float.NaN};
        for (int rep = 0; rep < (k == vector ? 200 : 1); rep++) k.sumAndDotCentred(g, 3, x, 1, n, mu, two);
        // the fused pass gives the same bits as the two separate ones
        assertEquals(Float.floatToIntBits(k.sum(g, 3, n)), Float.floatToIntBits(two[0]), who + " sumAndDotCentred sum");
        assertEquals(Float.floatToIntBits(k.dotCentred(g, 3, x, 1, n, mu)), Float.floatToIntBits(two[1]),
            who + " sumAndDotCentred dot");
      }
      float[] ys = new float[n + 8];
      float[] yv = new float[n + 8];
      for (int rep = 0; rep < 200; rep++) {
        scalar.normBackwardRow(g, 3, x, 1, ys, 2, n, 0.7f, -0.3f, mu, 0.05f);
        vector.normBackwardRow(g, 3, x, 1, yv, 2, n, 0.7f, -0.3f, mu, 0.05f);
      }
      assertArrayEquals(ys, yv, "normBackwardRow n=" + n);
      for (int i = 0; i < n; i++) {
        assertEquals(0.7 * g[3 + i] - 0.3 * (x[1 + i] - mu) + 0.05, ys[2 + i], 1e-5, "normBackwardRow value " + i);
      }
    }
  }
  /**
   * The row loops of layer, group and RMS norm: the element-wise ones (affineRow, scaleShiftRow, normBackwardRowW,
   * and the gw/gb terms of normBackwardSums) bitwise equal to scalar, the sums (moments, normBackwardSums) within
   * float rounding of double references, at every tail length and at offsets.
   */
  @Test
  void layerNormLoopsVectorAgreeWithScalar() {
    Random r = new Random(12);
    for (int n : new int[] {0, 1, 3, 7, 15, 16, 17, 33, 64, 65, 100, 1000, 1024, 4099}) {
      float[] x = new float[n + 8];
      float[] g = new float[n + 8];
      float[] w = new float[n];
      float[] b = new float[n];
      for (int i = 0; i < x.length; i++) {
        x[i] = (float) r.nextGaussian() * 3f + 2f;
        g[i] = (float) r.nextGaussian();
      }
      for (int i = 0; i < n; i++) {
        w[i] = 1f + (float) r.nextGaussian() * 0.1f;
        b[i] = (float) r.nextGaussian() * 0.1f;
      }
      double sum = 0, sumAbs = 0;
      for (int i = 0; i < n; i++) {
        sum += x[1 + i];
        sumAbs += Math.abs(x[1 + i]);
      }
      for (int rep = 0; rep < 200; rep++) vector.moments(x, 1, n, false, new float[2]); // let C2 compile the loop
      for (RowKernels k : new RowKernels[] {scalar, vector}) {
        String who = (k == scalar ? "scalar" : "vector") + " n=" + n;
        float[] mom = new float[2];
        k.moments(x, 1, n, false, mom);
        assertEquals(n == 0 ? 0 : sum / n, mom[0], 1e-6 * sumAbs / Math.max(1, n) + 1e-30, who + " mean");
        double ss = 0, sq = 0;
        for (int i = 0; i < n; i++) {
          ss += Math.pow(x[1 + i] - (double) mom[0], 2);
          sq += (double) x[1 + i] * x[1 + i];
        }
        assertEquals(ss, mom[1], 1e-6 * ss + 1e-30, who + " centred sum of squares");
        k.moments(x, 1, n, true, mom);
        assertEquals(0f, mom[0], who + " rms mean");
        assertEquals(sq, mom[1], 1e-6 * sq + 1e-30, who + " rms sum of squares");
        float mu = 2.1f;
        float rs = 0.37f;
        float[] gw = new float[n];
        float[] gb = new float[n];
        float[] two = new float[2];
        for (int rep = 0; rep < 2; rep++) k.normBackwardSums(g, 3, x, 1, w, n, mu, rs, gw, gb, two);
        double sh = 0, shx = 0, shAbs = 0, shxAbs = 0;
        for (int i = 0; i < n; i++) {
          double xh = (x[1 + i] - mu) * (double) rs;
          double gh = (double) g[3 + i] * w[i];
          sh += gh;
          shx += gh * xh;
          shAbs += Math.abs(gh);
          shxAbs += Math.abs(gh * xh);
          assertEquals(2 * g[3 + i] * xh, gw[i], 1e-5 * Math.abs(g[3 + i] * xh) + 1e-30, who + " gw " + i);
          assertEquals(2 * g[3 + i], gb[i], 1e-6 * Math.abs(g[3 + i]), who + " gb " + i);
        }
        assertEquals(sh, two[0], 1e-5 * shAbs + 1e-30, who + " sum(gh)");
        assertEquals(shx, two[1], 1e-5 * shxAbs + 1e-30, who + " sum(gh xh)");
      }
      float[][] gws = new float[2][n];
      float[][] gbs = new float[2][n];
      float[][] ys = new float[6][n + 8];
      RowKernels[] both = {scalar, vector};
      for (int k = 0; k < 2; k++) {
        for (int rep = 0; rep < (k == 1 ? 200 : 1); rep++) {
          both[k].affineRow(x, 1, ys[k], 2, n, 2.1f, 0.37f, w, b);
          both[k].scaleShiftRow(x, 1, ys[2 + k], 2, n, 0.37f, -0.2f);
          both[k].normBackwardRowW(g, 3, x, 1, w, ys[4 + k], 2, n, 0.7f, -0.3f, 2.1f, 0.05f);
        }
        both[k].normBackwardSums(g, 3, x, 1, w, n, 2.1f, 0.37f, gws[k], gbs[k], new float[2]);
      }
      assertArrayEquals(ys[0], ys[1], "affineRow n=" + n);
      assertArrayEquals(ys[2], ys[3], "scaleShiftRow n=" + n);
      assertArrayEquals(ys[4], ys[5], "normBackwardRowW n=" + n);
      assertArrayEquals(gws[0], gws[1], "normBackwardSums gw n=" + n);
      assertArrayEquals(gbs[0], gbs[1], "normBackwardSums gb n=" + n);
      for (int i = 0; i < n; i++) {
        assertEquals((x[1 + i] - 2.1) * 0.37 * w[i] + b[i], ys[0][2 + i], 1e-5, "affineRow value " + i);
        assertEquals(x[1 + i] * 0.37 - 0.2, ys[2][2 + i], 1e-5, "scaleShiftRow value " + i);
        assertEquals(0.7 * g[3 + i] * w[i] - 0.3 * (x[1 + i] - 2.1) + 0.05, ys[4][2 + i], 1e-5,
            "normBackwardRowW value " + i);
      }
    }
  }

  /**
   * affineRowThenMoments, which reads the next row inside the loop over this one: the same bits as the two calls it
   * stands for (scalar and vector), at every tail length, layer and RMS norm.
   */
  @Test
  void affineRowThenMomentsEqualsItsTwoCalls() {
    Random r = new Random(13);
    for (int n : new int[] {0, 1, 3, 15, 16, 17, 31, 33, 63, 64, 65, 100, 1000, 1024, 4099}) {
      int no = 5 + n; // the next row follows this one (offset 5) after a gap of 3
      float[] x = new float[2 * n + 16];
      float[] w = new float[n];
      float[] b = new float[n];
      for (int i = 0; i < x.length; i++) {
        x[i] = (float) r.nextGaussian() * 3f + 2f;
      }
      for (int i = 0; i < n; i++) {
        w[i] = 1f + (float) r.nextGaussian() * 0.1f;
        b[i] = (float) r.nextGaussian() * 0.1f;
      }
      for (RowKernels k : new RowKernels[] {scalar, vector}) {
        for (boolean rms : new boolean[] {false, true}) {
          String who = (k == scalar ? "scalar" : "vector") + (rms ? " rms" : "") + " n=" + n;
          float[] y1 = new float[n + 4];
          float[] y2 = new float[n + 4];
          float[] m1 = new float[2];
          float[] m2 = new float[2];
          for (int rep = 0; rep < (k == vector ? 200 : 1); rep++) { // C2 compiles the vector loops
            k.affineRow(x, 2, y1, 1, n, 2.1f, 0.37f, w, b);
            k.moments(x, no, n, rms, m1);
            k.affineRowThenMoments(x, 2, y2, 1, n, 2.1f, 0.37f, w, b, no, rms, m2);
          }
          assertArrayEquals(y1, y2, who + " affine output");
          assertArrayEquals(m1, m2, who + " next row's moments");
        }
      }
    }
  }

  /**
   * scaleShiftPlanesThenMoments (group norm's forward): the same bits as a scaleShiftRow per plane and moments of the
   * next row (scalar and vector), with planes narrower than a vector, not a multiple of it, crossing the vector
   * loop's 4-vector steps (one step across several planes' ends, or whole steps between crossings), whole steps
   * only, one plane for the row, and an empty row.
   */
  @Test
  void scaleShiftPlanesThenMomentsEqualsItsCalls() {
    Random r = new Random(17);
    int[][] shapes = {{0, 1}, {1, 1}, {3, 5}, {4, 16}, {2, 17}, {5, 13}, {7, 64}, {3, 65}, {2, 100}, {1, 1000},
      {2, 3136}, {9, 31}, {3, 128}, {4, 200}, {2, 784}};
    for (int[] sh : shapes) {
      int planes = sh[0];
      int s = sh[1];
      int n = planes * s;
      int no = 5 + n; // the next row follows this one (offset 5) after a gap of 3
      float[] x = new float[2 * n + 16];
      for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian() * 3f + 2f;
      float[] sc = new float[planes];
      float[] shift = new float[planes];
      for (int j = 0; j < planes; j++) {
        sc[j] = 0.5f + (float) r.nextGaussian() * 0.1f;
        shift[j] = (float) r.nextGaussian() * 0.1f;
      }
      for (RowKernels k : new RowKernels[] {scalar, vector}) {
        String who = (k == scalar ? "scalar" : "vector") + " planes=" + planes + " s=" + s;
        float[] y1 = new float[n + 4];
        float[] y2 = new float[n + 4];
        Arrays.fill(y2, Float.NaN);
        Arrays.fill(y1, Float.NaN);
        float[] m1 = new float[2];
        float[] m2 = new float[2];
        for (int rep = 0; rep < (k == vector ? 200 : 1); rep++) { // C2 compiles the vector loops
          for (int j = 0; j < planes; j++) k.scaleShiftRow(x, 2 + j * s, y1, 1 + j * s, s, sc[j], shift[j]);
          k.moments(x, no, n, false, m1);
          k.scaleShiftPlanesThenMoments(x, 2, y2, 1, n, s, sc, shift, no, m2);
        }
        assertArrayEquals(y1, y2, who + " output (and nothing outside it written)");
        assertArrayEquals(m1, m2, who + " next row's moments");
      }
    }
  }

  /**
   * normBackwardRowThenSums (group norm's backward): the same bits as normBackwardRow of one plane and
   * sumAndDotCentred of the next (scalar and vector), at every tail length.
   */
  @Test
  void normBackwardRowThenSumsEqualsItsTwoCalls() {
    Random r = new Random(19);
    for (int n : new int[] {0, 1, 3, 15, 16, 17, 31, 33, 63, 64, 65, 100, 1000, 3136}) {
      float[] g = new float[2 * n + 16];
      float[] x = new float[2 * n + 16];
      for (int i = 0; i < x.length; i++) {
        g[i] = (float) r.nextGaussian();
        x[i] = (float) r.nextGaussian() * 3f + 2f;
      }
      int ngo = 4 + n; // the next plane after a gap of 1 (g) and 3 (x)
      int nxo = 5 + n;
      for (RowKernels k : new RowKernels[] {scalar, vector}) {
        String who = (k == scalar ? "scalar" : "vector") + " n=" + n;
        float[] y1 = new float[n + 4];
        float[] y2 = new float[n + 4];
        Arrays.fill(y1, Float.NaN);
        Arrays.fill(y2, Float.NaN);
        float[] s1 = new float[2];
        float[] s2 = new float[2];
        for (int rep = 0; rep < (k == vector ? 200 : 1); rep++) { // C2 compiles the vector loops
          k.normBackwardRow(g, 3, x, 2, y1, 1, n, 0.7f, -0.3f, 2.1f, 0.05f);
          k.sumAndDotCentred(g, ngo, x, nxo, n, 1.9f, s1);
          k.normBackwardRowThenSums(g, 3, x, 2, y2, 1, n, 0.7f, -0.3f, 2.1f, 0.05f, ngo, nxo, 1.9f, s2);
        }
        assertArrayEquals(y1, y2, who + " gradient (and nothing outside it written)");
        assertArrayEquals(s1, s2, who + " next plane's sums");
      }
    }
  }

  /**
   * col2imUnit: vector and scalar bitwise equal to a tap-by-tap reference (the order the contract
   * fixes) over geometries with and without padding (asymmetric, and wider than the kernel), planes
   * narrower and wider than a vector, column rows with a stride (ld) past their oh*ow entries, planes
   * at both ends of their arrays; and nothing outside the plane is written.
   */
  @Test
  void col2imUnitAgreesWithTapByTapReference() {
    Random r = new Random(11);
    int[][] geoms = { // h, w, kh, kw, ph, pw, oh, ow
      {14, 14, 5, 5, 0, 0, 10, 10}, {32, 32, 3, 3, 1, 1, 32, 32}, {16, 16, 3, 3, 1, 1, 16, 16},
      {7, 9, 3, 2, 2, 0, 9, 8}, {5, 20, 1, 4, 0, 3, 5, 20}, {3, 3, 5, 5, 2, 2, 3, 3}, {1, 1, 3, 3, 1, 1, 1, 1},
      {6, 17, 2, 3, 1, 2, 6, 19}, {10, 33, 3, 3, 0, 0, 8, 31}, {4, 2, 3, 3, 4, 4, 10, 8}};
    for (int[] g : geoms) {
      int h = g[0], w = g[1], kh = g[2], kw = g[3], ph = g[4], pw = g[5], oh = g[6], ow = g[7];
      for (int[] lay : new int[][] {{0, 0, 0}, {5, 3, 7}}) { // col offset, extra ld, plane offset
        int ld = oh * ow + lay[1];
        float[] col = new float[lay[0] + kh * kw * ld];
        for (int i = 0; i < col.length; i++) col[i] = (float) r.nextGaussian();
        for (int tail : new int[] {0, 9}) { // plane at the array's end, or with floats after it
          float[] s0 = new float[lay[2] + h * w + tail];
          for (int i = 0; i < s0.length; i++) s0[i] = (float) r.nextGaussian();
          float[] ref = s0.clone();
          for (int i = 0; i < kh; i++) {
            for (int j = 0; j < kw; j++) {
              for (int oy = 0; oy < oh; oy++) {
                for (int ox = 0; ox < ow; ox++) {
                  int iy = oy + i - ph, ix = ox + j - pw;
                  if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
                    ref[lay[2] + iy * w + ix] += col[lay[0] + (i * kw + j) * ld + oy * ow + ox];
                  }
                }
              }
            }
          }
          String what = java.util.Arrays.toString(g) + " layout " + java.util.Arrays.toString(lay) + " tail " + tail;
          float[] ss = s0.clone();
          scalar.col2imUnit(col, lay[0], ld, h, w, kh, kw, ph, pw, oh, ow, ss, lay[2]);
          assertArrayEquals(ref, ss, "scalar " + what);
          for (int rep = 0; rep < 300; rep++) { // C2 compiles the vector loop; each call must agree
            float[] sv = s0.clone();
            vector.col2imUnit(col, lay[0], ld, h, w, kh, kw, ph, pw, oh, ow, sv, lay[2]);
            if (rep % 100 == 0 || rep == 299) assertArrayEquals(ref, sv, "vector " + what + " call " + rep);
          }
        }
      }
    }
  }

  /**
   * packPositionMajor: the vector version (16 x 16 register transposes plus element-wise edges) gives
   * exactly the scalar layout, with channels and positions that are and are not whole blocks of 16,
   * channel padding up to a whole tile, a source offset, and gp's stale contents overwritten.
   */
  @Test
  void positionMajorPackingAgreesWithScalar() {
    Random r = new Random(8);
    int width = vector.convWeightWidth();
    assertEquals(width, scalar.convWeightWidth(), "the two packings must have the same tile width");
    for (int[] oc : new int[][] {{32, 1024}, {64, 256}, {40, 37}, {3, 16}, {17, 5}, {16, 1}}) {
      int o = oc[0];
      int cols = oc[1];
      int opad = (o + width - 1) / width * width;
      int src = 7;
      float[] g = new float[src + o * cols];
      for (int i = 0; i < g.length; i++) g[i] = (float) r.nextGaussian();
      float[] gs = new float[opad * cols];
      float[] gv = new float[opad * cols];
      java.util.Arrays.fill(gs, Float.NaN);
      java.util.Arrays.fill(gv, Float.NaN);
      for (int rep = 0; rep < 50; rep++) vector.packPositionMajor(g, src, o, opad, cols, gv);
      scalar.packPositionMajor(g, src, o, opad, cols, gs);
      assertArrayEquals(gs, gv, "o=" + o + " cols=" + cols);
      int p = cols - 1;
      int l = o - 1;
      assertEquals(g[src + l * cols + p], gs[((l / width) * cols + p) * width + l % width], "the layout itself");
      // the narrow tiles' layout (one vector of channels per tile)
      int lanes = vector.convLanes();
      int npad = (o + lanes - 1) / lanes * lanes;
      float[] ns = new float[npad * cols];
      float[] nv = new float[npad * cols];
      java.util.Arrays.fill(ns, Float.NaN);
      java.util.Arrays.fill(nv, Float.NaN);
      vector.packPositionMajor(g, src, o, npad, cols, lanes, nv);
      scalar.packPositionMajor(g, src, o, npad, cols, lanes, ns);
      assertArrayEquals(ns, nv, "narrow o=" + o + " cols=" + cols);
      assertEquals(g[src + l * cols + p], ns[((l / lanes) * cols + p) * lanes + l % lanes], "the narrow layout");
    }
  }
}
