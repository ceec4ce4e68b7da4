package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * Adagrad (Duchi et al., JMLR 2011), as {@code torch.optim.Adagrad}:
 * <pre>
 *   g = grad (negated when maximize) + weight_decay * p
 *   clr = lr / (1 + (t - 1) * lr_decay)
 *   s = s + g^2;   p = p - clr * g / (sqrt(s) + eps)
 * </pre>
 * Options (defaults): {@code lr} (1e-2), {@code lr_decay} (0), {@code weight_decay} (0),
 * {@code initial_accumulator_value} (0), {@code eps} (1e-10), {@code maximize} (false).
 * State (created with the optimizer, as PyTorch): {@code step}, {@code sum}.
 * <pre>{@code
 * var opt = new Adagrad(model.parameters(), 0.01);
 * loss.backward();
 * opt.step();
 * }</pre>
 */
public final class Adagrad extends Optimizer {
  /** The learning rate's decay per step, >= 0. */
  static final Hyper.Num LR_DECAY = Hyper.nonNegative("lr_decay");
  /** The accumulator's starting value, >= 0. */
  static final Hyper.Num INITIAL_ACCUMULATOR_VALUE = Hyper.nonNegative("initial_accumulator_value");
  private static final List<Hyper.Default> OPTIONS = List.of(Hyper.LR.is(1e-2), LR_DECAY.is(0),
      Hyper.WEIGHT_DECAY.is(0), INITIAL_ACCUMULATOR_VALUE.is(0), Hyper.EPS.is(1e-10), Hyper.MAXIMIZE.is(false));

  /** Adagrad with learning rate {@code lr}. */
  public Adagrad(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** Adagrad with options overriding the defaults. */
  public Adagrad(List<?> params, Map<String, ?> hyper) {
    super("Adagrad", params, OPTIONS, hyper);
    for (ParamGroup g : paramGroups()) {
      for (Tensor p : g.params()) initState(g, p, stateOf(p));
    }
  }

  private static void initState(ParamGroup g, Tensor p, Map<String, Tensor> state) {
    if (state.containsKey("sum")) return;
    state.put("step", Tensor.scalar(0.0, DType.F64));
    state.put("sum", Tensor.full(INITIAL_ACCUMULATOR_VALUE.of(g), p.device(), p.dtype(), p.shapeRef().clone()));
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    initState(g, param, state);
    double t = incrementStep(state);
    double clr = Hyper.LR.of(g) / (1 + (t - 1) * LR_DECAY.of(g));
    double wd = Hyper.WEIGHT_DECAY.of(g), eps = Hyper.EPS.of(g);
    double sign = Hyper.MAXIMIZE.of(g) ? -1 : 1;
    kernels(param).adagrad(param, grad, state.get("sum"), sign, wd, eps, clr);
  }
}
