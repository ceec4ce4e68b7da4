package dev.ember.nn.init;

import dev.ember.autograd.Grad;
import dev.ember.backend.RandomKernels;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.Locale;

/**
 * Parameter initialisers, as {@code torch.nn.init}: each fills a tensor in place (without
 * recording on the tape) and returns it. Every method has an overload taking a {@link Generator};
 * without one the global generator is used ({@link Generator#manualSeed(long)} seeds it).
 */
public final class Init {
  private Init() {}

  /** Fan modes of the Kaiming initialisers. */
  public enum FanMode { FAN_IN, FAN_OUT }

  /**
   * PyTorch's {@code calculate_gain}: linear, convolutions and sigmoid 1, tanh 5/3, relu sqrt(2), leaky_relu
   * sqrt(2 / (1 + slope^2)) (slope defaults to 0.01), selu 3/4.
   */
  public static double calculateGain(String nonlinearity, double param) {
    return switch (nonlinearity.toLowerCase(Locale.ROOT)) {
      case "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
          "sigmoid", "identity" -> 1.0;
      case "tanh" -> 5.0 / 3;
      case "relu" -> Math.sqrt(2.0);
      case "leaky_relu" -> Math.sqrt(2.0 / (1 + param * param));
      case "selu" -> 3.0 / 4;
      default -> throw new IllegalArgumentException("calculateGain: unsupported nonlinearity '" + nonlinearity
          + "'; expected linear, conv1d/2d/3d, conv_transpose1d/2d/3d, sigmoid, tanh, relu, leaky_relu, selu");
    };
  }

  public static double calculateGain(String nonlinearity) {
    return calculateGain(nonlinearity, 0.01);
  }

  /** {fan_in, fan_out} of a weight: dims 1 and 0 times the receptive field (the product of dims 2..). */
  public static long[] fans(Tensor t) {
    if (t.dim() < 2) {
      throw new IllegalArgumentException("init: fan in and fan out need a tensor of at least 2 dims, got shape "
          + Arrays.toString(t.shape()));
    }
    long receptive = 1;
    for (int d = 2; d < t.dim(); d++) receptive *= t.size(d);
    return new long[] {t.size(1) * receptive, t.size(0) * receptive};
  }

  private static Tensor fill(Tensor t, Tensor values) {
    try (Grad ignored = Grad.off()) {
      t.copy_(values.dtype() == t.dtype() ? values : values.to(t.dtype()));
    }
    return t;
  }

  private static DType sampleType(Tensor t) {
    if (!t.dtype().isFloatingPoint()) {
      throw new IllegalArgumentException("init: tensor must be floating point, got " + t.dtype() + " "
          + Arrays.toString(t.shape()));
    }
    return t.dtype();
  }

  // ---------------------------------------------------------------------------------------------

  /** U(a, b), drawn as PyTorch's {@code uniform_} draws it (the same seed gives the same values). */
  public static Tensor uniform_(Tensor t, double a, double b, Generator gen) {
    if (!(a <= b)) throw new IllegalArgumentException("uniform_: need a <= b, got a=" + a + ", b=" + b);
    return fill(t, uniform(t.shape(), sampleType(t), a, b, gen));
  }

  /** A fresh tensor of U(a, b) values drawn in {@code dtype}, as PyTorch draws them. */
  private static Tensor uniform(int[] shape, DType dtype, double a, double b, Generator gen) {
    Tensor u = Tensor.empty(dtype, shape);
    random().uniform(u, a, b, gen);
    return u;
  }

  /** The random fills of the device fresh sample tensors are made on. */
  private static RandomKernels random() {
    return Device.CPU.backend().random();
  }

  public static Tensor uniform_(Tensor t, double a, double b) {
    return uniform_(t, a, b, Generator.global());
  }

  /** N(mean, std^2), drawn as PyTorch's {@code normal_} draws it. */
  public static Tensor normal_(Tensor t, double mean, double std, Generator gen) {
    if (!(std >= 0)) throw new IllegalArgumentException("normal_: std must be >= 0, got " + std);
    return fill(t, gaussian(t.shape(), sampleType(t), mean, std, gen));
  }

  /** A fresh tensor of N(mean, std^2) values drawn in {@code dtype}, as PyTorch draws them. */
  private static Tensor gaussian(int[] shape, DType dtype, double mean, double std, Generator gen) {
    Tensor n = Tensor.empty(dtype, shape);
    random().normal(n, mean, std, gen);
    return n;
  }

  public static Tensor normal_(Tensor t, double mean, double std) {
    return normal_(t, mean, std, Generator.global());
  }

  public static Tensor constant_(Tensor t, double value) {
    try (Grad ignored = Grad.off()) {
      t.fill_(value);
    }
    return t;
  }

  public static Tensor zeros_(Tensor t) {
    return constant_(t, 0);
  }

  public static Tensor ones_(Tensor t) {
    return constant_(t, 1);
  }

  /** Xavier/Glorot uniform: U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)). */
  public static Tensor xavierUniform_(Tensor t, double gain, Generator gen) {
    long[] f = fans(t);
    double bound = gain * Math.sqrt(6.0 / (f[0] + f[1]));
    return uniform_(t, -bound, bound, gen);
  }

  public static Tensor xavierUniform_(Tensor t) {
    return xavierUniform_(t, 1.0, Generator.global());
  }

  /** Xavier/Glorot normal: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)). */
  public static Tensor xavierNormal_(Tensor t, double gain, Generator gen) {
    long[] f = fans(t);
    return normal_(t, 0, gain * Math.sqrt(2.0 / (f[0] + f[1])), gen);
  }

  public static Tensor xavierNormal_(Tensor t) {
    return xavierNormal_(t, 1.0, Generator.global());
  }

  private static double kaimingStd(Tensor t, double a, FanMode mode, String nonlinearity) {
    long[] f = fans(t);
    long fan = mode == FanMode.FAN_IN ? f[0] : f[1];
    if (fan == 0) {
      throw new IllegalArgumentException("init: cannot initialise a tensor with a zero fan: shape " + Arrays.toString(t.shape()));
    }
    return calculateGain(nonlinearity, a) / Math.sqrt(fan);
  }

  /**
   * Kaiming/He uniform: U(-b, b), b = gain * sqrt(3 / fan). PyTorch's defaults are a = 0, fan_in,
   * leaky_relu (so gain sqrt(2)); Linear and Conv use a = sqrt(5).
   */
  public static Tensor kaimingUniform_(Tensor t, double a, FanMode mode, String nonlinearity, Generator gen) {
    double bound = Math.sqrt(3.0) * kaimingStd(t, a, mode, nonlinearity);
    return uniform_(t, -bound, bound, gen);
  }

  public static Tensor kaimingUniform_(Tensor t) {
    return kaimingUniform_(t, 0, FanMode.FAN_IN, "leaky_relu", Generator.global());
  }

  /** Kaiming/He normal: N(0, std^2), std = gain / sqrt(fan). */
  public static Tensor kaimingNormal_(Tensor t, double a, FanMode mode, String nonlinearity, Generator gen) {
    return normal_(t, 0, kaimingStd(t, a, mode, nonlinearity), gen);
  }

  public static Tensor kaimingNormal_(Tensor t) {
    return kaimingNormal_(t, 0, FanMode.FAN_IN, "leaky_relu", Generator.global());
  }

  /**
   * N(mean, std^2) truncated to [a, b], by PyTorch's method: uniform between the two CDF values,
   * then the inverse normal CDF; exact in distribution, no rejection loop.
   */
  public static Tensor truncNormal_(Tensor t, double mean, double std, double a, double b, Generator gen) {
    if (!(a < b)) throw new IllegalArgumentException("truncNormal_: need a < b, got a=" + a + ", b=" + b);
    if (!(std > 0)) throw new IllegalArgumentException("truncNormal_: std must be > 0, got " + std);
    Tensor u = Tensor.empty(sampleType(t), t.shape());
    random().truncatedNormal(u, mean, std, a, b, gen);
    return fill(t, u);
  }

  public static Tensor truncNormal_(Tensor t, double mean, double std) {
    return truncNormal_(t, mean, std, -2, 2, Generator.global());
  }

  /**
   * A (semi-)orthogonal matrix, as PyTorch: QR of a Gaussian matrix (transposed when it is wide),
   * Q's columns signed by diag(R) so the result is uniformly distributed, times {@code gain}.
   * Tensors of more than 2 dims are treated as [size(0), rest].
   */
  public static Tensor orthogonal_(Tensor t, double gain, Generator gen) {
    if (t.dim() < 2) {
      throw new IllegalArgumentException("orthogonal_: only tensors with 2 or more dimensions are supported, got shape "
          + Arrays.toString(t.shape()));
    }
    int rows = t.size(0);
    int cols = (int) (t.numel() / Math.max(1, rows));
    if (rows == 0 || cols == 0) return t;
    boolean wide = rows < cols;
    int m = wide ? cols : rows, n = wide ? rows : cols; // m >= n
    double[][] a = new double[m][n];
    // sample row-major [rows, cols] as PyTorch does, then transpose if wide
    double[] g = gaussian(new int[] {rows * cols}, sampleType(t), 0, 1, gen).toDoubleArray(); // in the tensor's type, as PyTorch
    for (int r = 0; r < rows; r++) {
      for (int c = 0; c < cols; c++) {
        if (wide) a[c][r] = g[r * cols + c];
        else a[r][c] = g[r * cols + c];
      }
    }
    double[][] q = householderQ(a, m, n);
    double[] out = new double[rows * cols];
    for (int r = 0; r < rows; r++) {
      for (int c = 0; c < cols; c++) out[r * cols + c] = gain * (wide ? q[c][r] : q[r][c]);
    }
    return fill(t, Tensor.of(out, t.shape()));
  }

  public static Tensor orthogonal_(Tensor t) {
    return orthogonal_(t, 1.0, Generator.global());
  }

  /**
   * Reduced QR by Householder reflections; returns Q (m x n) with each column multiplied by the sign
   * of R's diagonal entry, so that R's diagonal is positive (the unique QR).
   */
  static double[][] householderQ(double[][] a, int m, int n) {
    double[][] r = new double[m][];
    for (int i = 0; i < m; i++) r[i] = a[i].clone();
    double[][] vs = new double[n][];
    for (int k = 0; k < n; k++) {
      double norm = 0;
      for (int i = k; i < m; i++) norm += r[i][k] * r[i][k];
      norm = Math.sqrt(norm);
      double[] v = new double[m];
      if (norm == 0) {
        vs[k] = v;
        continue;
      }
      double alpha = r[k][k] > 0 ? -norm : norm;
      for (int i = k; i < m; i++) v[i] = r[i][k];
      v[k] -= alpha;
      double vn = 0;
      for (int i = k; i < m; i++) vn += v[i] * v[i];
      if (vn > 0) {
        for (int j = k; j < n; j++) {
          double s = 0;
          for (int i = k; i < m; i++) s += v[i] * r[i][j];
          s = 2 * s / vn;
          for (int i = k; i < m; i++) r[i][j] -= s * v[i];
        }
      }
      vs[k] = v;
    }
    // Q = H_0 H_1 ... H_{n-1} applied to the first n columns of the identity
    double[][] q = new double[m][n];
    for (int j = 0; j < n; j++) q[j][j] = 1;
    for (int k = n - 1; k >= 0; k--) {
      double[] v = vs[k];
      double vn = 0;
      for (int i = k; i < m; i++) vn += v[i] * v[i];
      if (vn == 0) continue;
      for (int j = 0; j < n; j++) {
        double s = 0;
        for (int i = k; i < m; i++) s += v[i] * q[i][j];
        s = 2 * s / vn;
        for (int i = k; i < m; i++) q[i][j] -= s * v[i];
      }
    }
    for (int j = 0; j < n; j++) {
      if (r[j][j] < 0) for (int i = 0; i < m; i++) q[i][j] = -q[i][j];
    }
    return q;
  }
}
