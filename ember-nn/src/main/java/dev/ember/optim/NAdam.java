package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * NAdam (Dozat, "Incorporating Nesterov Momentum into Adam", 2016), as {@code torch.optim.NAdam}:
 * <pre>
 *   g = grad (negated when maximize) + weight_decay * p
 *   mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay));   mu_prod = mu_1 * ... * mu_t
 *   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g^2
 *   denom = sqrt(v / (1 - beta2^t)) + eps
 *   p = p - lr * (1 - mu_t) / (1 - mu_prod) * g / denom - lr * mu_{t+1} / (1 - mu_prod * mu_{t+1}) * m / denom
 * </pre>
 * Options (defaults): {@code lr} (2e-3), {@code betas} ((0.9, 0.999)), {@code eps} (1e-8),
 * {@code weight_decay} (0), {@code momentum_decay} (4e-3), {@code maximize} (false).
 * State: {@code step}, {@code mu_product} (0-d), {@code exp_avg}, {@code exp_avg_sq}.
 * <pre>{@code
 * var opt = new NAdam(model.parameters(), 2e-3);
 * loss.backward();
 * opt.step();
 * }</pre>
 */
public final class NAdam extends Optimizer {
  /** The momentum schedule's decay psi, >= 0. */
  static final Hyper.Num MOMENTUM_DECAY = Hyper.nonNegative("momentum_decay");
  private static final List<Hyper.Default> OPTIONS = List.of(Hyper.LR.is(2e-3), Hyper.BETAS.is(0.9, 0.999),
      Hyper.EPS.is(1e-8), Hyper.WEIGHT_DECAY.is(0), MOMENTUM_DECAY.is(4e-3), Hyper.MAXIMIZE.is(false));

  /** NAdam with learning rate {@code lr}. */
  public NAdam(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** NAdam with options overriding the defaults. */
  public NAdam(List<?> params, Map<String, ?> hyper) {
    super("NAdam", params, OPTIONS, hyper);
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    double lr = Hyper.LR.of(g), b1 = Hyper.BETAS.first(g), b2 = Hyper.BETAS.second(g), eps = Hyper.EPS.of(g);
    double wd = Hyper.WEIGHT_DECAY.of(g), psi = MOMENTUM_DECAY.of(g);
    double sign = Hyper.MAXIMIZE.of(g) ? -1 : 1;
    if (!state.containsKey("exp_avg")) {
      state.put("step", Tensor.scalar(0.0, DType.F64));
      state.put("mu_product", Tensor.scalar(1.0, DType.F64));
      state.put("exp_avg", zerosLike(param));
      state.put("exp_avg_sq", zerosLike(param));
    }
    double t = incrementStep(state);
    Tensor muT = state.get("mu_product");
    double mu = b1 * (1 - 0.5 * Math.pow(0.96, t * psi));
    double muNext = b1 * (1 - 0.5 * Math.pow(0.96, (t + 1) * psi));
    double muProd = muT.storage().getDouble(muT.offset()) * mu;
    muT.storage().setDouble(muT.offset(), muProd);
    double cg = lr * (1 - mu) / (1 - muProd);
    double cm = lr * muNext / (1 - muProd * muNext);
    double bc2 = 1 - Math.pow(b2, t);
    kernels(param)
        .nadam(param, grad, state.get("exp_avg"), state.get("exp_avg_sq"), sign, wd, b1, b2, bc2, eps, cg, cm);
  }
}
