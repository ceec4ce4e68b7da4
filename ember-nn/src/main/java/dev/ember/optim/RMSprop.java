package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * RMSprop (Hinton, lecture 6e; centered variant from Graves 2013), as {@code torch.optim.RMSprop}:
 * <pre>
 *   g = grad (negated when maximize) + weight_decay * p
 *   s = alpha * s + (1 - alpha) * g^2
 *   centered: a = alpha * a + (1 - alpha) * g;  d = sqrt(s - a^2) + eps   else d = sqrt(s) + eps
 *   momentum > 0: b = momentum * b + g / d;  p = p - lr * b        else p = p - lr * g / d
 * </pre>
 * Options (defaults): {@code lr} (1e-2), {@code alpha} (0.99), {@code eps} (1e-8),
 * {@code weight_decay} (0), {@code momentum} (0), {@code centered} (false), {@code maximize} (false).
 * State: {@code step}, {@code square_avg}, {@code momentum_buffer}, {@code grad_avg}.
 * <pre>{@code
 * var opt = new RMSprop(model.parameters(), Map.of("lr", 1e-3, "centered", true));
 * loss.backward();
 * opt.step();
 * }</pre>
 */
public final class RMSprop extends Optimizer {
  /** RMSprop with learning rate {@code lr}. */
  public RMSprop(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** RMSprop with options overriding the defaults. */
  public RMSprop(List<?> params, Map<String, ?> hyper) {
    super("RMSprop", params, defaultOptions(), hyper);
  }

  private static Map<String, Object> defaultOptions() {
    LinkedHashMap<String, Object> d = new LinkedHashMap<>();
    d.put("lr", 1e-2);
    d.put("alpha", 0.99);
    d.put("eps", 1e-8);
    d.put("weight_decay", 0.0);
    d.put("momentum", 0.0);
    d.put("centered", false);
    d.put("maximize", false);
    return d;
  }

  @Override
  protected void validate(ParamGroup g) {
    requireNonNegative(g, "lr", "lr");
    requireNonNegative(g, "eps", "eps");
    requireNonNegative(g, "momentum", "momentum");
    requireNonNegative(g, "weight_decay", "weight_decay");
    requireInRange(number(g, "alpha"), "alpha", 0, 1, true);
    requireBoolean(g, "centered");
    requireBoolean(g, "maximize");
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    double lr = g.lr(), alpha = g.getDouble("alpha"), eps = g.getDouble("eps"), wd = g.getDouble("weight_decay");
    double mom = g.getDouble("momentum");
    boolean centered = g.getBoolean("centered");
    double sign = g.getBoolean("maximize") ? -1 : 1;
    if (!state.containsKey("square_avg")) {
      state.put("step", Tensor.scalar(0.0, DType.F64));
      state.put("square_avg", zerosLike(param));
    }
    if (mom > 0 && !state.containsKey("momentum_buffer")) state.put("momentum_buffer", zerosLike(param));
    if (centered && !state.containsKey("grad_avg")) state.put("grad_avg", zerosLike(param));
    incrementStep(state);
    Slot p = new Slot(param), s = new Slot(state.get("square_avg"));
    Slot a = centered ? new Slot(state.get("grad_avg")) : null;
    Slot b = mom > 0 ? new Slot(state.get("momentum_buffer")) : null;
    Kernels.forGradient(param, grad, (gr, lo, hi) -> kernel(p, gr, s, a, b, lo, hi, sign, wd, alpha, eps, mom, lr));
  }

  private static void kernel(Slot p, Slot g, Slot s, Slot a, Slot b, int lo, int hi, double sign, double wd, double alpha,
      double eps, double mom, double lr) {
    boolean centered = a != null, momentum = b != null;
    int po = p.off, go = g.off, so = s.off, ao = centered ? a.off : 0, bo = momentum ? b.off : 0;
    if (p.f != null) {
      Kernels.F32.rmsprop(p, g, s, a, b, lo, hi, (float) sign, (float) wd, (float) alpha, (float) (1 - alpha), (float) eps,
          (float) mom, (float) lr);
    } else {
      double[] pa = p.d, ga = g.d, sa = s.d, aa = centered ? a.d : null, ba = momentum ? b.d : null;
      double c = 1 - alpha;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + wd * x;
        double si = alpha * sa[so + i] + c * gi * gi;
        sa[so + i] = si;
        double var = si;
        if (centered) {
          double ai = alpha * aa[ao + i] + c * gi;
          aa[ao + i] = ai;
          var = si - ai * ai;
        }
        double d = Math.sqrt(var) + eps;
        if (momentum) {
          double bi = mom * ba[bo + i] + gi / d;
          ba[bo + i] = bi;
          pa[po + i] = x - lr * bi;
        } else {
          pa[po + i] = x - lr * gi / d;
        }
      }
    }
  }
}
