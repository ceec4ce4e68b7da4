package dev.ember.optim;

import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Adam (Kingma and Ba, https://arxiv.org/abs/1412.6980), as {@code torch.optim.Adam}:
 * <pre>
 *   g = grad (negated when maximize) + weight_decay * p
 *   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g^2
 *   v' = amsgrad ? (vmax = max(vmax, v)) : v
 *   p = p - lr / (1 - beta1^t) * m / (sqrt(v') / sqrt(1 - beta2^t) + eps)
 * </pre>
 * The division by sqrt(1 - beta2^t) is a multiplication by its reciprocal, computed once per step: one
 * division per element fewer, and a denominator within an ulp of torch's.
 * Options (defaults): {@code lr} (1e-3), {@code betas} ((0.9, 0.999)), {@code eps} (1e-8),
 * {@code weight_decay} (0, L2 added to the gradient), {@code amsgrad} (false),
 * {@code maximize} (false). State: {@code step}, {@code exp_avg}, {@code exp_avg_sq},
 * {@code max_exp_avg_sq} (amsgrad). {@link AdamW} decouples the weight decay.
 * <pre>{@code
 * var opt = new Adam(model.parameters(), 1e-3);
 * loss.backward();
 * opt.step();
 * opt.zeroGrad();
 * }</pre>
 */
public class Adam extends Optimizer {
  private final boolean decoupled;

  /** Adam with learning rate {@code lr} and the other defaults. */
  public Adam(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** Adam with options overriding the defaults (lr, betas, eps, weight_decay, amsgrad, maximize). */
  public Adam(List<?> params, Map<String, ?> hyper) {
    this("Adam", params, hyper, 0.0, false);
  }

  Adam(String name, List<?> params, Map<String, ?> hyper, double defaultDecay, boolean decoupled) {
    super(name, params, defaultOptions(defaultDecay), hyper);
    this.decoupled = decoupled;
  }

  private static Map<String, Object> defaultOptions(double weightDecay) {
    LinkedHashMap<String, Object> d = new LinkedHashMap<>();
    d.put("lr", 1e-3);
    d.put("betas", new double[] {0.9, 0.999});
    d.put("eps", 1e-8);
    d.put("weight_decay", weightDecay);
    d.put("amsgrad", false);
    d.put("maximize", false);
    return d;
  }

  @Override
  protected void validate(ParamGroup g) {
    requireNonNegative(g, "lr", "lr");
    requireBetas(g, "betas");
    requireNonNegative(g, "eps", "eps");
    requireNonNegative(g, "weight_decay", "weight_decay");
    requireBoolean(g, "amsgrad");
    requireBoolean(g, "maximize");
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    double lr = g.lr();
    double b1 = g.pair("betas", 0), b2 = g.pair("betas", 1);
    double eps = g.getDouble("eps");
    double wd = g.getDouble("weight_decay");
    boolean ams = g.getBoolean("amsgrad");
    double sign = g.getBoolean("maximize") ? -1 : 1;
    if (!state.containsKey("exp_avg")) {
      state.put("step", Tensor.scalar(0.0, dev.ember.tensor.DType.F64));
      state.put("exp_avg", zerosLike(param));
      state.put("exp_avg_sq", zerosLike(param));
      if (ams) state.put("max_exp_avg_sq", zerosLike(param));
    }
    if (ams && !state.containsKey("max_exp_avg_sq")) state.put("max_exp_avg_sq", zerosLike(param));
    double t = incrementStep(state);
    double stepSize = lr / (1 - Math.pow(b1, t));
    double invBc2Sqrt = 1 / Math.sqrt(1 - Math.pow(b2, t));
    // decoupled (AdamW): p *= 1 - lr * wd; coupled (Adam): g += wd * p
    double decay = decoupled ? 1 - lr * wd : 1;
    double l2 = decoupled ? 0 : wd;
    Slot p = new Slot(param);
    Slot m = new Slot(state.get("exp_avg")), v = new Slot(state.get("exp_avg_sq"));
    Slot vmax = ams ? new Slot(state.get("max_exp_avg_sq")) : null;
    Kernels.forGradient(param, grad,
        (gr, lo, hi) -> kernel(p, gr, m, v, vmax, lo, hi, sign, l2, decay, b1, b2, eps, stepSize, invBc2Sqrt));
  }

  static void kernel(Slot p, Slot g, Slot m, Slot v, Slot vmax, int lo, int hi, double sign, double l2, double decay,
      double b1, double b2, double eps, double stepSize, double invBc2Sqrt) {
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    boolean ams = vmax != null;
    int xo = ams ? vmax.off : 0;
    if (p.f != null) {
      Kernels.F32.adam(p, g, m, v, vmax, lo, hi, (float) sign, (float) l2, (float) decay, (float) b1, (float) b2,
          (float) (1 - b1), (float) (1 - b2), (float) eps, (float) stepSize, (float) invBc2Sqrt);
    } else {
      double[] pa = p.d, ga = g.d, ma = m.d, va = v.d, xa = ams ? vmax.d : null;
      double c1 = 1 - b1, c2 = 1 - b2;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + l2 * x;
        double mi = b1 * ma[mo + i] + c1 * gi;
        double vi = b2 * va[vo + i] + c2 * gi * gi;
        ma[mo + i] = mi;
        va[vo + i] = vi;
        if (ams) {
          vi = Math.max(xa[xo + i], vi);
          xa[xo + i] = vi;
        }
        double denom = Math.sqrt(vi) * invBc2Sqrt + eps;
        pa[po + i] = x * decay - stepSize * mi / denom;
      }
    }
  }
}
