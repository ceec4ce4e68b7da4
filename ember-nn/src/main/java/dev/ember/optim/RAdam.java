package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
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
  /** RAdam with learning rate {@code lr}. */
  public RAdam(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** RAdam with options overriding the defaults. */
  public RAdam(List<?> params, Map<String, ?> hyper) {
    super("RAdam", params, defaultOptions(), hyper);
  }

  private static Map<String, Object> defaultOptions() {
    LinkedHashMap<String, Object> d = new LinkedHashMap<>();
    d.put("lr", 1e-3);
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
    Slot p = new Slot(param), m = new Slot(state.get("exp_avg")), v = new Slot(state.get("exp_avg_sq"));
    Kernels.forGradient(param, grad, (gr, lo, hi) -> kernel(p, gr, m, v, lo, hi, sign, wd, b1, b2, eps, scale, adaptive));
  }

  private static void kernel(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double sign, double wd, double b1, double b2,
      double eps, double scale, boolean adaptive) {
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    if (p.f != null) {
      Kernels.F32.radam(p, g, m, v, lo, hi, (float) sign, (float) wd, (float) b1, (float) b2, (float) (1 - b1),
          (float) (1 - b2), (float) eps, (float) scale, adaptive);
    } else {
      double[] pa = p.d, ga = g.d, ma = m.d, va = v.d;
      double c1 = 1 - b1, c2 = 1 - b2;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + wd * x;
        double mi = b1 * ma[mo + i] + c1 * gi;
        double vi = b2 * va[vo + i] + c2 * gi * gi;
        ma[mo + i] = mi;
        va[vo + i] = vi;
        double step = adaptive ? mi / (Math.sqrt(vi) + eps) : mi;
        pa[po + i] = x - scale * step;
      }
    }
  }
}
