package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * Adadelta (Zeiler, https://arxiv.org/abs/1212.5701), as {@code torch.optim.Adadelta}:
 * <pre>
 *   g = grad (negated when maximize) + weight_decay * p
 *   s = rho * s + (1 - rho) * g^2
 *   d = sqrt(u + eps) / sqrt(s + eps) * g
 *   u = rho * u + (1 - rho) * d^2;   p = p - lr * d
 * </pre>
 * Options (defaults): {@code lr} (1.0), {@code rho} (0.9), {@code eps} (1e-6),
 * {@code weight_decay} (0), {@code maximize} (false). State: {@code step}, {@code square_avg}, {@code acc_delta}.
 * <pre>{@code
 * var opt = new Adadelta(model.parameters(), 1.0);
 * loss.backward();
 * opt.step();
 * }</pre>
 */
public final class Adadelta extends Optimizer {
  /** The coefficient of the running averages, in [0, 1]. */
  static final Hyper.Num RHO = Hyper.unitInterval("rho");
  private static final List<Hyper.Default> OPTIONS = List.of(Hyper.LR.is(1.0), RHO.is(0.9), Hyper.EPS.is(1e-6),
      Hyper.WEIGHT_DECAY.is(0), Hyper.MAXIMIZE.is(false));

  /** Adadelta with learning rate {@code lr}. */
  public Adadelta(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** Adadelta with options overriding the defaults. */
  public Adadelta(List<?> params, Map<String, ?> hyper) {
    super("Adadelta", params, OPTIONS, hyper);
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    if (!state.containsKey("square_avg")) {
      state.put("step", Tensor.scalar(0.0, DType.F64));
      state.put("square_avg", zerosLike(param));
      state.put("acc_delta", zerosLike(param));
    }
    incrementStep(state);
    double lr = Hyper.LR.of(g), rho = RHO.of(g), eps = Hyper.EPS.of(g), wd = Hyper.WEIGHT_DECAY.of(g);
    double sign = Hyper.MAXIMIZE.of(g) ? -1 : 1;
    kernels(param)
        .adadelta(param, grad, state.get("square_avg"), state.get("acc_delta"), sign, wd, rho, eps, lr);
  }
}
