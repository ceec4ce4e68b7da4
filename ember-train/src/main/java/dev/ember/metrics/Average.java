package dev.ember.metrics;

/**
 * How per-class precision, recall and F-scores are combined into one number, as scikit-learn's
 * {@code average} argument.
 */
public enum Average {
  /** The positive class (label 1) of a two-class problem only. */
  BINARY,
  /** One score from the true positives, predictions and targets summed over all classes. */
  MICRO,
  /** The unweighted mean of the per-class scores (every class counts, also absent ones). */
  MACRO,
  /** The mean of the per-class scores weighted by each class's support (number of targets). */
  WEIGHTED;

  /** The lower-case name used in metric names ({@code macro}). */
  String label() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
