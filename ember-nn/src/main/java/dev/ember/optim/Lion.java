package dev.ember.optim;

import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * Lion (Chen et al., "Symbolic Discovery of Optimization Algorithms", https://arxiv.org/abs/2302.06675),
 * as the authors' {@code lion_pytorch.py}:
 * <pre>
 *   g = grad (negated when maximize)
 *   p = p * (1 - lr * weight_decay)
 *   p = p - lr * sign(beta1 * m + (1 - beta1) * g)
 *   m = beta2 * m + (1 - beta2) * g
 * </pre>
 * Options (defaults): {@code lr} (1e-4; typically 3-10x smaller than AdamW's), {@code betas}
 * ((0.9, 0.99)), {@code weight_decay} (0; typically 3-10x larger than AdamW's), {@code maximize}
 * (false). State: {@code exp_avg}.
 * <pre>{@code
 * var opt = new Lion(model.parameters(), Map.of("lr", 1e-4, "weight_decay", 1.0));
 * loss.backward();
 * opt.step();
 * }</pre>
 */
public final class Lion extends Optimizer {
  private static final List<Hyper.Default> OPTIONS = List.of(Hyper.LR.is(1e-4), Hyper.BETAS.is(0.9, 0.99),
      Hyper.WEIGHT_DECAY.is(0), Hyper.MAXIMIZE.is(false));

  /** Lion with learning rate {@code lr}. */
  public Lion(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** Lion with options overriding the defaults. */
  public Lion(List<?> params, Map<String, ?> hyper) {
    super("Lion", params, OPTIONS, hyper);
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    if (!state.containsKey("exp_avg")) state.put("exp_avg", zerosLike(param));
    double lr = Hyper.LR.of(g), b1 = Hyper.BETAS.first(g), b2 = Hyper.BETAS.second(g);
    double decay = 1 - lr * Hyper.WEIGHT_DECAY.of(g);
    double sign = Hyper.MAXIMIZE.of(g) ? -1 : 1;
    kernels(param).lion(param, grad, state.get("exp_avg"), sign, decay, lr, b1, b2);
  }
}
