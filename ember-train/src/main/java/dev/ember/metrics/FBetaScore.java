package dev.ember.metrics;

/**
 * F-beta score: {@code (1 + beta^2) * precision * recall / (beta^2 * precision + recall)}, the
 * weighted harmonic mean of precision and recall ({@code beta > 1} favours recall), as
 * scikit-learn's {@code fbeta_score} with {@code labels=range(numClasses)} and the default
 * {@code zero_division} (an undefined ratio counts as 0, and so does a zero denominator).
 * Per-class scores are computed first and then averaged, except for {@link Average#MICRO}.
 * Inputs are read as in {@link Precision}.
 */
public final class FBetaScore extends ClassificationScore {
  private final double beta;

  /** F-beta over {@code numClasses} classes combined by {@code average}; binary scores thresholded at 0.5. */
  public FBetaScore(double beta, int numClasses, Average average) {
    this(beta, numClasses, average, 0.5);
  }

  /** As {@link #FBetaScore(double, int, Average)}, with the threshold for [B] binary scores. */
  public FBetaScore(double beta, int numClasses, Average average, double threshold) {
    super("FBetaScore", numClasses, average, threshold);
    if (!(beta >= 0)) throw new IllegalArgumentException("FBetaScore: beta must be >= 0, got " + beta);
    this.beta = beta;
  }

  /** The weight of recall relative to precision. */
  public double beta() {
    return beta;
  }

  @Override
  double combine(double precision, double recall) {
    return fbeta(beta, precision, recall);
  }

  /** scikit-learn's formula, in its order of operations; {@code beta = +inf} gives the recall. */
  static double fbeta(double beta, double precision, double recall) {
    if (beta == Double.POSITIVE_INFINITY) return recall;
    double beta2 = beta * beta;
    double denom = beta2 * precision + recall;
    if (denom == 0.0) denom = 1;
    return (1 + beta2) * precision * recall / denom;
  }

  /** {@code f<beta>}: {@code f2}, {@code f0.5}. */
  @Override
  String baseName() {
    return beta == Math.rint(beta) && !Double.isInfinite(beta) ? "f" + (long) beta : "f" + beta;
  }

  @Override
  boolean sameExtra(ClassificationScore o) {
    return Double.compare(((FBetaScore) o).beta, beta) == 0;
  }

  @Override
  public FBetaScore emptyCopy() {
    return new FBetaScore(beta, numClasses, average, threshold);
  }
}
