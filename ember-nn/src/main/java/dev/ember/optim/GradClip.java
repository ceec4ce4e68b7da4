package dev.ember.optim;

import dev.ember.autograd.Grad;
import dev.ember.backend.OptimizerKernels;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * Gradient clipping, as {@code torch.nn.utils.clip_grad_norm_} and {@code clip_grad_value_}.
 * Parameters without a gradient are skipped. Norms are accumulated in double over fixed chunks
 * (the same on any thread count).
 */
public final class GradClip {
  private GradClip() {}

  /** {@link #clipGradNorm(Iterable, double, double, boolean)} with the 2-norm, no error on non-finite norms. */
  public static double clipGradNorm(Iterable<Tensor> params, double maxNorm) {
    return clipGradNorm(params, maxNorm, 2.0, false);
  }

  /**
   * Scales all gradients together so that their joint norm is at most {@code maxNorm}: the total
   * norm {@code ||(||g_1||_p, ..., ||g_k||_p)||_p} (the largest |g| for {@code p = +inf}) gives
   * {@code coef = min(maxNorm / (total + 1e-6), 1)} and every gradient is multiplied by it.
   *
   * @param normType p > 0, or {@code Double.POSITIVE_INFINITY}
   * @param errorIfNonfinite throw instead of scaling when the total norm is NaN or infinite
   * @return the total norm before clipping
   */
  public static double clipGradNorm(Iterable<Tensor> params, double maxNorm, double normType, boolean errorIfNonfinite) {
    if (!(normType > 0)) {
      throw new IllegalArgumentException("clip_grad_norm: norm_type must be > 0 or infinity, got " + normType);
    }
    if (!(maxNorm >= 0)) throw new IllegalArgumentException("clip_grad_norm: max_norm must be >= 0, got " + maxNorm);
    List<Tensor> grads = grads(params);
    if (grads.isEmpty()) return 0.0;
    double total = totalNorm(grads, normType);
    if (errorIfNonfinite && !Double.isFinite(total)) {
      throw new IllegalStateException("clip_grad_norm: the total norm of order " + normType + " for gradients is non-finite ("
          + total + "), so it cannot be clipped; hint: pass errorIfNonfinite=false to scale the gradients by the"
          + " non-finite norm anyway");
    }
    double coef = Math.min(maxNorm / (total + 1e-6), 1.0);
    try (Grad ignored = Grad.off()) {
      for (Tensor g : grads) g.mul_(coef);
    }
    return total;
  }

  /** Clamps every gradient element to {@code [-clipValue, clipValue]}. */
  public static void clipGradValue(Iterable<Tensor> params, double clipValue) {
    if (!(clipValue >= 0)) throw new IllegalArgumentException("clip_grad_value: clip_value must be >= 0, got " + clipValue);
    try (Grad ignored = Grad.off()) {
      for (Tensor g : grads(params)) g.clamp_(-clipValue, clipValue);
    }
  }

  /** The norm of all gradients together, without changing them (p > 0 or infinity; 0 without gradients). */
  public static double gradNorm(Iterable<Tensor> params, double normType) {
    if (!(normType > 0)) throw new IllegalArgumentException("grad_norm: norm_type must be > 0 or infinity, got " + normType);
    List<Tensor> grads = grads(params);
    return grads.isEmpty() ? 0.0 : totalNorm(grads, normType);
  }

  private static double totalNorm(List<Tensor> grads, double normType) {
    boolean inf = Double.isInfinite(normType);
    double acc = 0;
    for (Tensor g : grads) {
      Tensor c = g.contiguous();
      OptimizerKernels kernels = c.device().backend().optimizer();
      if (inf) {
        double m = kernels.absMax(c);
        acc = m > acc || Double.isNaN(m) ? m : acc;
      } else {
        // the p-th powers of the per-tensor norms, summed: the same value as PyTorch's norm of norms
        acc += kernels.powerSum(c, normType);
      }
    }
    return inf ? acc : normType == 1 ? acc : normType == 2 ? Math.sqrt(acc) : Math.pow(acc, 1.0 / normType);
  }

  private static List<Tensor> grads(Iterable<Tensor> params) {
    List<Tensor> out = new ArrayList<>();
    for (Tensor p : params) {
      Tensor g = p.grad();
      if (g == null) continue;
      if (g.dtype() != DType.F32 && g.dtype() != DType.F64) {
        throw dev.ember.tensor.Check.fail("clip_grad_norm", "gradients must be float32 or float64, got "
            + g.dtype().torchName(), "grad", g);
      }
      out.add(g);
    }
    return out;
  }
}
