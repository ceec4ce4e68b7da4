package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** The vector row loops against the scalar ones at every tail length and offset: axpy bitwise, dot within rounding. */
class RowKernelsTest {
  @Test
  void vectorLoopsAgreeWithScalar() {
    RowKernels vector = RowKernels.Choice.vectorOrNull();
    assertNotNull(vector, "the tests run with jdk.incubator.vector; the vector loops must load");
    RowKernels scalar = new RowKernels.Scalar();
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
  @Test
  void maxPool2x2RowVectorAgreesWithScalar() {
    RowKernels vector = RowKernels.Choice.vectorOrNull();
    assertNotNull(vector);
    RowKernels scalar = new RowKernels.Scalar();
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
          int[] as = new int[rows * ow], av = new int[rows * ow];
          boolean withArg = rep % 2 == 0;
          for (int row = 0; row < rows; row++) {
            int xo = lead + row * 2 * iw;
            scalar.maxPool2x2Row(x, xo, iw, lead, ys, withArg ? as : null, row * ow, ow);
            vector.maxPool2x2Row(x, xo, iw, lead, yv, withArg ? av : null, row * ow, ow);
          }
          for (int i = 0; i < ys.length; i++) {
            assertEquals(Float.floatToRawIntBits(ys[i]), Float.floatToRawIntBits(yv[i]), "ow=" + ow + " i=" + i);
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
}
