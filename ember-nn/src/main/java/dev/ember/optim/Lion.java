package dev.ember.optim;

import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
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
  /** Lion with learning rate {@code lr}. */
  public Lion(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** Lion with options overriding the defaults. */
  public Lion(List<?> params, Map<String, ?> hyper) {
    super("Lion", params, defaultOptions(), hyper);
  }

  private static Map<String, Object> defaultOptions() {
    LinkedHashMap<String, Object> d = new LinkedHashMap<>();
    d.put("lr", 1e-4);
    d.put("betas", new double[] {0.9, 0.99});
    d.put("weight_decay", 0.0);
    d.put("maximize", false);
    return d;
  }

  @Override
  protected void validate(ParamGroup g) {
    requireNonNegative(g, "lr", "lr");
    requireBetas(g, "betas");
    requireNonNegative(g, "weight_decay", "weight_decay");
    requireBoolean(g, "maximize");
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    if (!state.containsKey("exp_avg")) state.put("exp_avg", zerosLike(param));
    double lr = g.lr(), b1 = g.pair("betas", 0), b2 = g.pair("betas", 1);
    double decay = 1 - lr * g.getDouble("weight_decay");
    double sign = g.getBoolean("maximize") ? -1 : 1;
    Slot p = new Slot(param), m = new Slot(state.get("exp_avg"));
    Kernels.forGradient(param, grad, (gr, lo, hi) -> kernel(p, gr, m, lo, hi, sign, decay, lr, b1, b2));
  }

  private static void kernel(Slot p, Slot g, Slot m, int lo, int hi, double sign, double decay, double lr, double b1,
      double b2) {
    int po = p.off, go = g.off, mo = m.off;
    if (p.f != null) {
      Kernels.F32.lion(p, g, m, lo, hi, (float) sign, (float) decay, (float) lr, (float) b1, (float) (1 - b1), (float) b2,
          (float) (1 - b2));
    } else {
      double[] pa = p.d, ga = g.d, ma = m.d;
      double c1 = 1 - b1, c2 = 1 - b2;
      for (int i = lo; i < hi; i++) {
        double gi = sign * ga[go + i];
        double mi = ma[mo + i];
        pa[po + i] = pa[po + i] * decay - lr * Math.signum(b1 * mi + c1 * gi);
        ma[mo + i] = b2 * mi + c2 * gi;
      }
    }
  }
}
