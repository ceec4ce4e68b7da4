package dev.ember.optim;

import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Stochastic gradient descent with momentum, as {@code torch.optim.SGD}:
 * <pre>
 *   g = grad (negated when maximize) + weight_decay * p
 *   b = g on the first step, else momentum * b + (1 - dampening) * g     (when momentum != 0)
 *   d = nesterov ? g + momentum * b : b                                   (d = g without momentum)
 *   p = p - lr * d
 * </pre>
 * Options (defaults): {@code lr} (required), {@code momentum} (0), {@code dampening} (0),
 * {@code weight_decay} (0), {@code nesterov} (false; needs momentum > 0 and dampening 0),
 * {@code maximize} (false). State: {@code momentum_buffer} when momentum is used.
 * <pre>{@code
 * var opt = new SGD(model.parameters(), Map.of("lr", 0.1, "momentum", 0.9, "nesterov", true));
 * loss.backward();
 * opt.step();
 * opt.zeroGrad();
 * }</pre>
 */
public final class SGD extends Optimizer {
  /** SGD with learning rate {@code lr} and no momentum. */
  public SGD(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** SGD with options overriding the defaults (keys as in PyTorch: lr, momentum, dampening, ...). */
  public SGD(List<?> params, Map<String, ?> hyper) {
    super("SGD", params, defaultOptions(), hyper);
  }

  private static Map<String, Object> defaultOptions() {
    LinkedHashMap<String, Object> d = new LinkedHashMap<>();
    d.put("lr", 1e-3);
    d.put("momentum", 0.0);
    d.put("dampening", 0.0);
    d.put("weight_decay", 0.0);
    d.put("nesterov", false);
    d.put("maximize", false);
    return d;
  }

  @Override
  protected void validate(ParamGroup g) {
    requireNonNegative(g, "lr", "lr");
    requireNonNegative(g, "momentum", "momentum");
    number(g, "dampening");
    requireNonNegative(g, "weight_decay", "weight_decay");
    requireBoolean(g, "nesterov");
    requireBoolean(g, "maximize");
    if (g.getBoolean("nesterov") && (g.getDouble("momentum") <= 0 || g.getDouble("dampening") != 0)) {
      throw new IllegalArgumentException("SGD: nesterov momentum requires a momentum and zero dampening, got momentum="
          + fmt(g.getDouble("momentum")) + ", dampening=" + fmt(g.getDouble("dampening")));
    }
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    double lr = g.lr();
    double mom = g.getDouble("momentum");
    double damp = g.getDouble("dampening");
    double wd = g.getDouble("weight_decay");
    boolean nesterov = g.getBoolean("nesterov");
    double sign = g.getBoolean("maximize") ? -1 : 1;
    Slot p = new Slot(param);
    if (mom == 0) {
      Kernels.forGradient(param, grad, (gr, lo, hi) -> plain(p, gr, lo, hi, lr, wd, sign));
      return;
    }
    Tensor bufT = state.get("momentum_buffer");
    boolean first = bufT == null;
    if (first) {
      bufT = zerosLike(param);
      state.put("momentum_buffer", bufT);
    }
    Slot b = new Slot(bufT);
    // first step: b = g (PyTorch clones d_p), so the momentum coefficients become (0, 1)
    double keep = first ? 0 : mom;
    double add = first ? 1 : 1 - damp;
    Kernels.forGradient(param, grad,
        (gr, lo, hi) -> momentum(p, gr, b, lo, hi, lr, wd, sign, keep, add, nesterov, mom));
  }

  private static void plain(Slot p, Slot g, int lo, int hi, double lr, double wd, double sign) {
    int po = p.off, go = g.off;
    if (p.f != null) {
      Kernels.F32.sgd(p, g, lo, hi, (float) lr, (float) wd, (float) sign);
    } else {
      double[] pa = p.d, ga = g.d;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double d = sign * ga[go + i] + wd * x;
        pa[po + i] = x - lr * d;
      }
    }
  }

  /** b = keep * b + add * g; d = nesterov ? g + mom * b : b. */
  private static void momentum(Slot p, Slot g, Slot b, int lo, int hi, double lr, double wd, double sign,
      double keep, double add, boolean nesterov, double mom) {
    int po = p.off, go = g.off, bo = b.off;
    if (p.f != null) {
      Kernels.F32.sgdMomentum(p, g, b, lo, hi, (float) lr, (float) wd, (float) sign, (float) keep, (float) add, nesterov,
          (float) mom);
    } else {
      double[] pa = p.d, ga = g.d, ba = b.d;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double d = sign * ga[go + i] + wd * x;
        double buf = keep * ba[bo + i] + add * d;
        ba[bo + i] = buf;
        double step = nesterov ? d + mom * buf : buf;
        pa[po + i] = x - lr * step;
      }
    }
  }
}
