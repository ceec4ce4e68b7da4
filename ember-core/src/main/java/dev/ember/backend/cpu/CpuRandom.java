package dev.ember.backend.cpu;

import dev.ember.backend.RandomKernels;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.HalfFloats;
import dev.ember.tensor.Storage;

/**
 * The random fills on the CPU: the generator writes the storage arrays directly. A BF16/F16 view is computed in
 * float32 and rounded once to the half dtype: its uniform draws keep the half dtype's significand bits of each output,
 * as torch's; its normal draws are float32's (torch's half Box-Muller, which runs in the half dtype, is not followed).
 */
final class CpuRandom implements RandomKernels {
  CpuRandom() {}

  @Override
  public void uniform(View out, double from, double to, Generator gen) {
    Storage s = out.storage();
    if (out.dtype().isHalf()) { // as torch's uniform_real_distribution<Half/BFloat16>: the bounds in the dtype first
      double lo = half(out.dtype(), from);
      double hi = half(out.dtype(), to);
      narrow(out, floats(out, f -> gen.fillUniform(f, 0, f.length, lo, hi, out.dtype().digits())));
    }
    else if (out.dtype() == DType.F32) gen.fillUniform(s.floats(), out.offset(), (int) out.numel(), from, to);
    else gen.fillUniform(s.doubles(), out.offset(), (int) out.numel(), from, to);
  }

  @Override
  public void normal(View out, double mean, double std, Generator gen) {
    Storage s = out.storage();
    if (out.dtype().isHalf()) narrow(out, floats(out, f -> gen.fillNormal(f, 0, f.length, mean, std)));
    else if (out.dtype() == DType.F32) gen.fillNormal(s.floats(), out.offset(), (int) out.numel(), mean, std);
    else gen.fillNormal(s.doubles(), out.offset(), (int) out.numel(), mean, std);
  }

  /** {@code v} rounded to the half dtype. */
  private static double half(DType dtype, double v) {
    float f = (float) v;
    return dtype == DType.BF16 ? HalfFloats.bf16ToFloat(HalfFloats.bf16(f)) : HalfFloats.f16ToFloat(HalfFloats.f16(f));
  }

  /** A float array of out's size filled by {@code fill}. */
  private static float[] floats(View out, java.util.function.Consumer<float[]> fill) {
    float[] f = new float[(int) out.numel()];
    fill.accept(f);
    return f;
  }

  /** Writes float32 values into a half view (contiguous from its offset), each rounded once. */
  private static void narrow(View out, float[] f) {
    Storage s = out.storage();
    int o = out.offset();
    for (int i = 0; i < f.length; i++) s.setDouble(o + i, f[i]);
  }

  /** PyTorch's method: exact in distribution, no rejection loop. */
  @Override
  public void truncatedNormal(View out, double mean, double std, double a, double b, Generator gen) {
    double lo = normCdf((a - mean) / std), hi = normCdf((b - mean) / std);
    // PyTorch: uniform_(2 lo - 1, 2 hi - 1), erfinv_, mul_(std sqrt 2), add_(mean), clamp_(a, b), each in the
    // tensor's type (a half view: in float32, rounded once at the end)
    double scale = std * Math.sqrt(2);
    if (out.dtype().isHalf()) {
      float[] v = floats(out, f -> gen.fillUniform(f, 0, f.length, 2 * lo - 1, 2 * hi - 1));
      for (int i = 0; i < v.length; i++) {
        v[i] = Math.min((float) b, Math.max((float) a, (float) erfinv(v[i]) * (float) scale + (float) mean));
      }
      narrow(out, v);
      return;
    }
    uniform(out, 2 * lo - 1, 2 * hi - 1, gen);
    int o = out.offset();
    int n = (int) out.numel();
    if (out.dtype() == DType.F32) {
      float[] v = out.storage().floats();
      for (int i = o; i < o + n; i++) {
        v[i] = Math.min((float) b, Math.max((float) a, (float) erfinv(v[i]) * (float) scale + (float) mean));
      }
    } else {
      double[] v = out.storage().doubles();
      for (int i = o; i < o + n; i++) v[i] = Math.min(b, Math.max(a, erfinv(v[i]) * scale + mean));
    }
  }

  @Override
  public void bernoulli(View out, double keepProb, double value, Generator gen) {
    Storage s = out.storage();
    int o = out.offset();
    int n = (int) out.numel();
    gen.fillBernoulli(s, o, n, keepProb, value);
  }

  private static double normCdf(double x) {
    return 0.5 * ScalarKernels.erfc(-x / Math.sqrt(2));
  }

  /** Inverse error function: Giles' approximation refined by two Newton steps on erf (double accuracy). */
  static double erfinv(double y) {
    if (y <= -1) return y == -1 ? Double.NEGATIVE_INFINITY : Double.NaN;
    if (y >= 1) return y == 1 ? Double.POSITIVE_INFINITY : Double.NaN;
    double w = -Math.log((1 - y) * (1 + y));
    double x;
    if (w < 5) {
      w -= 2.5;
      double p = 2.81022636e-08;
      p = 3.43273939e-07 + p * w;
      p = -3.5233877e-06 + p * w;
      p = -4.39150654e-06 + p * w;
      p = 0.00021858087 + p * w;
      p = -0.00125372503 + p * w;
      p = -0.00417768164 + p * w;
      p = 0.246640727 + p * w;
      p = 1.50140941 + p * w;
      x = p * y;
    } else {
      w = Math.sqrt(w) - 3;
      double p = -0.000200214257;
      p = 0.000100950558 + p * w;
      p = 0.00134934322 + p * w;
      p = -0.00367342844 + p * w;
      p = 0.00573950773 + p * w;
      p = -0.0076224613 + p * w;
      p = 0.00943887047 + p * w;
      p = 1.00167406 + p * w;
      p = 2.83297682 + p * w;
      x = p * y;
    }
    for (int i = 0; i < 2; i++) {
      double err = ScalarKernels.erf(x) - y;
      x -= err / (2 / Math.sqrt(Math.PI) * Math.exp(-x * x));
    }
    return x;
  }
}
