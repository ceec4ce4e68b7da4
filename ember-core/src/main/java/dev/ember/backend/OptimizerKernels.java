package dev.ember.backend;

/**
 * The fused optimizer updates a device offers: one pass per parameter tensor that reads the gradient and the
 * state and writes the parameter and the state in place, plus the reductions the optimizers need (the norms of
 * gradient clipping, LAMB's trust ratio, SAM's perturbation). The optimizers in {@code dev.ember.optim} compute
 * the per-step coefficients (bias corrections, learning rates) and call one method per parameter.
 *
 * <p>Every view is contiguous, of one floating dtype (F32 or F64) and of the parameter's shape. A float32
 * gradient whose storage is {@linkplain dev.ember.tensor.Deferred deferred} (a wide Linear weight's g^T x) is
 * taken block by block in the update methods that read a gradient elementwise, so it is never written whole;
 * the results are the same bits as with the gradient computed first. Sums are taken over chunks whose
 * boundaries do not depend on the thread count and combined in a fixed order. In every formula {@code sign}
 * is -1 to maximize, else 1, and {@code g = sign * grad + wd * p} unless the rule says otherwise.
 */
public interface OptimizerKernels {
  /** SGD without momentum: {@code p = p - lr * (sign * grad + wd * p)}. */
  void sgd(View param, View grad, double lr, double wd, double sign);

  /**
   * SGD with momentum: {@code d = sign * grad + wd * p; buf = keep * buf + add * d;
   * p = p - lr * (nesterov ? d + momentum * buf : buf)}.
   */
  void sgdMomentum(View param, View grad, View buf, double lr, double wd, double sign, double keep, double add,
      boolean nesterov, double momentum);

  /**
   * Adam and AdamW: {@code g = sign * grad + l2 * p; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2};
   * with {@code vmax} (AMSGrad, else null) {@code v' = vmax = max(vmax, v)};
   * {@code p = p * decay - stepSize * m / (sqrt(v') * invBc2Sqrt + eps)}.
   */
  void adam(View param, View grad, View m, View v, View vmax, double sign, double l2, double decay, double b1,
      double b2, double eps, double stepSize, double invBc2Sqrt);

  /** Adamax: {@code m = b1 m + (1 - b1) g; u = max(b2 u, |g| + eps); p = p - clr * m / u}. */
  void adamax(View param, View grad, View m, View u, double sign, double wd, double b1, double b2, double eps,
      double clr);

  /**
   * Adadelta: {@code s = rho s + (1 - rho) g^2; d = sqrt(u + eps) / sqrt(s + eps) * g;
   * u = rho u + (1 - rho) d^2; p = p - lr * d}.
   */
  void adadelta(View param, View grad, View s, View u, double sign, double wd, double rho, double eps, double lr);

  /** Adagrad: {@code s = s + g^2; p = p - clr * g / (sqrt(s) + eps)}. */
  void adagrad(View param, View grad, View s, double sign, double wd, double eps, double clr);

  /**
   * RMSprop: {@code s = alpha s + (1 - alpha) g^2}; centered ({@code a} non-null):
   * {@code a = alpha a + (1 - alpha) g, d = sqrt(s - a^2) + eps}, else {@code d = sqrt(s) + eps}; with a momentum
   * buffer {@code b} (else null) {@code b = momentum b + g / d, p = p - lr b}, else {@code p = p - lr g / d}.
   */
  void rmsprop(View param, View grad, View s, View a, View b, double sign, double wd, double alpha, double eps,
      double momentum, double lr);

  /**
   * NAdam: m and v as in Adam; {@code denom = sqrt(v / bc2) + eps; p = p - cg * g / denom - cm * m / denom}.
   */
  void nadam(View param, View grad, View m, View v, double sign, double wd, double b1, double b2, double bc2,
      double eps, double cg, double cm);

  /** RAdam: m and v as in Adam; {@code p = p - scale * (adaptive ? m / (sqrt(v) + eps) : m)}. */
  void radam(View param, View grad, View m, View v, double sign, double wd, double b1, double b2, double eps,
      double scale, boolean adaptive);

  /**
   * Lion: {@code g = sign * grad; p = p * decay - lr * signum(b1 m + (1 - b1) g); m = b2 m + (1 - b2) g}.
   */
  void lion(View param, View grad, View m, double sign, double decay, double lr, double b1, double b2);

  /**
   * LAMB's first pass: {@code m = b1 m + (1 - b1) grad; v = b2 v + (1 - b2) grad^2} and the sums
   * {@code {||p||^2, ||r||^2}} with {@code r = (m / bc1) / (sqrt(v / bc2) + eps) + wd * p}, in double.
   */
  double[] lambMoments(View param, View grad, View m, View v, double b1, double b2, double bc1, double bc2, double eps,
      double wd);

  /** LAMB's second pass: {@code p = p - scale * r}, r recomputed from the stored moments as in {@link #lambMoments}. */
  void lambApply(View param, View m, View v, double bc1, double bc2, double eps, double wd, double scale);

  /**
   * SophiaG: {@code m = b1 m + (1 - b1) sign grad; p = p * decay - lr * signum(m) * min(|m| / (rhoBs h + 1e-15), 1)}.
   */
  void sophia(View param, View grad, View m, View h, double sign, double decay, double lr, double b1, double rhoBs);

  /** SophiaG's Hessian EMA: {@code h = b2 h + (1 - b2) grad^2}. */
  void sophiaHessian(View h, View grad, double b2);

  /** SAM: the sum of {@code ((adaptive ? |p| : 1) * grad)^2}, in double. */
  double samSquares(View param, View grad, boolean adaptive);

  /** SAM's ascent: {@code p = p + (adaptive ? p^2 : 1) * grad * scale}. */
  void samAscend(View param, View grad, double scale, boolean adaptive);

  /** The sum of {@code |x|^p} for p > 0 in double (gradient clipping's per-tensor norms to the p-th power). */
  double powerSum(View x, double p);

  /** The largest {@code |x|} (0 for no elements; NaN if any element is NaN): the infinity norm. */
  double absMax(View x);
}
