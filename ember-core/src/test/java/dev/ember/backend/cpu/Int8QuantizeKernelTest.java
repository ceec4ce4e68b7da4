package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.backend.Backend;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The activation quantization and min/max kernels: Vector API against the scalar oracle and the Backend SPI's
 * defaults, bit for bit, on ties, infinities, huge values, signed zeros, tails and offsets, and NaN.
 */
class Int8QuantizeKernelTest {
  private static final Int8Kernels VECTOR = Int8Gemm.vectorKernelsOrNull();
  private static final Int8Kernels SCALAR = new ScalarInt8Kernels();

  private static float[] awkward(SplittableRandom r, int n, float scale) {
    float[] x = new float[n];
    for (int i = 0; i < n; i++) {
      x[i] = switch (r.nextInt(8)) {
        case 0 -> (r.nextInt(-300, 300) + 0.5f) * scale;          // ties (half to even) near and past the range
        case 1 -> r.nextBoolean() ? Float.POSITIVE_INFINITY : Float.NEGATIVE_INFINITY;
        case 2 -> (float) r.nextDouble(-1e30, 1e30);
        case 3 -> r.nextBoolean() ? 0f : -0f;
        case 4 -> Float.MIN_VALUE * r.nextInt(-5, 5);
        default -> (float) r.nextDouble(-200, 200) * scale;
      };
    }
    return x;
  }

  @Test
  void quantizeGivesTheOraclesBits() {
    assertNotNull(VECTOR, "tests run with jdk.incubator.vector");
    Backend plain = defaultOnly();
    SplittableRandom r = new SplittableRandom(3);
    int[][] ranges = {{-128, 127}, {0, 255}, {0, 127}};
    for (float scale : new float[] {1f, 0.1f, 0.0039215689f, 3.7e-5f, 250f}) {
      for (int[] q : ranges) {
        for (int zero : new int[] {q[0], 0, 3, q[1]}) {
          for (int n : new int[] {0, 1, 15, 16, 17, 63, 64, 1000}) {
            int off = r.nextInt(3);
            float[] x = awkward(r, n + off + 2, scale);
            byte[] want = new byte[n + 5];
            byte[] got = new byte[n + 5];
            byte[] dflt = new byte[n + 5];
            SCALAR.quantize(x, off, n, scale, zero, q[0], q[1], want, 4);
            VECTOR.quantize(x, off, n, scale, zero, q[0], q[1], got, 4);
            plain.quantizeInt8(x, off, n, scale, zero, q[0], q[1], dflt, 4);
            String what = "scale=" + scale + " zero=" + zero + " range=" + q[0] + ".." + q[1] + " n=" + n;
            assertArrayEquals(want, got, what);
            assertArrayEquals(want, dflt, what);
          }
        }
      }
    }
  }

  @Test
  void quantizeRoundsHalfToEven() {
    float[] x = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, 127.5f, -128.5f, -127.5f, 3.49f, 3.51f,
        0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f};
    byte[] got = new byte[x.length];
    VECTOR.quantize(x, 0, x.length, 1f, 0, -128, 127, got, 0);
    assertArrayEquals(new byte[] {0, 2, 2, 0, -2, -2, 126, 127, -128, -128, 3, 4, 0, 2, 2, 0, -2, -2}, got);
  }

  @Test
  void quantizeNamesTheNaNElement() {
    for (Int8Kernels k : new Int8Kernels[] {SCALAR, VECTOR}) {
      float[] x = new float[40];
      x[37] = Float.NaN;
      var e = assertThrows(IllegalArgumentException.class, () -> k.quantize(x, 2, 38, 0.5f, 1, -128, 127, new byte[40], 0));
      assertEquals("quantize: NaN has no quantized value (element 37, scale=0.5, zero_point=1)", e.getMessage());
    }
  }

  @Test
  void minMaxMatchesMathMinMax() {
    SplittableRandom r = new SplittableRandom(9);
    Backend plain = defaultOnly();
    for (int n : new int[] {0, 1, 7, 16, 33, 500}) {
      float[] x = awkward(r, n + 3, 1f);
      for (int i = 0; i < x.length; i++) if (Float.isInfinite(x[i])) x[i] = 0f;   // keep +-0 ties in play
      float[] want = SCALAR.minMax(x, 3, n);
      assertArrayEquals(want, VECTOR.minMax(x, 3, n), "n=" + n);
      assertArrayEquals(want, plain.minMax(x, 3, n), "n=" + n);
      if (n > 0) {
        x[3 + n / 2] = Float.NaN;
        float[] got = VECTOR.minMax(x, 3, n);
        assertEquals(Float.NaN, got[0]);
        assertEquals(Float.NaN, got[1]);
      }
    }
    assertArrayEquals(new float[] {-0f, 0f}, VECTOR.minMax(new float[] {0f, -0f, 0f, -0f}, 0, 4));
  }

  /** A backend whose only working methods are the SPI's defaults for quantizeInt8 and minMax. */
  private static Backend defaultOnly() {
    return (Backend) Proxy.newProxyInstance(Backend.class.getClassLoader(), new Class<?>[] {Backend.class},
        (proxy, method, args) -> {
          if (method.getName().equals("quantizeInt8") || method.getName().equals("minMax")) {
            return InvocationHandler.invokeDefault(proxy, method, args);
          }
          throw new AssertionError("unexpected call " + method.getName());
        });
  }
}
