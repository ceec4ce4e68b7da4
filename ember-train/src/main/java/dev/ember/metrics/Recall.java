package dev.ember.metrics;

/**
 * Recall: true positives / actual positives (tp / (tp + fn)), as scikit-learn's {@code recall_score} with {@code labels=range(numClasses)}
 * and the default {@code zero_division} (an undefined ratio counts as 0). {@code output} is read as
 * in {@link Accuracy}: [B, C] scores (arg-max), [B] binary scores (thresholded, two classes only)
 * or [B] predicted labels; {@code target} is [B] labels.
 */
public final class Recall extends ClassificationScore {
  /** Recall over {@code numClasses} classes combined by {@code average}; binary scores thresholded at 0.5. */
  public Recall(int numClasses, Average average) {
    this(numClasses, average, 0.5);
  }

  /** As {@link #Recall(int, Average)}, with the threshold for [B] binary scores. */
  public Recall(int numClasses, Average average, double threshold) {
    super("Recall", numClasses, average, threshold);
  }

  @Override
  double combine(double precision, double recall) {
    return recall;
  }

  @Override
  String baseName() {
    return "recall";
  }

  @Override
  public Recall emptyCopy() {
    return new Recall(numClasses, average, threshold);
  }
}
