package dev.ember.train.callbacks;

import dev.ember.data.Batch;
import dev.ember.nn.Conv1d;
import dev.ember.nn.Conv2d;
import dev.ember.nn.ConvTranspose2d;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.prune.Prune;
import dev.ember.train.Callback;
import dev.ember.train.TrainContext;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Gradual magnitude pruning during training, Zhu and Gupta's schedule ("To prune, or not to prune", 2017): at the
 * pruning steps t = t0, t0 + dt, ..., t0 + n dt the weights of every Linear and Conv layer of the model are pruned
 * together ({@link Prune#globalUnstructured}, smallest |w| first) up to the overall sparsity
 *
 * <pre>s_t = s_f + (s_i - s_f) (1 - (t - t0) / (n dt))^3</pre>
 *
 * <p>which prunes fast at first and slowly near the end. Between pruning steps the network trains with its masks (the
 * gradients of pruned weights are zero), and after the last one it keeps sparsity s_f. A step is an optimizer step
 * ({@link TrainContext#globalStep()}); pruning happens before the batch of step t, so t0 = 0 prunes to s_i before
 * training. The masks are in the model's state dict ({@code weight_orig}, {@code weight_mask}); to resume from a
 * checkpoint taken after the first pruning step, prune the fresh model the same way (any mask) before loading it.
 *
 * <pre>{@code
 * Trainer.builder().callbacks(new PruningSchedule(0, 0.8, 0, 10, 100))...   // to 80% over 1000 steps
 * }</pre>
 */
public final class PruningSchedule implements Callback {
  private final double initialSparsity;
  private final double finalSparsity;
  private final long beginStep;
  private final int pruningSteps;
  private final int frequency;
  private long lastPrunedStep = -1;

  /**
   * @param initialSparsity s_i, in [0, 1)
   * @param finalSparsity s_f, in [s_i, 1]
   * @param beginStep t0, the first pruning step, &gt;= 0
   * @param pruningSteps n &gt;= 1: the schedule reaches s_f at t0 + n dt
   * @param frequency dt &gt;= 1, optimizer steps between pruning steps
   */
  public PruningSchedule(double initialSparsity, double finalSparsity, long beginStep, int pruningSteps, int frequency) {
    if (!(initialSparsity >= 0 && initialSparsity < 1) || !(finalSparsity >= initialSparsity && finalSparsity <= 1)) {
      throw new IllegalArgumentException("PruningSchedule: sparsities must satisfy 0 <= initial < 1 and initial <= final "
          + "<= 1, got initial=" + initialSparsity + ", final=" + finalSparsity);
    }
    if (beginStep < 0 || pruningSteps < 1 || frequency < 1) {
      throw new IllegalArgumentException("PruningSchedule: need beginStep >= 0, pruningSteps >= 1 and frequency >= 1, "
          + "got beginStep=" + beginStep + ", pruningSteps=" + pruningSteps + ", frequency=" + frequency);
    }
    this.initialSparsity = initialSparsity;
    this.finalSparsity = finalSparsity;
    this.beginStep = beginStep;
    this.pruningSteps = pruningSteps;
    this.frequency = frequency;
  }

  /**
   * The overall sparsity the schedule holds after step {@code step}'s pruning: 0 before t0, s_t at the latest pruning
   * step &lt;= {@code step}, s_f from t0 + n dt on.
   */
  public double targetSparsity(long step) {
    if (step < beginStep) return 0;
    long k = Math.min(pruningSteps, (step - beginStep) / frequency);
    double progress = (double) k / pruningSteps;
    double r = 1 - progress;
    return finalSparsity + (initialSparsity - finalSparsity) * r * r * r;
  }

  /** Whether {@code step} is one of the pruning steps t0 + k dt, k = 0..n. */
  public boolean isPruningStep(long step) {
    return step >= beginStep && (step - beginStep) % frequency == 0 && (step - beginStep) / frequency <= pruningSteps;
  }

  /** The weights the schedule prunes: every Linear, Conv1d, Conv2d and ConvTranspose2d weight of {@code model}. */
  public static List<Prune.Target> targets(Module model) {
    List<Prune.Target> out = new ArrayList<>();
    for (Module m : model.modules()) {
      if (m instanceof Linear || m instanceof Conv1d || m instanceof Conv2d || m instanceof ConvTranspose2d) {
        out.add(Prune.target(m, "weight"));
      }
    }
    return out;
  }

  @Override
  public void onBatchBegin(TrainContext ctx, Batch batch) {
    long t = ctx.globalStep();
    // several batches share a step under gradient accumulation: prune once
    if (t == lastPrunedStep || !isPruningStep(t)) return;
    lastPrunedStep = t;
    pruneTo(ctx.model(), targetSparsity(t));
    ctx.log("sparsity", targetSparsity(t));
  }

  /**
   * Prunes {@code model}'s Linear and Conv weights globally until {@code sparsity} of all their entries are pruned
   * (entries already pruned count; nothing is unpruned).
   */
  public static void pruneTo(Module model, double sparsity) {
    List<Prune.Target> targets = targets(model);
    if (targets.isEmpty()) {
      throw new IllegalArgumentException("PruningSchedule: " + model.name() + " has no Linear or Conv layer to prune");
    }
    long total = 0;
    long pruned = 0;
    for (Prune.Target t : targets) {
      total += t.module().param("weight").numel();
      if (Prune.isPruned(t.module(), "weight")) {
        for (double m : t.module().buffer("weight_mask").toDoubleArray()) if (m != 1) pruned++;
      }
    }
    long want = Math.round(sparsity * total);
    if (want > pruned) Prune.globalUnstructured(targets, Math.toIntExact(want - pruned));
  }

  @Override
  public Map<String, Object> stateDict() {
    return Map.of("last_pruned_step", lastPrunedStep);
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    Object v = state.get("last_pruned_step");
    if (v instanceof Number n) lastPrunedStep = n.longValue();
  }
}
