package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
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
  /** Adagrad with learning rate {@code lr}. */
  public Adagrad(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** Adagrad with options overriding the defaults. */
  public Adagrad(List<?> params, Map<String, ?> hyper) {
    super("Adagrad", params, defaultOptions(), hyper);
    for (ParamGroup g : paramGroups()) {
      for (Tensor p : g.params()) initState(g, p, stateOf(p));
    }
  }

  private static Map<String, Object> defaultOptions() {
    LinkedHashMap<String, Object> d = new LinkedHashMap<>();
    d.put("lr", 1e-2);
    d.put("lr_decay", 0.0);
    d.put("weight_decay", 0.0);
    d.put("initial_accumulator_value", 0.0);
    d.put("eps", 1e-10);
    d.put("maximize", false);
    return d;
  }

  @Override
  protected void validate(ParamGroup g) {
    requireNonNegative(g, "lr", "lr");
    requireNonNegative(g, "lr_decay", "lr_decay");
    requireNonNegative(g, "weight_decay", "weight_decay");
    requireNonNegative(g, "initial_accumulator_value", "initial_accumulator_value");
    requireNonNegative(g, "eps", "eps");
    requireBoolean(g, "maximize");
  }

  private static void initState(ParamGroup g, Tensor p, Map<String, Tensor> state) {
    if (state.containsKey("sum")) return;
    state.put("step", Tensor.scalar(0.0, DType.F64));
    state.put("sum", Tensor.full(g.getDouble("initial_accumulator_value"), p.dtype(), p.shapeRef().clone()));
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    initState(g, param, state);
    double t = incrementStep(state);
    double clr = g.lr() / (1 + (t - 1) * g.getDouble("lr_decay"));
    double wd = g.getDouble("weight_decay"), eps = g.getDouble("eps");
    double sign = g.getBoolean("maximize") ? -1 : 1;
    Slot p = new Slot(param), s = new Slot(state.get("sum"));
    Kernels.forGradient(param, grad, (gr, lo, hi) -> kernel(p, gr, s, lo, hi, sign, wd, eps, clr));
  }

  private static void kernel(Slot p, Slot g, Slot s, int lo, int hi, double sign, double wd, double eps, double clr) {
    int po = p.off, go = g.off, so = s.off;
    if (p.f != null) {
      Kernels.F32.adagrad(p, g, s, lo, hi, (float) sign, (float) wd, (float) eps, (float) clr);
    } else {
      double[] pa = p.d, ga = g.d, sa = s.d;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + wd * x;
        double si = sa[so + i] + gi * gi;
        sa[so + i] = si;
        pa[po + i] = x - clr * gi / (Math.sqrt(si) + eps);
      }
    }
  }
}
