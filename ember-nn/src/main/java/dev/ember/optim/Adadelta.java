package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
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
  /** Adadelta with learning rate {@code lr}. */
  public Adadelta(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** Adadelta with options overriding the defaults. */
  public Adadelta(List<?> params, Map<String, ?> hyper) {
    super("Adadelta", params, defaultOptions(), hyper);
  }

  private static Map<String, Object> defaultOptions() {
    LinkedHashMap<String, Object> d = new LinkedHashMap<>();
    d.put("lr", 1.0);
    d.put("rho", 0.9);
    d.put("eps", 1e-6);
    d.put("weight_decay", 0.0);
    d.put("maximize", false);
    return d;
  }

  @Override
  protected void validate(ParamGroup g) {
    requireNonNegative(g, "lr", "lr");
    requireInRange(number(g, "rho"), "rho", 0, 1, true);
    requireNonNegative(g, "eps", "eps");
    requireNonNegative(g, "weight_decay", "weight_decay");
    requireBoolean(g, "maximize");
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    if (!state.containsKey("square_avg")) {
      state.put("step", Tensor.scalar(0.0, DType.F64));
      state.put("square_avg", zerosLike(param));
      state.put("acc_delta", zerosLike(param));
    }
    incrementStep(state);
    double lr = g.lr(), rho = g.getDouble("rho"), eps = g.getDouble("eps"), wd = g.getDouble("weight_decay");
    double sign = g.getBoolean("maximize") ? -1 : 1;
    Slot p = new Slot(param), s = new Slot(state.get("square_avg")), u = new Slot(state.get("acc_delta"));
    Kernels.forGradient(param, grad, (gr, lo, hi) -> kernel(p, gr, s, u, lo, hi, sign, wd, rho, eps, lr));
  }

  private static void kernel(Slot p, Slot g, Slot s, Slot u, int lo, int hi, double sign, double wd, double rho, double eps,
      double lr) {
    int po = p.off, go = g.off, so = s.off, uo = u.off;
    if (p.f != null) {
      Kernels.F32.adadelta(p, g, s, u, lo, hi, (float) sign, (float) wd, (float) rho, (float) (1 - rho), (float) eps,
          (float) lr);
    } else {
      double[] pa = p.d, ga = g.d, sa = s.d, ua = u.d;
      double c = 1 - rho;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + wd * x;
        double si = rho * sa[so + i] + c * gi * gi;
        sa[so + i] = si;
        double ui = ua[uo + i];
        double d = Math.sqrt(ui + eps) / Math.sqrt(si + eps) * gi;
        ua[uo + i] = rho * ui + c * d * d;
        pa[po + i] = x - lr * d;
      }
    }
  }
}
