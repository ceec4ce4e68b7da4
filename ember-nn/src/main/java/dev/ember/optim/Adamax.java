package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
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
  /** Adamax with learning rate {@code lr}. */
  public Adamax(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** Adamax with options overriding the defaults. */
  public Adamax(List<?> params, Map<String, ?> hyper) {
    super("Adamax", params, defaultOptions(), hyper);
  }

  private static Map<String, Object> defaultOptions() {
    LinkedHashMap<String, Object> d = new LinkedHashMap<>();
    d.put("lr", 2e-3);
    d.put("betas", new double[] {0.9, 0.999});
    d.put("eps", 1e-8);
    d.put("weight_decay", 0.0);
    d.put("maximize", false);
    return d;
  }

  @Override
  protected void validate(ParamGroup g) {
    requireNonNegative(g, "lr", "lr");
    requireBetas(g, "betas");
    requireNonNegative(g, "eps", "eps");
    requireNonNegative(g, "weight_decay", "weight_decay");
    requireBoolean(g, "maximize");
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    double lr = g.lr(), b1 = g.pair("betas", 0), b2 = g.pair("betas", 1), eps = g.getDouble("eps");
    double wd = g.getDouble("weight_decay");
    double sign = g.getBoolean("maximize") ? -1 : 1;
    if (!state.containsKey("exp_avg")) {
      state.put("step", Tensor.scalar(0.0, DType.F64));
      state.put("exp_avg", zerosLike(param));
      state.put("exp_inf", zerosLike(param));
    }
    double t = incrementStep(state);
    double clr = lr / (1 - Math.pow(b1, t));
    Slot p = new Slot(param), m = new Slot(state.get("exp_avg")), u = new Slot(state.get("exp_inf"));
    Kernels.forGradient(param, grad, (gr, lo, hi) -> kernel(p, gr, m, u, lo, hi, sign, wd, b1, b2, eps, clr));
  }

  private static void kernel(Slot p, Slot g, Slot m, Slot u, int lo, int hi, double sign, double wd, double b1, double b2,
      double eps, double clr) {
    int po = p.off, go = g.off, mo = m.off, uo = u.off;
    if (p.f != null) {
      Kernels.F32.adamax(p, g, m, u, lo, hi, (float) sign, (float) wd, (float) b1, (float) b2, (float) (1 - b1), (float) eps,
          (float) clr);
    } else {
      double[] pa = p.d, ga = g.d, ma = m.d, ua = u.d;
      double c1 = 1 - b1;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + wd * x;
        double mi = b1 * ma[mo + i] + c1 * gi;
        double ui = Math.max(b2 * ua[uo + i], Math.abs(gi) + eps);
        ma[mo + i] = mi;
        ua[uo + i] = ui;
        pa[po + i] = x - clr * mi / ui;
      }
    }
  }
}
