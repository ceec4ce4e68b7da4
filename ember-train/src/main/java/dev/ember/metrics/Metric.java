package dev.ember.metrics;

import dev.ember.tensor.Tensor;
import java.util.Map;

/**
 * A streaming metric: {@link #update} with each batch's model output and targets, {@link #compute}
 * the value over everything seen since the last {@link #reset}. Two instances that saw disjoint
 * parts of the data {@link #merge} into the value over both (as workers or shards would).
 * {@link #stateDict} and {@link #loadStateDict} carry what was seen through a checkpoint, so that
 * a run resumed mid-epoch computes the same value as one that never stopped.
 *
 * @param <R> what {@link #compute} returns: {@code Double} for scalar metrics, richer types for
 *     curves and matrices
 */
public interface Metric<R> {
  /** The name under which the value is logged ({@code accuracy}, {@code f1_macro}, ...). */
  String name();

  /**
   * Adds a batch: {@code output} is what the model returned (logits or probabilities [B, C],
   * scores [B], or regression values), {@code target} the labels (I64 [B]) or true values.
   */
  void update(Tensor output, Tensor target);

  /** The value over everything seen since the last reset. */
  R compute();

  /** Forgets everything seen. */
  void reset();

  /** Adds what {@code other} (the same kind of metric, configured alike) has seen to this one. */
  void merge(Metric<R> other);

  /** A new instance with the same configuration that has seen nothing. */
  Metric<R> emptyCopy();

  /**
   * Everything accumulated since the last reset (counters, sums, stored scores and labels), as a
   * fresh map the metric does not keep a reference to. Values are only {@code Integer},
   * {@code Long}, {@code Double}, {@code Boolean}, {@code String}, {@code int[]}, {@code long[]},
   * {@code double[]}, {@link Tensor}, or {@code List}s and {@code Map}s (String keys) of those.
   * Configuration (k, thresholds, number of classes, averaging, name) is not included: it comes
   * from the constructor, so a state loads only into a metric configured alike.
   */
  Map<String, Object> stateDict();

  /**
   * Replaces what was accumulated with {@code state}, as returned by {@link #stateDict} of a
   * metric configured alike; afterwards {@link #update} and {@link #compute} go on as in that
   * metric. The state is validated before anything changes: a missing or unexpected key, a value
   * of the wrong type, or a size that does not fit this configuration (a confusion matrix of
   * another class count) throws an {@link IllegalArgumentException} naming the metric and the key.
   */
  void loadStateDict(Map<String, Object> state);
}
