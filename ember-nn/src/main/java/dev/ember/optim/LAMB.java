package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
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
  /** LAMB with learning rate {@code lr}. */
  public LAMB(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** LAMB with options overriding the defaults. */
  public LAMB(List<?> params, Map<String, ?> hyper) {
    super("LAMB", params, defaultOptions(), hyper);
  }

  private static Map<String, Object> defaultOptions() {
    LinkedHashMap<String, Object> d = new LinkedHashMap<>();
    d.put("lr", 1e-3);
    d.put("betas", new double[] {0.9, 0.999});
    d.put("eps", 1e-6);
    d.put("weight_decay", 0.0);
    d.put("bias_correction", true);
    return d;
  }

  @Override
  protected void validate(ParamGroup g) {
    requireNonNegative(g, "lr", "lr");
    requireBetas(g, "betas");
    requireNonNegative(g, "eps", "eps");
    requireNonNegative(g, "weight_decay", "weight_decay");
    requireBoolean(g, "bias_correction");
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
    double lr = g.lr(), b1 = g.pair("betas", 0), b2 = g.pair("betas", 1), eps = g.getDouble("eps");
    double wd = g.getDouble("weight_decay");
    boolean bc = g.getBoolean("bias_correction");
    double bc1 = bc ? 1 - Math.pow(b1, t) : 1, bc2 = bc ? 1 - Math.pow(b2, t) : 1;
    int n = (int) param.numel();
    Slot p = new Slot(param), gr = new Slot(grad), m = new Slot(state.get("exp_avg")), v = new Slot(state.get("exp_avg_sq"));
    double[] sq = Kernels.sums(n, 2, (lo, hi, acc) -> moments(p, gr, m, v, lo, hi, b1, b2, bc1, bc2, eps, wd, acc));
    double wn = Math.sqrt(sq[0]), rn = Math.sqrt(sq[1]);
    double trust = wn > 0 && rn > 0 ? wn / rn : 1;
    double scale = lr * trust;
    Kernels.forRange(n, (lo, hi) -> apply(p, m, v, lo, hi, bc1, bc2, eps, wd, scale));
  }

  /** Updates the moments and adds ||p||^2, ||r||^2 of [lo, hi) to acc. */
  private static void moments(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double b1, double b2, double bc1, double bc2,
      double eps, double wd, double[] acc) {
    if (p.f != null) {
      Kernels.F32.lambMoments(p, g, m, v, lo, hi, (float) b1, (float) b2, (float) (1 - b1), (float) (1 - b2), (float) bc1,
          (float) bc2, (float) eps, (float) wd, acc);
      return;
    }
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    double pp = 0, rr = 0;
    double[] pa = p.d, ga = g.d, ma = m.d, va = v.d;
    double c1 = 1 - b1, c2 = 1 - b2;
    for (int i = lo; i < hi; i++) {
      double gi = ga[go + i];
      double mi = b1 * ma[mo + i] + c1 * gi;
      double vi = b2 * va[vo + i] + c2 * gi * gi;
      ma[mo + i] = mi;
      va[vo + i] = vi;
      double x = pa[po + i];
      double r = (mi / bc1) / (Math.sqrt(vi / bc2) + eps) + wd * x;
      pp += x * x;
      rr += r * r;
    }
    acc[0] += pp;
    acc[1] += rr;
  }

  /** p -= scale * r, with r recomputed from the stored moments exactly as in {@link #moments}. */
  private static void apply(Slot p, Slot m, Slot v, int lo, int hi, double bc1, double bc2, double eps, double wd,
      double scale) {
    int po = p.off, mo = m.off, vo = v.off;
    if (p.f != null) {
      Kernels.F32.lambApply(p, m, v, lo, hi, (float) bc1, (float) bc2, (float) eps, (float) wd, (float) scale);
    } else {
      double[] pa = p.d, ma = m.d, va = v.d;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        pa[po + i] = x - scale * ((ma[mo + i] / bc1) / (Math.sqrt(va[vo + i] / bc2) + eps) + wd * x);
      }
    }
  }
}
