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
}
