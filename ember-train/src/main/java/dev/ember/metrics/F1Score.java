package dev.ember.metrics;

/**
 * F1 score: the harmonic mean {@code 2 * precision * recall / (precision + recall)}, as
 * scikit-learn's {@code f1_score} with {@code labels=range(numClasses)} and the default
 * {@code zero_division} (an undefined ratio counts as 0). {@link FBetaScore} with {@code beta = 1};
 * inputs are read as in {@link Precision}.
 */
public final class F1Score extends ClassificationScore {
  /** F1 over {@code numClasses} classes combined by {@code average}; binary scores thresholded at 0.5. */
  public F1Score(int numClasses, Average average) {
    this(numClasses, average, 0.5);
  }

  /** As {@link #F1Score(int, Average)}, with the threshold for [B] binary scores. */
  public F1Score(int numClasses, Average average, double threshold) {
    super("F1Score", numClasses, average, threshold);
  }

  @Override
  double combine(double precision, double recall) {
    return FBetaScore.fbeta(1.0, precision, recall);
  }

  @Override
  String baseName() {
    return "f1";
  }

  @Override
  public F1Score emptyCopy() {
    return new F1Score(numClasses, average, threshold);
  }
}
