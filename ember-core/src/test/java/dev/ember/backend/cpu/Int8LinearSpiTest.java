package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.Backend;
import dev.ember.backend.Int8Matrix;
import dev.ember.tensor.Device;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Backend.int8LinearDequantize and int8LinearRequantize: the SPI's defaults (a backend without an int8 kernel) and the CPU's Vector API kernel. */
class Int8LinearSpiTest {
  @Test
  void defaultAndCpuKernelGiveTheSameBits() {
    Backend cpu = Device.CPU.backend();
    Backend plain = defaultOnly();
    SplittableRandom r = new SplittableRandom(7);
    for (int[] s : new int[][] {{1, 1, 1}, {3, 5, 17}, {17, 65, 100}, {33, 130, 33}}) {
      int m = s[0], n = s[1], k = s[2];
      byte[] a = new byte[m * k];
      byte[] b = new byte[n * k];
      for (int i = 0; i < a.length; i++) a[i] = (byte) r.nextInt(-128, 128);
      for (int i = 0; i < b.length; i++) b[i] = (byte) r.nextInt(-127, 128);
      int[] rowSum = new int[n];
      float[] scale = new float[n];
      float[] bias = new float[n];
      for (int j = 0; j < n; j++) {
        for (int p = 0; p < k; p++) rowSum[j] += b[j * k + p];
        scale[j] = (float) r.nextDouble(1e-3, 1e-1);
        bias[j] = (float) r.nextDouble(-1, 1);
      }
      float[] expected = new float[m * n];
      float[] actual = new float[m * n];
      plain.int8LinearDequantize(a, 3, 0.02f, b, rowSum, scale, bias, expected, m, n, k);
      cpu.int8LinearDequantize(a, 3, 0.02f, b, rowSum, scale, bias, actual, m, n, k);
      assertArrayEquals(expected, actual, m + "x" + n + "x" + k);
      plain.int8LinearDequantize(a, 0, 0.5f, b, rowSum, scale, null, expected, m, n, k);
      cpu.int8LinearDequantize(a, 0, 0.5f, b, rowSum, scale, null, actual, m, n, k);
      assertArrayEquals(expected, actual, m + "x" + n + "x" + k + " without bias");
    }
  }

  @Test
  void requantizeDefaultAndCpuKernelGiveTheSameBits() {
    Backend cpu = Device.CPU.backend();
    Backend plain = defaultOnly();
    SplittableRandom r = new SplittableRandom(11);
    for (int[] s : new int[][] {{1, 1, 1}, {3, 5, 17}, {17, 65, 100}, {33, 130, 33}}) {
      int m = s[0], n = s[1], k = s[2];
      byte[] a = new byte[m * k];
      byte[] b = new byte[n * k];
      for (int i = 0; i < a.length; i++) a[i] = (byte) r.nextInt(-128, 128);
      for (int i = 0; i < b.length; i++) b[i] = (byte) r.nextInt(-127, 128);
      int[] rowSum = dev.ember.quant.Quantization.rowSums(b, n, k);
      float[] scale = new float[n];
      float[] bias = new float[n];
      for (int j = 0; j < n; j++) {
        scale[j] = (float) r.nextDouble(1e-3, 1e-1);
        bias[j] = (float) r.nextDouble(-1, 1);
      }
      // qint8 and quint8 outputs, a scale small enough that some values clamp at both ends
      int[][] ranges = {{-128, 127, 3}, {0, 255, 128}, {0, 127, 0}};
      for (int[] range : ranges) {
        byte[] expected = new byte[m * n];
        byte[] actual = new byte[m * n];
        plain.int8LinearRequantize(a, 3, 0.02f, b, rowSum, scale, bias, 0.05f, range[2], range[0], range[1], expected,
            m, n, k);
        cpu.int8LinearRequantize(a, 3, 0.02f, b, rowSum, scale, bias, 0.05f, range[2], range[0], range[1], actual, m, n,
            k);
        assertArrayEquals(expected, actual, m + "x" + n + "x" + k + " range " + range[0] + ".." + range[1]);
        // the definition: requantize the dequantized float value
        float[] deq = new float[m * n];
        plain.int8LinearDequantize(a, 3, 0.02f, b, rowSum, scale, bias, deq, m, n, k);
        for (int i = 0; i < deq.length; i++) {
          double q = Math.rint(deq[i] * (1f / 0.05f)) + range[2];
          int want = (int) Math.max(range[0], Math.min(range[1], q));
          int got = range[0] < 0 ? actual[i] : actual[i] & 0xFF;
          assertTrue(want == got, "element " + i + ": " + got + " != " + want);
        }
      }
      byte[] expected = new byte[m * n];
      byte[] actual = new byte[m * n];
      plain.int8LinearRequantize(a, 0, 0.5f, b, rowSum, scale, null, 0.3f, 0, -128, 127, expected, m, n, k);
      cpu.int8LinearRequantize(a, 0, 0.5f, b, rowSum, scale, null, 0.3f, 0, -128, 127, actual, m, n, k);
      assertArrayEquals(expected, actual, m + "x" + n + "x" + k + " without bias");
    }
  }

  @Test
  void requantizeRefusesARangeWiderThanAByte() {
    for (Backend be : new Backend[] {defaultOnly(), Device.CPU.backend()}) {
      var e = assertThrows(IllegalArgumentException.class, () -> be.int8LinearRequantize(new byte[1], 0, 1f,
          new byte[1], new int[1], new float[1], null, 1f, 0, -129, 127, new byte[1], 1, 1, 1));
      assertTrue(e.getMessage().contains("int8LinearRequantize") && e.getMessage().contains("-129"), e.getMessage());
    }
  }

  @Test
  void aPreparedWeightGivesTheSameBitsEveryCall() {
    Backend cpu = Device.CPU.backend();
    Backend plain = defaultOnly();
    SplittableRandom r = new SplittableRandom(17);
    for (int[] s : new int[][] {{1, 10, 128}, {1, 256, 784}, {2, 33, 7}, {4, 5, 1}, {5, 64, 31}, {8, 32, 16},
        {13, 10, 128}, {128, 70, 1100}}) {
      int m = s[0], n = s[1], k = s[2];
      byte[] a = new byte[m * k];
      byte[] b = new byte[n * k];
      for (int i = 0; i < a.length; i++) a[i] = (byte) r.nextInt(-128, 128);
      for (int i = 0; i < b.length; i++) b[i] = (byte) r.nextInt(-128, 128);
      b[0] = -128;
      a[a.length - 1] = -128;
      int[] rowSum = dev.ember.quant.Quantization.rowSums(b, n, k);
      float[] scale = new float[n];
      for (int j = 0; j < n; j++) scale[j] = (float) r.nextDouble(1e-3, 1e-1);
      Int8Matrix w = new Int8Matrix(b, n, k);
      float[] expected = new float[m * n];
      plain.int8LinearDequantize(a, -3, 0.02f, b, rowSum, scale, null, expected, m, n, k);
      for (int call = 0; call < 2; call++) {   // the second call finds the panels packed by the first
        float[] actual = new float[m * n];
        cpu.int8LinearDequantize(a, -3, 0.02f, w, rowSum, scale, null, actual, m);
        assertArrayEquals(expected, actual, m + "x" + n + "x" + k + " call " + call);
        float[] viaDefault = new float[m * n];
        plain.int8LinearDequantize(a, -3, 0.02f, w, rowSum, scale, null, viaDefault, m);
        assertArrayEquals(expected, viaDefault, m + "x" + n + "x" + k + " default");
      }
    }
  }

  @Test
  void bothEpiloguesGiveTheDefaultsBits() {
    // k = 2^16 with every weight -128 and zero point -128: acc - aZero * rowSum can reach 2^31, the long epilogue;
    // k = 3000 takes the int one
    Backend cpu = Device.CPU.backend();
    Backend plain = defaultOnly();
    SplittableRandom r = new SplittableRandom(23);
    for (int k : new int[] {3000, Backend.INT8_MAX_K}) {
      int m = 9, n = 3;
      byte[] a = new byte[m * k];
      byte[] b = new byte[n * k];
      for (int i = 0; i < a.length; i++) a[i] = (byte) (i % 5 == 0 ? -128 : r.nextInt(-128, 128));
      java.util.Arrays.fill(b, (byte) -128);
      for (int i = 0; i < k; i++) b[k + i] = (byte) r.nextInt(-128, 128);
      int[] rowSum = dev.ember.quant.Quantization.rowSums(b, n, k);
      float[] scale = {1e-4f, 3e-3f, 0.7f};
      float[] bias = {0.5f, -2f, 0f};
      for (int zero : new int[] {-128, 0, 127}) {
        float[] expected = new float[m * n];
        float[] actual = new float[m * n];
        plain.int8LinearDequantize(a, zero, 0.013f, b, rowSum, scale, bias, expected, m, n, k);
        cpu.int8LinearDequantize(a, zero, 0.013f, new Int8Matrix(b, n, k), rowSum, scale, bias, actual, m);
        assertArrayEquals(expected, actual, "k=" + k + " zero=" + zero);
        cpu.int8LinearDequantize(a, zero, 0.013f, b, rowSum, scale, null, actual, m, n, k);
        plain.int8LinearDequantize(a, zero, 0.013f, b, rowSum, scale, null, expected, m, n, k);
        assertArrayEquals(expected, actual, "k=" + k + " zero=" + zero + " without bias");
      }
    }
  }

  @Test
  void aPreparedWeightRequantizesToTheSameBitsEveryCall() {
    Backend cpu = Device.CPU.backend();
    Backend plain = defaultOnly();
    SplittableRandom r = new SplittableRandom(19);
    // {qmin, qmax, zero}: qint8, quint8, and quint8 with a fused ReLU (qmin = zero point)
    int[][] ranges = {{-128, 127, -5}, {0, 255, 131}, {131, 255, 131}};
    for (int[] s : new int[][] {{1, 10, 128}, {2, 33, 7}, {4, 5, 1}, {8, 32, 16}, {13, 10, 128}, {128, 70, 1100}}) {
      int m = s[0], n = s[1], k = s[2];
      byte[] a = new byte[m * k];
      byte[] b = new byte[n * k];
      for (int i = 0; i < a.length; i++) a[i] = (byte) r.nextInt(-128, 128);
      for (int i = 0; i < b.length; i++) b[i] = (byte) r.nextInt(-127, 128);
      int[] rowSum = dev.ember.quant.Quantization.rowSums(b, n, k);
      float[] scale = new float[n];
      float[] bias = new float[n];
      for (int j = 0; j < n; j++) {
        scale[j] = (float) r.nextDouble(1e-3, 1e-1);
        bias[j] = (float) r.nextDouble(-1, 1);
      }
      Int8Matrix w = new Int8Matrix(b, n, k);
      for (int[] range : ranges) {
        byte[] expected = new byte[m * n];
        plain.int8LinearRequantize(a, 3, 0.02f, b, rowSum, scale, bias, 0.05f, range[2], range[0], range[1], expected,
            m, n, k);
        for (int call = 0; call < 2; call++) {   // the second call finds the panels packed by the first
          byte[] actual = new byte[m * n];
          cpu.int8LinearRequantize(a, 3, 0.02f, w, rowSum, scale, bias, 0.05f, range[2], range[0], range[1], actual, m);
          assertArrayEquals(expected, actual, m + "x" + n + "x" + k + " call " + call);
          byte[] viaDefault = new byte[m * n];
          plain.int8LinearRequantize(a, 3, 0.02f, w, rowSum, scale, bias, 0.05f, range[2], range[0], range[1],
              viaDefault, m);
          assertArrayEquals(expected, viaDefault, m + "x" + n + "x" + k + " default");
        }
      }
    }
  }

  @Test
  void theConvOrientationGivesTheLinearBitsTransposedIntoNchw() {
    Backend cpu = Device.CPU.backend();
    Backend plain = defaultOnly();
    SplittableRandom r = new SplittableRandom(29);
    // {n (channels), k, images, plane}: LeNet's two convolutions, more channels than a task's rows, a long k, tiny
    for (int[] s : new int[][] {{6, 25, 2, 576}, {16, 150, 3, 64}, {70, 33, 3, 100}, {5, 1100, 2, 20}, {1, 1, 1, 1},
        {3, 9, 5, 7}}) {
      int n = s[0], k = s[1], images = s[2], plane = s[3];
      int m = images * plane;
      int channels = n + 3;   // the product fills channels [2, 2 + n) of an NCHW tensor of n + 3 channels
      byte[] rows = new byte[m * k];
      byte[] b = new byte[n * k];
      for (int i = 0; i < rows.length; i++) rows[i] = (byte) r.nextInt(-128, 128);
      for (int i = 0; i < b.length; i++) b[i] = (byte) r.nextInt(-127, 128);
      byte[] cols = new byte[k * m];
      for (int i = 0; i < m; i++) for (int p = 0; p < k; p++) cols[p * m + i] = rows[i * k + p];
      int[] rowSum = dev.ember.quant.Quantization.rowSums(b, n, k);
      float[] scale = new float[n];
      float[] bias = new float[n];
      for (int j = 0; j < n; j++) {
        scale[j] = (float) r.nextDouble(1e-3, 1e-1);
        bias[j] = (float) r.nextDouble(-1, 1);
      }
      Int8Matrix w = new Int8Matrix(b, n, k);
      for (float[] bs : new float[][] {bias, null}) {
        for (int[] range : new int[][] {{-128, 127, -5}, {0, 255, 131}, {131, 255, 131}}) {
          byte[] linear = new byte[m * n];
          plain.int8LinearRequantize(rows, -7, 0.02f, b, rowSum, scale, bs, 0.05f, range[2], range[0], range[1], linear,
              m, n, k);
          byte[] expected = new byte[images * channels * plane];
          java.util.Arrays.fill(expected, (byte) 99);
          for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
              expected[(i / plane) * channels * plane + (2 + j) * plane + i % plane] = linear[i * n + j];
            }
          }
          for (Backend be : new Backend[] {cpu, plain}) {
            byte[] actual = new byte[expected.length];
            java.util.Arrays.fill(actual, (byte) 99);
            be.int8ConvRequantize(w, rowSum, scale, bs, cols, -7, 0.02f, 0.05f, range[2], range[0], range[1], actual,
                m, plane, 2 * plane, channels * plane);
            assertArrayEquals(expected, actual, java.util.Arrays.toString(s) + " " + (be == cpu ? "cpu" : "default")
                + " bias=" + (bs != null) + " range=" + java.util.Arrays.toString(range));
          }
        }
      }
    }
  }

  @Test
  void theConvOrientationTakesTheLongCorrectionWhenItMust() {
    // k = 2^16, every weight -128, zero point -128: acc - xZero * rowSum leaves the int range
    Backend cpu = Device.CPU.backend();
    Backend plain = defaultOnly();
    SplittableRandom r = new SplittableRandom(31);
    int k = Backend.INT8_MAX_K, n = 2, m = 3;
    byte[] cols = new byte[k * m];
    for (int i = 0; i < cols.length; i++) cols[i] = (byte) (i % 3 == 0 ? -128 : r.nextInt(-128, 128));
    byte[] b = new byte[n * k];
    java.util.Arrays.fill(b, (byte) -128);
    int[] rowSum = dev.ember.quant.Quantization.rowSums(b, n, k);
    float[] scale = {1e-7f, 3e-6f};
    byte[] expected = new byte[n * m];
    byte[] actual = new byte[n * m];
    plain.int8ConvRequantize(new Int8Matrix(b, n, k), rowSum, scale, null, cols, -128, 0.013f, 0.5f, 0, -128, 127,
        expected, m, m, 0, n * m);
    cpu.int8ConvRequantize(new Int8Matrix(b, n, k), rowSum, scale, null, cols, -128, 0.013f, 0.5f, 0, -128, 127,
        actual, m, m, 0, n * m);
    assertArrayEquals(expected, actual);
  }

  @Test
  void theConvOrientationRefusesABadOutputRange() {
    for (Backend be : new Backend[] {Device.CPU.backend(), defaultOnly()}) {
      var e = assertThrows(IllegalArgumentException.class, () -> be.int8ConvRequantize(new Int8Matrix(new byte[1], 1,
          1), new int[1], new float[1], null, new byte[1], 0, 1f, 1f, 0, -129, 127, new byte[1], 1, 1, 0, 1));
      assertTrue(e.getMessage().contains("int8ConvRequantize") && e.getMessage().contains("-129"), e.getMessage());
    }
  }

  @Test
  void anInt8MatrixMustHoldItsShape() {
    var e = assertThrows(IllegalArgumentException.class, () -> new Int8Matrix(new byte[6], 2, 4));
    assertTrue(e.getMessage().contains("6 bytes") && e.getMessage().contains("[2, 4]"), e.getMessage());
  }

  @Test
  void theDefaultRefusesAnInnerDimensionThatCouldOverflow() {
    int k = Backend.INT8_MAX_K + 1;
    var e = assertThrows(IllegalArgumentException.class, () -> defaultOnly()
        .int8LinearDequantize(new byte[k], 0, 1f, new byte[k], new int[1], new float[1], null, new float[1], 1, 1, k));
    assertTrue(e.getMessage().contains("int8LinearDequantize") && e.getMessage().contains(String.valueOf(k)),
        e.getMessage());
  }

  /** A backend whose only working methods are the SPI's default int8 products (no kernel of its own). */
  private static Backend defaultOnly() {
    return (Backend) Proxy.newProxyInstance(Backend.class.getClassLoader(), new Class<?>[] {Backend.class},
        (proxy, method, args) -> {
          if (method.getName().startsWith("int8Linear") || method.getName().startsWith("int8Conv")) return InvocationHandler.invokeDefault(proxy, method, args);
          throw new AssertionError("unexpected call " + method.getName());
        });
  }
}
