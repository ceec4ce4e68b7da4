package dev.ember.testing;

import dev.ember.autograd.Grad;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * Float64 gradient check against central differences (as torch.autograd.gradcheck): for a random
 * upstream gradient v, the analytic gradient of sum(f(x) * v) must match
 * (L(x + eps) - L(x - eps)) / 2eps for every element of every input that requires grad.
 */
public final class GradCheck {
  public static final double EPS = 1e-6;
  public static final double ATOL = 1e-5;
  public static final double RTOL = 1e-3;

  private GradCheck() {}

  /**
   * Checks {@code f} at {@code inputs} (F64 tensors; those with requiresGrad are checked). Inputs
   * may be non-contiguous views but must not alias (no expanded stride-0 views).
   */
  public static void check(String name, Function<List<Tensor>, Tensor> f, List<Tensor> inputs) {
    Generator gen = new Generator(42);
    Tensor out = f.apply(inputs);
    if (!out.requiresGrad()) {
      throw new AssertionError("gradcheck " + name + ": output does not require grad");
    }
    Tensor v = Tensor.randn(gen, DType.F64, out.shape());
    for (Tensor x : inputs) x.setGrad(null);
    out.backward(v);
    for (int i = 0; i < inputs.size(); i++) {
      Tensor x = inputs.get(i);
      if (!x.requiresGrad()) continue;
      if (x.dtype() != DType.F64) throw new AssertionError("gradcheck " + name + ": input " + i + " is not float64");
      Tensor analytic = x.grad() == null ? Tensor.zeros(DType.F64, x.shape()) : x.grad();
      if (!Arrays.equals(analytic.shape(), x.shape())) {
        throw new AssertionError("gradcheck " + name + ": gradient of input " + i + " has shape "
            + Arrays.toString(analytic.shape()) + ", input has " + Arrays.toString(x.shape()));
      }
      double[] an = analytic.toDoubleArray();
      Storage s = x.storage();
      int[] shape = x.shape();
      int[] strides = x.strides();
      for (int e = 0; e < an.length; e++) {
        int off = x.offset();
        int rem = e;
        for (int d = shape.length - 1; d >= 0; d--) {
          off += (rem % shape[d]) * strides[d];
          rem /= shape[d];
        }
        double orig = s.getDouble(off);
        double numeric;
        try (var ignored = Grad.off()) {
          s.setDouble(off, orig + EPS);
          double plus = f.apply(inputs).mul(v).sum().item();
          s.setDouble(off, orig - EPS);
          double minus = f.apply(inputs).mul(v).sum().item();
          numeric = (plus - minus) / (2 * EPS);
        } finally {
          s.setDouble(off, orig);
        }
        double diff = Math.abs(an[e] - numeric);
        if (!(diff <= ATOL + RTOL * Math.abs(numeric))) {
          throw new AssertionError(String.format(Locale.ROOT,
              "gradcheck %s: d out / d in%d%s mismatch: analytic=%.6g, numeric=%.6g, |diff|=%.2g > atol + rtol*|numeric|"
                  + " = %.2g (F64, eps=%.0e)", name, i, Arrays.toString(new Arr(an, shape).index(e)), an[e], numeric,
              diff, ATOL + RTOL * Math.abs(numeric), EPS));
        }
      }
    }
  }
}
