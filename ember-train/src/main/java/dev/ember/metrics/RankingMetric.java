package dev.ember.metrics;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Shared body of the threshold-free metrics (ROC, precision-recall, AUC, average precision): they
 * keep every score and label seen, since their value depends on the order of all scores.
 *
 * <p>Binary ({@code numClasses == 0}): {@code output} is [B] or [B, 1] floating scores of the
 * positive class, {@code target} [B] labels 0 or 1. One-vs-rest ({@code numClasses >= 2}):
 * {@code output} is [B, numClasses] floating scores, {@code target} [B] labels in
 * {@code [0, numClasses)}. Scores must be finite (scikit-learn rejects NaN and infinity too).
 */
abstract sealed class RankingMetric<R> implements Metric<R>
    permits RocCurve, RocAuc, PrecisionRecallCurve, AveragePrecision, MeanAveragePrecision {
  final int numClasses;
  final ScoreBuffer seen;

  RankingMetric(int numClasses) {
    this.numClasses = numClasses;
    this.seen = new ScoreBuffer(numClasses == 0 ? 1 : numClasses);
  }

  private String op(String method) {
    return getClass().getSimpleName() + "." + method;
  }

  @Override
  public void update(Tensor output, Tensor target) {
    String op = op("update");
    if (output.dim() == 0 || output.dim() > 2) throw Inputs.shapeError(op, output, target);
    Inputs.batch(op, output, target);
    int[] y;
    if (numClasses == 0) {
      Inputs.requireScoreVector(op, output, target);
      y = Inputs.binaryTargets(op, output, target);
    } else {
      if (output.dim() != 2 || output.size(1) != numClasses || !output.dtype().isFloatingPoint()) {
        throw Check.fail(op, "output must be [B, " + numClasses + "] floating scores (got "
            + java.util.Arrays.toString(output.shape()) + " " + output.dtype().torchName() + ")",
            "output", output, "target", target);
      }
      y = Inputs.targetLabels(op, output, target, numClasses);
    }
    seen.append(Inputs.finiteScores(op, output, target), y);
  }

  /** Fails when nothing was seen; returns the op name for compute errors. */
  String requireSamples() {
    if (seen.size() == 0) throw new IllegalStateException(op("compute") + ": no samples seen since the last reset");
    return op("compute");
  }

  /** Samples seen since the last reset. */
  public long count() {
    return seen.size();
  }

  @Override
  public void reset() {
    seen.clear();
  }

  /**
   * Every score and label seen: {@code scores} (double[], row-major [samples, columns] with one
   * column for binary metrics and numClasses otherwise) and {@code labels} (long[samples]).
   */
  @Override
  public Map<String, Object> stateDict() {
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("scores", seen.scores());
    s.put("labels", seen.labels());
    return s;
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    StateReader r = new StateReader(this, state, "scores", "labels");
    long[] labels = r.longs("labels", -1, "");
    int columns = seen.columns;
    if ((long) labels.length * columns > Integer.MAX_VALUE - 8) {
      throw r.fail("too many samples (" + labels.length + " of " + columns + " scores)");
    }
    double[] scores = r.doubles("scores", labels.length * columns,
        "for " + labels.length + " labels x " + columns + (columns == 1 ? " score" : " scores"));
    int bound = numClasses == 0 ? 2 : numClasses;
    int[] y = new int[labels.length];
    for (int i = 0; i < y.length; i++) {
      if (labels[i] < 0 || labels[i] >= bound) {
        throw r.fail("'labels' must lie in [0, " + bound + ") (got " + labels[i] + " at index " + i + ")");
      }
      y[i] = (int) labels[i];
    }
    for (int i = 0; i < scores.length; i++) {
      if (!Double.isFinite(scores[i])) {
        throw r.fail("'scores' must be finite (got " + scores[i] + " at index " + i + ")");
      }
      scores[i] += 0.0;  // -0.0 ties with 0.0, as update folds it
    }
    seen.replace(scores, y);
  }

  @Override
  public void merge(Metric<R> other) {
    RankingMetric<?> o = Merges.sameKind(this, other, getClass());
    if (o.numClasses != numClasses) {
      throw new IllegalArgumentException(op("merge") + ": configurations differ (numClasses "
          + numClasses + " vs " + o.numClasses + ")");
    }
    seen.appendAll(o.seen);
  }
}
