package dev.ember.backend.cpu;

/**
 * The update loops of the optimizers, one method per fused update, over elements {@code [lo, hi)} of
 * contiguous {@link Slot}s of one dtype. Three sets: {@link ScalarUpdateKernels#F32} (plain Java, the
 * reference), {@link ScalarUpdateKernels#F64} (the same loops in double) and {@code VectorUpdateKernels}
 * (float32 on the Vector API, loaded by name by {@link CpuOptimizer} so it is never linked when
 * {@code jdk.incubator.vector} is absent). The optimizers reach them through
 * {@link dev.ember.backend.OptimizerKernels}; each rule's formula is documented there.
 *
 * <p>The two float32 sets evaluate every element with the same float operations in the same order (Java
 * never contracts {@code a * b + c} into an FMA, and sqrt, division, min, max, abs are exact IEEE
 * operations in both), so their results are bitwise equal. The only exceptions are the sums of
 * squares ({@link #lambMoments}, {@link #samSquares}), which the vector set accumulates in
 * per-lane double partials (still fixed per chunk, so independent of the thread count).
 *
 * <p>Coefficients are passed as doubles holding values of the slots' dtype: for float32 the floats the
 * optimizers have always used (e.g. {@code (float) (1 - beta1)}).
 */
public interface UpdateKernels {
  /** "scalar", "scalar-f64" or "vector". */
  String name();

  /** SGD without momentum: {@code p = x - lr * (sign * g + wd * x)}. */
  void sgd(Slot p, Slot g, int lo, int hi, double lr, double wd, double sign);

  /**
   * SGD with momentum: {@code d = sign*g + wd*x; b = keep*b + add*d; p = x - lr * (nesterov ? d + mom*b : b)}.
   * In float32, as in {@link #adam}: the operand of {@code sign * g}, {@code keep * b}, {@code mom * b} and
   * {@code lr * step} is taken as 0 below its {@link #productFloor} (the buffer of a weight whose gradient stays 0
   * decays by the momentum per step through the subnormals otherwise). Float64 computes every term.
   */
  void sgdMomentum(Slot p, Slot g, Slot b, int lo, int hi, double lr, double wd, double sign, double keep, double add,
      boolean nesterov, double mom);

  /**
   * Adam / AdamW (and AMSGrad when {@code vmax} is non-null); see {@code Adam}. {@code invBc2Sqrt} is
   * 1 / sqrt(1 - beta2^t): the denominator is {@code sqrt(v) * invBc2Sqrt + eps}. With {@code sign} 1 and
   * {@code l2} 0 (no maximize, no L2 term) the gradient is used as it is, without the two operations.
   *
   * <p>In float32 the products that a fitted model drives into the subnormals take none
   * ({@link #productFloor}): the operand of each of {@code b1 * m}, {@code c1 * g}, {@code b2 * v},
   * {@code stepSize * m} (and {@code sign * g}, {@code l2 * x}) is taken as 0 below its product's floor, the
   * square's gradient below {@link #adamSquareFloor}. So a moment that decays reaches 0 without passing through
   * the subnormals. Only terms below the smallest normal float are dropped (the update term at most
   * MIN_NORMAL / eps, 1.2e-30); float64 computes every term. Left as they are, for their cost per element:
   * {@code x * decay} (no training makes a parameter subnormal) and a sum that cancels to a subnormal.
   */
  void adam(Slot p, Slot g, Slot m, Slot v, Slot vmax, int lo, int hi, double sign, double l2, double decay, double b1,
      double b2, double c1, double c2, double eps, double stepSize, double invBc2Sqrt);

  /**
   * In float32, the gradient magnitude below which Adam's second-moment term {@code (c2 * g) * g} is taken as 0:
   * {@code sqrt(MIN_NORMAL / c2)}, the square's term is then below the smallest normal float (a subnormal or 0,
   * less than half an ulp of any second moment above ~2e-31), and computing it would cost a microcode assist per
   * element on Intel CPUs (flush-to-zero hardware drops it the same way).
   */
  static double adamSquareFloor(double c2) {
    return (float) Math.sqrt(Float.MIN_NORMAL / (float) c2);
  }

  /**
   * In float32, the magnitude below which an operand {@code x} of a product {@code c * x} is taken as 0: the
   * smallest float {@code x >= MIN_NORMAL} whose product with {@code (float) |c|}, rounded to float, is a normal
   * float. Below it the product would be a subnormal (or {@code x} is one), and on Intel CPUs every subnormal
   * operand or result costs a microcode assist per element, as flush-to-zero / denormals-are-zero hardware
   * modes avoid. Adam's moments of a unit whose gradient stays 0 (a dead ReLU unit once a model fits its batches)
   * decay by beta1 per step into the subnormals and stay there ({@code 0.9 * k * 2^-149} rounds back to
   * {@code k * 2^-149} for k &lt;= 4): a seed_medium AdamW step went from ~47 to ~108 ms.
   */
  static double productFloor(double c) {
    float cf = Math.abs((float) c);
    if (!(cf > 0) || Float.isInfinite(cf)) return Float.MIN_NORMAL;
    float x = (float) Math.min(Float.MAX_VALUE, Math.max(Float.MIN_NORMAL, Float.MIN_NORMAL / (double) cf));
    while (x < Float.MAX_VALUE && cf * x < Float.MIN_NORMAL) x = Math.nextUp(x);
    while (x > Float.MIN_NORMAL && cf * Math.nextDown(x) >= Float.MIN_NORMAL) x = Math.nextDown(x);
    return x;
  }

  /** Adamax; see {@code Adamax}. */
  void adamax(Slot p, Slot g, Slot m, Slot u, int lo, int hi, double sign, double wd, double b1, double b2, double c1,
      double eps, double clr);

  /** Adadelta; see {@code Adadelta}. */
  void adadelta(Slot p, Slot g, Slot s, Slot u, int lo, int hi, double sign, double wd, double rho, double c,
      double eps, double lr);

  /** Adagrad; see {@code Adagrad}. */
  void adagrad(Slot p, Slot g, Slot s, int lo, int hi, double sign, double wd, double eps, double clr);

  /** RMSprop; {@code a} (grad_avg) is null unless centered, {@code b} (momentum buffer) null unless momentum. */
  void rmsprop(Slot p, Slot g, Slot s, Slot a, Slot b, int lo, int hi, double sign, double wd, double alpha, double c,
      double eps, double mom, double lr);

  /** NAdam; see {@code NAdam}. */
  void nadam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double sign, double wd, double b1, double b2, double c1,
      double c2, double bc2, double eps, double cg, double cm);

  /** RAdam; see {@code RAdam}. */
  void radam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double sign, double wd, double b1, double b2, double c1,
      double c2, double eps, double scale, boolean adaptive);

  /** Lion; see {@code Lion}. */
  void lion(Slot p, Slot g, Slot m, int lo, int hi, double sign, double decay, double lr, double b1, double c1,
      double b2, double c2);

  /** LAMB's first pass: updates m, v and adds ||p||^2, ||r||^2 over [lo, hi) to acc[0], acc[1]. */
  void lambMoments(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double b1, double b2, double c1, double c2,
      double bc1, double bc2, double eps, double wd, double[] acc);

  /** LAMB's second pass: {@code p = x - scale * r}, r recomputed from the stored moments. */
  void lambApply(Slot p, Slot m, Slot v, int lo, int hi, double bc1, double bc2, double eps, double wd, double scale);

  /** SophiaG's update; see {@code SophiaG}. {@code sc1} is {@code (1 - beta1) * sign}. */
  void sophia(Slot p, Slot g, Slot m, Slot h, int lo, int hi, double decay, double lr, double b1, double sc1,
      double rhoBs);

  /** SophiaG's Hessian EMA: {@code h = b2 * h + c * g * g}. */
  void sophiaEma(Slot h, Slot g, int lo, int hi, double b2, double c);

  /** SAM: the sum over [lo, hi) of {@code ((adaptive ? |p| : 1) * g)^2}, in double. */
  double samSquares(Slot p, Slot g, int lo, int hi, boolean adaptive);

  /** SAM's ascent: {@code p = x + (adaptive ? x * x : 1) * g * scale}. */
  void samAscend(Slot p, Slot g, int lo, int hi, double scale, boolean adaptive);
}
