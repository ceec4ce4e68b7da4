package dev.ember.nn.init;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.cpu.ScalarKernels;
import dev.ember.nn.Bilinear;
import dev.ember.nn.Linear;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

class InitTest {
  private static double mean(double[] v) {
    double s = 0;
    for (double x : v) s += x;
    return s / v.length;
  }

  private static double std(double[] v) {
    double m = mean(v), s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return Math.sqrt(s / (v.length - 1));
  }

  private static double[] values(Tensor t) {
    return t.toDoubleArray();
  }

  @Test
  void gainsAndFansMatchPyTorch() {
    assertEquals(1.0, Init.calculateGain("linear"));
    assertEquals(1.0, Init.calculateGain("conv2d"));
    assertEquals(5.0 / 3, Init.calculateGain("tanh"));
    assertEquals(Math.sqrt(2), Init.calculateGain("relu"));
    assertEquals(Math.sqrt(2 / (1 + 0.01 * 0.01)), Init.calculateGain("leaky_relu"));
    assertEquals(Math.sqrt(2.0 / 6), Init.calculateGain("leaky_relu", Math.sqrt(5)), 1e-15);
    assertEquals(0.75, Init.calculateGain("selu"));
    assertThrows(IllegalArgumentException.class, () -> Init.calculateGain("swish"));
    assertArrayEquals(new long[] {3 * 5 * 5, 16 * 5 * 5}, Init.fans(Tensor.empty(16, 3, 5, 5)));
    assertArrayEquals(new long[] {784, 128}, Init.fans(Tensor.empty(128, 784)));
    assertEquals("init: fan in and fan out need a tensor of at least 2 dims, got shape [5]",
        assertThrows(IllegalArgumentException.class, () -> Init.fans(Tensor.empty(5))).getMessage());
  }

  /**
   * Every initializer takes a BF16/F16 tensor (each threw a NullPointerException). The uniform ones draw as torch's
   * uniform_ on the half tensor (its significand bits of each output); the normal ones fill it with the float32
   * initializer's values rounded once (orthogonal_ samples its Gaussian in the tensor's type, as PyTorch, so its
   * columns are orthonormal to the half dtype's precision).
   */
  @Test
  void everyInitializerFillsHalfTensors() {
    // torch.manual_seed(11); t = torch.empty(6, 5, dtype=...); init.uniform_(t, -1, 1) / xavier_uniform_(t, 1) /
    // kaiming_uniform_(t, a=math.sqrt(5), mode='fan_in', nonlinearity='leaky_relu'); t.flatten()[:5]
    java.util.Map<String, double[]> torch = java.util.Map.of(
        "BF16 uniform_", new double[] {0.1953125, 0.4921875, -0.375, -0.2890625, -0.3671875},
        "BF16 xavierUniform_", new double[] {0.14453125, 0.36328125, -0.27734375, -0.2138671875, -0.271484375},
        "BF16 kaimingUniform_", new double[] {0.08740234375, 0.2197265625, -0.16796875, -0.12890625, -0.1640625},
        "F16 uniform_", new double[] {0.8994140625, 0.6865234375, 0.078125, 0.0888671875, 0.3291015625},
        "F16 xavierUniform_", new double[] {0.66455078125, 0.50732421875, 0.057708740234375, 0.065673828125,
            0.2431640625},
        "F16 kaimingUniform_", new double[] {0.40234375, 0.30712890625, 0.034942626953125, 0.03973388671875,
            0.147216796875});
    for (dev.ember.tensor.DType half : new dev.ember.tensor.DType[] {dev.ember.tensor.DType.BF16,
        dev.ember.tensor.DType.F16}) {
      java.util.Map<String, java.util.function.BiFunction<Tensor, Generator, Tensor>> uniforms =
          new java.util.LinkedHashMap<>();
      uniforms.put("uniform_", (t, g) -> Init.uniform_(t, -1, 1, g));
      uniforms.put("xavierUniform_", (t, g) -> Init.xavierUniform_(t, 1, g));
      uniforms.put("kaimingUniform_", (t, g) -> Init.kaimingUniform_(t, Math.sqrt(5), Init.FanMode.FAN_IN,
          "leaky_relu", g));
      for (var e : uniforms.entrySet()) {
        Tensor h = e.getValue().apply(Tensor.empty(half, 6, 5), new Generator(11));
        assertEquals(half, h.dtype());
        String key = half + " " + e.getKey();
        assertArrayEquals(torch.get(key), java.util.Arrays.copyOf(h.toDoubleArray(), 5), key);
      }
      java.util.Map<String, java.util.function.BiFunction<Tensor, Generator, Tensor>> inits = new java.util.LinkedHashMap<>();
      inits.put("normal_", (t, g) -> Init.normal_(t, 0, 1, g));
      inits.put("xavierNormal_", (t, g) -> Init.xavierNormal_(t, 1, g));
      inits.put("kaimingNormal_", (t, g) -> Init.kaimingNormal_(t, 0, Init.FanMode.FAN_OUT, "relu", g));
      inits.put("truncNormal_", (t, g) -> Init.truncNormal_(t, 0, 1, -2, 2, g));
      for (var e : inits.entrySet()) {
        Tensor h = e.getValue().apply(Tensor.empty(half, 6, 5), new Generator(11));
        Tensor f = e.getValue().apply(Tensor.empty(6, 5), new Generator(11));
        assertEquals(half, h.dtype());
        assertArrayEquals(f.to(half).toDoubleArray(), h.toDoubleArray(), half + " " + e.getKey());
      }
      Tensor q = Init.orthogonal_(Tensor.empty(half, 6, 4), 1, new Generator(12)).to(dev.ember.tensor.DType.F64);
      Tensor qtq = q.t().matmul(q);
      for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) {
          assertEquals(i == j ? 1 : 0, qtq.toDoubleArray()[i * 4 + j], 0.03, half + " orthogonal_ Q^T Q");
        }
      }
    }
  }

  @Test
  void distributionsHaveTheirMomentsAndBounds() {
    Generator g = new Generator(7);
    Tensor t = Tensor.empty(400, 500); // fan_in 500, fan_out 400, 200k samples

    double[] u = values(Init.uniform_(t, -2, 3, g));
    for (double x : u) assertTrue(x >= -2 && x < 3);
    assertEquals(0.5, mean(u), 0.02);
    assertEquals(5 / Math.sqrt(12), std(u), 0.01);

    double[] n = values(Init.normal_(t, 1.5, 0.5, g));
    assertEquals(1.5, mean(n), 0.01);
    assertEquals(0.5, std(n), 0.005);

    double xb = Math.sqrt(6.0 / 900);
    double[] xu = values(Init.xavierUniform_(t, 1, g));
    for (double x : xu) assertTrue(Math.abs(x) <= xb);
    assertEquals(xb / Math.sqrt(3), std(xu), 0.01 * xb);
    assertEquals(Math.sqrt(2.0 / 900), std(values(Init.xavierNormal_(t, 1, g))), 0.01 * Math.sqrt(2.0 / 900));

    double kb = Math.sqrt(2) * Math.sqrt(3.0 / 500);
    double[] ku = values(Init.kaimingUniform_(t, 0, Init.FanMode.FAN_IN, "relu", g));
    for (double x : ku) assertTrue(Math.abs(x) <= kb);
    assertEquals(kb / Math.sqrt(3), std(ku), 0.01 * kb);
    double ks = Math.sqrt(2.0 / 400);
    assertEquals(ks, std(values(Init.kaimingNormal_(t, 0, Init.FanMode.FAN_OUT, "relu", g))), 0.01 * ks);

    // trunc normal N(0, 1) on [-2, 2]: variance 1 - 2*2*phi(2)/(Phi(2)-Phi(-2))
    double[] tn = values(Init.truncNormal_(t, 0, 1, -2, 2, g));
    for (double x : tn) assertTrue(x >= -2 && x <= 2);
    double phi2 = Math.exp(-2) / Math.sqrt(2 * Math.PI);
    double z = 1 - ScalarKernels.erfc(Math.sqrt(2));
    assertEquals(Math.sqrt(1 - 4 * phi2 / z), std(tn), 0.005);
    assertEquals(0, mean(tn), 0.01);

    assertEquals(0.0, Init.zeros_(t).abs().sum().item());
    assertEquals(200_000.0, Init.ones_(t).sum().item());
    assertEquals(200_000.0 * 0.25, Init.constant_(t, 0.25).sum().item());
  }

  @Test
  void orthogonalGivesOrthonormalRowsOrColumns() {
    for (int[] shape : new int[][] {{6, 6}, {8, 3}, {3, 8}, {4, 2, 3}}) {
      Tensor w = Init.orthogonal_(Tensor.empty(DType.F64, shape), 2.0, new Generator(3));
      Tensor m = w.reshape(shape[0], -1).div(2.0);
      int rows = m.size(0), cols = m.size(1);
      Tensor gram = rows >= cols ? m.t().matmul(m) : m.matmul(m.t());
      double[] gv = gram.toDoubleArray();
      int k = Math.min(rows, cols);
      for (int i = 0; i < k; i++) {
        for (int j = 0; j < k; j++) assertEquals(i == j ? 1 : 0, gv[i * k + j], 1e-12, "gram of " + java.util.Arrays.toString(shape));
      }
    }
    assertEquals("orthogonal_: only tensors with 2 or more dimensions are supported, got shape [3]",
        assertThrows(IllegalArgumentException.class, () -> Init.orthogonal_(Tensor.empty(3))).getMessage());
  }

  @Test
  void householderQrReconstructsTheMatrix() {
    double[][] a = {{2, -1, 0}, {1, 3, 2}, {0, 1, 4}, {5, 0, 1}};
    double[][] q = Init.householderQ(a, 4, 3);
    // R = Q^T A is upper triangular with a positive diagonal, and Q R = A
    double[][] r = new double[3][3];
    for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) for (int k = 0; k < 4; k++) r[i][j] += q[k][i] * a[k][j];
    for (int i = 0; i < 3; i++) {
      assertTrue(r[i][i] > 0);
      for (int j = 0; j < i; j++) assertEquals(0, r[i][j], 1e-12);
    }
    for (int i = 0; i < 4; i++) {
      for (int j = 0; j < 3; j++) {
        double s = 0;
        for (int k = 0; k < 3; k++) s += q[i][k] * r[k][j];
        assertEquals(a[i][j], s, 1e-12);
      }
    }
  }

  @Test
  void layerDefaultsMatchPyTorchsRanges() {
    Linear l = new Linear(400, 300, true, new Generator(5));
    double b = 1 / Math.sqrt(400);
    double[] w = values(l.weight());
    for (double x : w) assertTrue(Math.abs(x) <= b);
    assertEquals(b / Math.sqrt(3), std(w), 0.02 * b);
    for (double x : values(l.bias())) assertTrue(Math.abs(x) <= b);
    Bilinear bl = new Bilinear(25, 7, 30, true, new Generator(5));
    for (double x : values(bl.weight())) assertTrue(Math.abs(x) <= 0.2);
    // the same generator seed gives the same layer
    assertArrayEquals(new Linear(5, 4, true, new Generator(9)).weight().toFloatArray(),
        new Linear(5, 4, true, new Generator(9)).weight().toFloatArray());
  }
}
