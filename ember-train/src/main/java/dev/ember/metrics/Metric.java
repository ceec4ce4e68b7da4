package dev.ember.metrics;

import dev.ember.tensor.Tensor;

/**
 * A streaming metric: {@link #update} with each batch's model output and targets, {@link #compute}
 * the value over everything seen since the last {@link #reset}. Two instances that saw disjoint
 * parts of the data {@link #merge} into the value over both (as workers or shards would).
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
}
