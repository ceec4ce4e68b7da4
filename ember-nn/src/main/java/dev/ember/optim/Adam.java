package dev.ember.optim;

import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * Adam (Kingma and Ba, https://arxiv.org/abs/1412.6980), as {@code torch.optim.Adam}:
 * <pre>
 *   g = grad (negated when maximize) + weight_decay * p
 *   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g^2
 *   v' = amsgrad ? (vmax = max(vmax, v)) : v
 *   p = p - lr / (1 - beta1^t) * m / (sqrt(v') / sqrt(1 - beta2^t) + eps)
 * </pre>
 * The division by sqrt(1 - beta2^t) is a multiplication by its reciprocal, computed once per step: one
 * division per element fewer, and a denominator within an ulp of torch's.
 * Options (defaults): {@code lr} (1e-3), {@code betas} ((0.9, 0.999)), {@code eps} (1e-8),
 * {@code weight_decay} (0, L2 added to the gradient), {@code amsgrad} (false),
 * {@code maximize} (false). State: {@code step}, {@code exp_avg}, {@code exp_avg_sq},
 * {@code max_exp_avg_sq} (amsgrad). {@link AdamW} decouples the weight decay.
 * <pre>{@code
 * var opt = new Adam(model.parameters(), 1e-3);
 * loss.backward();
 * opt.step();
 * opt.zeroGrad();
 * }</pre>
 */
public class Adam extends Optimizer {
  /** Whether to keep the maximum of the second moments (AMSGrad). */
  static final Hyper.Flag AMSGRAD = Hyper.flag("amsgrad");

  private final boolean decoupled;
  /** The options of the group stepped last, read from it once per change of its options, not once per parameter. */
  private Options options;

  /**
   * A group's options as numbers: seven string-keyed map reads per parameter made the optimizer's per-parameter
   * method big (the JIT inlines each {@code String.hashCode}) for values that change at most once per step.
   */
  private record Options(ParamGroup group, int version, double lr, double b1, double b2, double eps, double wd,
      boolean ams, double sign) {
    static Options of(ParamGroup g) {
      return new Options(g, g.version(), Hyper.LR.of(g), Hyper.BETAS.first(g), Hyper.BETAS.second(g),
          Hyper.EPS.of(g), Hyper.WEIGHT_DECAY.of(g), AMSGRAD.of(g), Hyper.MAXIMIZE.of(g) ? -1 : 1);
    }
  }

  /** Adam with learning rate {@code lr} and the other defaults. */
  public Adam(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** Adam with options overriding the defaults (lr, betas, eps, weight_decay, amsgrad, maximize). */
  public Adam(List<?> params, Map<String, ?> hyper) {
    this("Adam", params, hyper, 0.0, false);
  }

  Adam(String name, List<?> params, Map<String, ?> hyper, double defaultDecay, boolean decoupled) {
    super(name, params, options(defaultDecay), hyper);
    this.decoupled = decoupled;
  }

  private static List<Hyper.Default> options(double weightDecay) {
    return List.of(Hyper.LR.is(1e-3), Hyper.BETAS.is(0.9, 0.999), Hyper.EPS.is(1e-8),
        Hyper.WEIGHT_DECAY.is(weightDecay), AMSGRAD.is(false), Hyper.MAXIMIZE.is(false));
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    Options o = options;
    if (o == null || o.group() != g || o.version() != g.version()) options = o = Options.of(g);
    double lr = o.lr();
    double b1 = o.b1(), b2 = o.b2();
    double eps = o.eps();
    double wd = o.wd();
    boolean ams = o.ams();
    double sign = o.sign();
    if (!state.containsKey("exp_avg")) {
      state.put("step", Tensor.scalar(0.0, dev.ember.tensor.DType.F64));
      state.put("exp_avg", zerosLike(param));
      state.put("exp_avg_sq", zerosLike(param));
      if (ams) state.put("max_exp_avg_sq", zerosLike(param));
    }
    if (ams && !state.containsKey("max_exp_avg_sq")) state.put("max_exp_avg_sq", zerosLike(param));
    double t = incrementStep(state);
    double stepSize = lr / (1 - Math.pow(b1, t));
    double invBc2Sqrt = 1 / Math.sqrt(1 - Math.pow(b2, t));
    // decoupled (AdamW): p *= 1 - lr * wd; coupled (Adam): g += wd * p
    double decay = decoupled ? 1 - lr * wd : 1;
    double l2 = decoupled ? 0 : wd;
    kernels(param).adam(param, grad, state.get("exp_avg"), state.get("exp_avg_sq"),
        ams ? state.get("max_exp_avg_sq") : null, sign, l2, decay, b1, b2, eps, stepSize, invBc2Sqrt);
  }
}
