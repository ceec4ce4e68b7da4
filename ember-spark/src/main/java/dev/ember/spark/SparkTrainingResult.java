package dev.ember.spark;

import dev.ember.autograd.Grad;
import dev.ember.nn.Module;
import dev.ember.tensor.Tensor;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a {@link SparkTrainer} run hands back to the driver: rank 0's trained weights (the model's state dict, the
 * same on every rank), the per-epoch history, and how the run went on the cluster (the attempts of its barrier
 * stage and the checkpoint its last attempt resumed from).
 */
public final class SparkTrainingResult {
  /**
   * One epoch, over all ranks: the mean training loss and the accuracy of the training forwards over the
   * {@code samples} seen (each rank's shard, a padded tail included, as {@code DistributedSampler} gives it).
   */
  public record Epoch(int epoch, double loss, double accuracy, long samples) {}

  private final LinkedHashMap<String, Tensor> stateDict;
  private final List<Epoch> history;
  private final int stageAttempts;
  private final int resumedFromEpoch;

  SparkTrainingResult(LinkedHashMap<String, Tensor> stateDict, List<Epoch> history, int stageAttempts, int resumedFromEpoch) {
    this.stateDict = stateDict;
    this.history = List.copyOf(history);
    this.stageAttempts = stageAttempts;
    this.resumedFromEpoch = resumedFromEpoch;
  }

  /** The trained model's state dict (keys as the factory's model names them, without DDP's {@code module.}). */
  public Map<String, Tensor> stateDict() {
    return Collections.unmodifiableMap(stateDict);
  }

  /** Copies the trained weights into {@code model} (built by the same factory) and returns it. */
  public <M extends Module> M loadInto(M model) {
    try (var ignored = Grad.off()) {
      model.loadStateDict(stateDict);
    }
    return model;
  }

  /** One entry per epoch, in order (epochs done by earlier attempts included, restored from the checkpoint). */
  public List<Epoch> history() {
    return history;
  }

  /** How many times Spark ran the barrier stage: 1 when no task failed. */
  public int stageAttempts() {
    return stageAttempts;
  }

  /** The epoch whose checkpoint the last attempt started from, or -1 when it started from scratch. */
  public int resumedFromEpoch() {
    return resumedFromEpoch;
  }

  @Override
  public String toString() {
    Epoch last = history.isEmpty() ? null : history.get(history.size() - 1);
    return "SparkTrainingResult(" + history.size() + " epochs" + (last == null ? "" : String.format(
        java.util.Locale.ROOT, ", last loss %.4f, accuracy %.4f", last.loss(), last.accuracy())) + ", " + stageAttempts
        + " stage attempt(s)" + (resumedFromEpoch >= 0 ? ", resumed after epoch " + resumedFromEpoch : "") + ")";
  }
}
