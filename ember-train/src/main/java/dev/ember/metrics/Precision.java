package dev.ember.metrics;

/**
 * Precision: true positives / predicted positives (tp / (tp + fp)), as scikit-learn's {@code precision_score} with {@code labels=range(numClasses)}
 * and the default {@code zero_division} (an undefined ratio counts as 0). {@code output} is read as
 * in {@link Accuracy}: [B, C] scores (arg-max), [B] binary scores (thresholded, two classes only)
 * or [B] predicted labels; {@code target} is [B] labels.
 */
public final class Precision extends ClassificationScore {
  /** Precision over {@code numClasses} classes combined by {@code average}; binary scores thresholded at 0.5. */
  public Precision(int numClasses, Average average) {
    this(numClasses, average, 0.5);
  }

  /** As {@link #Precision(int, Average)}, with the threshold for [B] binary scores. */
  public Precision(int numClasses, Average average, double threshold) {
    super("Precision", numClasses, average, threshold);
  }

  @Override
  double combine(double precision, double recall) {
    return precision;
  }

  @Override
  String baseName() {
    return "precision";
  }

  @Override
  public Precision emptyCopy() {
    return new Precision(numClasses, average, threshold);
  }
}
