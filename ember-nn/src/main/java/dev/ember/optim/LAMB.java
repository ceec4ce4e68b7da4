package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * LAMB (You et al., "Large Batch Optimization for Deep Learning", https://arxiv.org/abs/1904.00962,
 * Algorithm 2): Adam's direction plus decoupled weight decay, rescaled per parameter tensor by the
 * trust ratio ||p|| / ||r||:
 * <pre>
 *   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g^2
 *   r = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay * p
 *   trust = ||p|| / ||r|| (1 when either norm is 0);   p = p - lr * trust * r
 * </pre>
 * The bias corrections are dropped when {@code bias_correction} is false. Each tensor takes two
 * passes: the moments and both norms (chunked partial sums, so the trust ratio is the same on any
 * thread count), then the update.
 * Options (defaults): {@code lr} (1e-3), {@code betas} ((0.9, 0.999)), {@code eps} (1e-6),
 * {@code weight_decay} (0), {@code bias_correction} (true). State: {@code step}, {@code exp_avg}, {@code exp_avg_sq}.
 * <pre>{@code
 * var opt = new LAMB(model.parameters(), Map.of("lr", 2e-3, "weight_decay", 0.01));
 * loss.backward();
 * opt.step();
 * }</pre>
 */
public final class LAMB extends Optimizer {
  /** Whether to divide the moments by their bias corrections. */
  static final Hyper.Flag BIAS_CORRECTION = Hyper.flag("bias_correction");
  private static final List<Hyper.Default> OPTIONS = List.of(Hyper.LR.is(1e-3), Hyper.BETAS.is(0.9, 0.999),
      Hyper.EPS.is(1e-6), Hyper.WEIGHT_DECAY.is(0), BIAS_CORRECTION.is(true));

  /** LAMB with learning rate {@code lr}. */
  public LAMB(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** LAMB with options overriding the defaults. */
  public LAMB(List<?> params, Map<String, ?> hyper) {
    super("LAMB", params, OPTIONS, hyper);
  }

  /** The trust ratio needs the whole update's norm: each gradient is read whole. */
  @Override
  protected boolean takesGradientsInBlocks() {
    return false;
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    if (!state.containsKey("exp_avg")) {
      state.put("step", Tensor.scalar(0.0, DType.F64));
      state.put("exp_avg", zerosLike(param));
      state.put("exp_avg_sq", zerosLike(param));
    }
    double t = incrementStep(state);
    double lr = Hyper.LR.of(g), b1 = Hyper.BETAS.first(g), b2 = Hyper.BETAS.second(g), eps = Hyper.EPS.of(g);
    double wd = Hyper.WEIGHT_DECAY.of(g);
    boolean bc = BIAS_CORRECTION.of(g);
    double bc1 = bc ? 1 - Math.pow(b1, t) : 1, bc2 = bc ? 1 - Math.pow(b2, t) : 1;
    Tensor m = state.get("exp_avg"), v = state.get("exp_avg_sq");
    var kernels = kernels(param);
    double[] sq = kernels.lambMoments(param, grad, m, v, b1, b2, bc1, bc2, eps, wd);
    double wn = Math.sqrt(sq[0]), rn = Math.sqrt(sq[1]);
    double trust = wn > 0 && rn > 0 ? wn / rn : 1;
    double scale = lr * trust;
    kernels.lambApply(param, m, v, bc1, bc2, eps, wd, scale);
  }
}
