package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * RAdam (Liu et al., https://arxiv.org/abs/1908.03265), as {@code torch.optim.RAdam}: Adam whose
 * adaptive step is switched on only once the variance of the adaptive rate is tractable:
 * <pre>
 *   g = grad (negated when maximize) + weight_decay * p;  m, v as in Adam
 *   rho_inf = 2 / (1 - beta2) - 1;   rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
 *   rho_t > 5:  r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
 *               p = p - lr * m / (1 - beta1^t) * r * sqrt(1 - beta2^t) / (sqrt(v) + eps)
 *   otherwise:  p = p - lr * m / (1 - beta1^t)
 * </pre>
 * Options (defaults): {@code lr} (1e-3), {@code betas} ((0.9, 0.999)), {@code eps} (1e-8),
 * {@code weight_decay} (0), {@code maximize} (false). State: {@code step}, {@code exp_avg}, {@code exp_avg_sq}.
 * <pre>{@code
 * var opt = new RAdam(model.parameters(), 1e-3);
 * loss.backward();
 * opt.step();
 * }</pre>
 */
public final class RAdam extends Optimizer {
  private static final List<Hyper.Default> OPTIONS = List.of(Hyper.LR.is(1e-3), Hyper.BETAS.is(0.9, 0.999),
      Hyper.EPS.is(1e-8), Hyper.WEIGHT_DECAY.is(0), Hyper.MAXIMIZE.is(false));

  /** RAdam with learning rate {@code lr}. */
  public RAdam(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** RAdam with options overriding the defaults. */
  public RAdam(List<?> params, Map<String, ?> hyper) {
    super("RAdam", params, OPTIONS, hyper);
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    double lr = Hyper.LR.of(g), b1 = Hyper.BETAS.first(g), b2 = Hyper.BETAS.second(g), eps = Hyper.EPS.of(g);
    double wd = Hyper.WEIGHT_DECAY.of(g);
    double sign = Hyper.MAXIMIZE.of(g) ? -1 : 1;
    if (!state.containsKey("exp_avg")) {
      state.put("step", Tensor.scalar(0.0, DType.F64));
      state.put("exp_avg", zerosLike(param));
      state.put("exp_avg_sq", zerosLike(param));
    }
    double t = incrementStep(state);
    double bc1 = 1 - Math.pow(b1, t), bc2 = 1 - Math.pow(b2, t);
    double rhoInf = 2 / (1 - b2) - 1;
    double rhoT = rhoInf - 2 * t * Math.pow(b2, t) / bc2;
    boolean adaptive = rhoT > 5;
    double rect = adaptive ? Math.sqrt((rhoT - 4) * (rhoT - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rhoT)) : 0;
    // adaptive: p -= (lr / bc1 * rect * sqrt(bc2)) * m / (sqrt(v) + eps); else p -= (lr / bc1) * m
    double scale = adaptive ? lr / bc1 * rect * Math.sqrt(bc2) : lr / bc1;
    kernels(param)
        .radam(param, grad, state.get("exp_avg"), state.get("exp_avg_sq"), sign, wd, b1, b2, eps, scale, adaptive);
  }
}
