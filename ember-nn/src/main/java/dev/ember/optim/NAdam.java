package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
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
  /** NAdam with learning rate {@code lr}. */
  public NAdam(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** NAdam with options overriding the defaults. */
  public NAdam(List<?> params, Map<String, ?> hyper) {
    super("NAdam", params, defaultOptions(), hyper);
  }

  private static Map<String, Object> defaultOptions() {
    LinkedHashMap<String, Object> d = new LinkedHashMap<>();
    d.put("lr", 2e-3);
    d.put("betas", new double[] {0.9, 0.999});
    d.put("eps", 1e-8);
    d.put("weight_decay", 0.0);
    d.put("momentum_decay", 4e-3);
    d.put("maximize", false);
    return d;
  }

  @Override
  protected void validate(ParamGroup g) {
    requireNonNegative(g, "lr", "lr");
    requireBetas(g, "betas");
    requireNonNegative(g, "eps", "eps");
    requireNonNegative(g, "weight_decay", "weight_decay");
    requireNonNegative(g, "momentum_decay", "momentum_decay");
    requireBoolean(g, "maximize");
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    double lr = g.lr(), b1 = g.pair("betas", 0), b2 = g.pair("betas", 1), eps = g.getDouble("eps");
    double wd = g.getDouble("weight_decay"), psi = g.getDouble("momentum_decay");
    double sign = g.getBoolean("maximize") ? -1 : 1;
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
    Slot p = new Slot(param), m = new Slot(state.get("exp_avg")), v = new Slot(state.get("exp_avg_sq"));
    Kernels.forGradient(param, grad, (gr, lo, hi) -> kernel(p, gr, m, v, lo, hi, sign, wd, b1, b2, bc2, eps, cg, cm));
  }

  private static void kernel(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double sign, double wd, double b1, double b2,
      double bc2, double eps, double cg, double cm) {
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    if (p.f != null) {
      Kernels.F32.nadam(p, g, m, v, lo, hi, (float) sign, (float) wd, (float) b1, (float) b2, (float) (1 - b1),
          (float) (1 - b2), (float) bc2, (float) eps, (float) cg, (float) cm);
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
        double denom = Math.sqrt(vi / bc2) + eps;
        pa[po + i] = x - cg * gi / denom - cm * mi / denom;
      }
    }
  }
}
