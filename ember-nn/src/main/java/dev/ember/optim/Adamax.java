package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * Adamax (Kingma and Ba, https://arxiv.org/abs/1412.6980, section 7), as {@code torch.optim.Adamax}:
 * <pre>
 *   g = grad (negated when maximize) + weight_decay * p
 *   m = beta1 * m + (1 - beta1) * g;   u = max(beta2 * u, |g| + eps)
 *   p = p - lr / (1 - beta1^t) * m / u
 * </pre>
 * Options (defaults): {@code lr} (2e-3), {@code betas} ((0.9, 0.999)), {@code eps} (1e-8),
 * {@code weight_decay} (0), {@code maximize} (false). State: {@code step}, {@code exp_avg}, {@code exp_inf}.
 * <pre>{@code
 * var opt = new Adamax(model.parameters(), 2e-3);
 * loss.backward();
 * opt.step();
 * }</pre>
 */
public final class Adamax extends Optimizer {
  private static final List<Hyper.Default> OPTIONS = List.of(Hyper.LR.is(2e-3), Hyper.BETAS.is(0.9, 0.999),
      Hyper.EPS.is(1e-8), Hyper.WEIGHT_DECAY.is(0), Hyper.MAXIMIZE.is(false));

  /** Adamax with learning rate {@code lr}. */
  public Adamax(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** Adamax with options overriding the defaults. */
  public Adamax(List<?> params, Map<String, ?> hyper) {
    super("Adamax", params, OPTIONS, hyper);
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    double lr = Hyper.LR.of(g), b1 = Hyper.BETAS.first(g), b2 = Hyper.BETAS.second(g), eps = Hyper.EPS.of(g);
    double wd = Hyper.WEIGHT_DECAY.of(g);
    double sign = Hyper.MAXIMIZE.of(g) ? -1 : 1;
    if (!state.containsKey("exp_avg")) {
      state.put("step", Tensor.scalar(0.0, DType.F64));
      state.put("exp_avg", zerosLike(param));
      state.put("exp_inf", zerosLike(param));
    }
    double t = incrementStep(state);
    double clr = lr / (1 - Math.pow(b1, t));
    kernels(param).adamax(param, grad, state.get("exp_avg"), state.get("exp_inf"), sign, wd, b1, b2, eps, clr);
  }
}
