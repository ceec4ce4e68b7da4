package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * RMSprop (Hinton, lecture 6e; centered variant from Graves 2013), as {@code torch.optim.RMSprop}:
 * <pre>
 *   g = grad (negated when maximize) + weight_decay * p
 *   s = alpha * s + (1 - alpha) * g^2
 *   centered: a = alpha * a + (1 - alpha) * g;  d = sqrt(s - a^2) + eps   else d = sqrt(s) + eps
 *   momentum > 0: b = momentum * b + g / d;  p = p - lr * b        else p = p - lr * g / d
 * </pre>
 * Options (defaults): {@code lr} (1e-2), {@code alpha} (0.99), {@code eps} (1e-8),
 * {@code weight_decay} (0), {@code momentum} (0), {@code centered} (false), {@code maximize} (false).
 * State: {@code step}, {@code square_avg}, {@code momentum_buffer}, {@code grad_avg}.
 * <pre>{@code
 * var opt = new RMSprop(model.parameters(), Map.of("lr", 1e-3, "centered", true));
 * loss.backward();
 * opt.step();
 * }</pre>
 */
public final class RMSprop extends Optimizer {
  /** The smoothing constant of the running averages, in [0, 1]. */
  static final Hyper.Num ALPHA = Hyper.unitInterval("alpha");
  /** Whether to normalize by the variance estimate (s - a^2) instead of s. */
  static final Hyper.Flag CENTERED = Hyper.flag("centered");
  private static final List<Hyper.Default> OPTIONS = List.of(Hyper.LR.is(1e-2), ALPHA.is(0.99), Hyper.EPS.is(1e-8),
      Hyper.WEIGHT_DECAY.is(0), Hyper.MOMENTUM.is(0), CENTERED.is(false), Hyper.MAXIMIZE.is(false));

  /** RMSprop with learning rate {@code lr}. */
  public RMSprop(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** RMSprop with options overriding the defaults. */
  public RMSprop(List<?> params, Map<String, ?> hyper) {
    super("RMSprop", params, OPTIONS, hyper);
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    double lr = Hyper.LR.of(g), alpha = ALPHA.of(g), eps = Hyper.EPS.of(g), wd = Hyper.WEIGHT_DECAY.of(g);
    double mom = Hyper.MOMENTUM.of(g);
    boolean centered = CENTERED.of(g);
    double sign = Hyper.MAXIMIZE.of(g) ? -1 : 1;
    if (!state.containsKey("square_avg")) {
      state.put("step", Tensor.scalar(0.0, DType.F64));
      state.put("square_avg", zerosLike(param));
    }
    if (mom > 0 && !state.containsKey("momentum_buffer")) state.put("momentum_buffer", zerosLike(param));
    if (centered && !state.containsKey("grad_avg")) state.put("grad_avg", zerosLike(param));
    incrementStep(state);
    kernels(param).rmsprop(param, grad, state.get("square_avg"), centered ? state.get("grad_avg") : null,
        mom > 0 ? state.get("momentum_buffer") : null, sign, wd, alpha, eps, mom, lr);
  }
}
