package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.Backend;
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
  void theDefaultRefusesAnInnerDimensionThatCouldOverflow() {
    int k = Backend.INT8_MAX_K + 1;
    var e = assertThrows(IllegalArgumentException.class, () -> defaultOnly()
        .int8LinearDequantize(new byte[k], 0, 1f, new byte[k], new int[1], new float[1], null, new float[1], 1, 1, k));
    assertTrue(e.getMessage().contains("int8LinearDequantize") && e.getMessage().contains(String.valueOf(k)),
        e.getMessage());
  }

  /** A backend whose only working method is the SPI's default int8LinearDequantize (no kernel of its own). */
  private static Backend defaultOnly() {
    return (Backend) Proxy.newProxyInstance(Backend.class.getClassLoader(), new Class<?>[] {Backend.class},
        (proxy, method, args) -> {
          if (method.getName().startsWith("int8Linear")) return InvocationHandler.invokeDefault(proxy, method, args);
          throw new AssertionError("unexpected call " + method.getName());
        });
  }
}
