package dev.ember.train.callbacks;

import dev.ember.autograd.Grad;
import dev.ember.tensor.Tensor;
import dev.ember.train.Callback;
import dev.ember.train.TrainContext;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Watches gradients after every backward pass: records each parameter's gradient L2 norm every
 * {@code everySteps} steps (and logs the total as {@code grad_norm}), and names the first
 * parameter whose gradient holds a NaN or an infinity, optionally stopping training there.
 */
public final class GradientMonitor implements Callback {
  private final int everySteps;
  private final boolean stopOnNonFinite;
  private final LinkedHashMap<String, List<double[]>> norms = new LinkedHashMap<>();
  private String firstNonFinite;

  /**
   * @param everySteps record norms every this many optimizer steps (>= 1)
   * @param stopOnNonFinite ask the trainer to stop at the first non-finite gradient
   */
  public GradientMonitor(int everySteps, boolean stopOnNonFinite) {
    if (everySteps < 1) throw new IllegalArgumentException("GradientMonitor: every_steps must be >= 1, got " + everySteps);
    this.everySteps = everySteps;
    this.stopOnNonFinite = stopOnNonFinite;
  }

  @Override
  public void onAfterBackward(TrainContext ctx) {
    boolean record = ctx.globalStep() % everySteps == 0;
    double total = 0;
    try (var ignored = Grad.off()) {
      for (var e : ctx.model().namedParameters().entrySet()) {
        Tensor g = e.getValue().grad();
        if (g == null) continue;
        double sq = g.square().sum().item();
        if (!Double.isFinite(sq) && firstNonFinite == null) {
          firstNonFinite = e.getKey() + " at epoch " + ctx.epoch() + ", batch " + ctx.batchIndex() + " (step "
              + ctx.globalStep() + ")";
          if (stopOnNonFinite) ctx.requestStop("GradientMonitor: non-finite gradient in " + firstNonFinite);
        }
        total += sq;
        if (record) norms.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(new double[] {ctx.globalStep(), Math.sqrt(sq)});
      }
    }
    if (record) ctx.log("grad_norm", Math.sqrt(total));
  }

  /** Per parameter, the recorded (step, norm) pairs. */
  public Map<String, List<double[]>> norms() {
    return norms;
  }

  /** The first non-finite gradient ("name at epoch e, batch b (step s)"), or null. */
  public String firstNonFinite() {
    return firstNonFinite;
  }
}
