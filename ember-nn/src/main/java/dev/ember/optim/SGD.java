package dev.ember.optim;

import dev.ember.tensor.Tensor;
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
  /** The part of the gradient kept out of the momentum buffer (any number). */
  static final Hyper.Num DAMPENING = Hyper.number("dampening");
  /** Whether to use Nesterov momentum. */
  static final Hyper.Flag NESTEROV = Hyper.flag("nesterov");
  private static final List<Hyper.Default> OPTIONS = List.of(Hyper.LR.is(1e-3), Hyper.MOMENTUM.is(0), DAMPENING.is(0),
      Hyper.WEIGHT_DECAY.is(0), NESTEROV.is(false), Hyper.MAXIMIZE.is(false));

  /** SGD with learning rate {@code lr} and no momentum. */
  public SGD(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** SGD with options overriding the defaults (keys as in PyTorch: lr, momentum, dampening, ...). */
  public SGD(List<?> params, Map<String, ?> hyper) {
    super("SGD", params, OPTIONS, hyper);
  }

  @Override
  protected void validate(ParamGroup g) {
    super.validate(g);
    if (NESTEROV.of(g) && (Hyper.MOMENTUM.of(g) <= 0 || DAMPENING.of(g) != 0)) {
      throw new IllegalArgumentException("SGD: nesterov momentum requires a momentum and zero dampening, got momentum="
          + Hyper.fmt(Hyper.MOMENTUM.of(g)) + ", dampening=" + Hyper.fmt(DAMPENING.of(g)));
    }
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    double lr = Hyper.LR.of(g);
    double mom = Hyper.MOMENTUM.of(g);
    double damp = DAMPENING.of(g);
    double wd = Hyper.WEIGHT_DECAY.of(g);
    boolean nesterov = NESTEROV.of(g);
    double sign = Hyper.MAXIMIZE.of(g) ? -1 : 1;
    if (mom == 0) {
      kernels(param).sgd(param, grad, lr, wd, sign);
      return;
    }
    Tensor buf = state.get("momentum_buffer");
    boolean first = buf == null;
    if (first) {
      buf = zerosLike(param);
      state.put("momentum_buffer", buf);
    }
    // first step: b = g (PyTorch clones d_p), so the momentum coefficients become (0, 1)
    double keep = first ? 0 : mom;
    double add = first ? 1 : 1 - damp;
    kernels(param).sgdMomentum(param, grad, buf, lr, wd, sign, keep, add, nesterov, mom);
  }
}
