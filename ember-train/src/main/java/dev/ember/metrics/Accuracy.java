package dev.ember.metrics;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The fraction of samples classified correctly, as scikit-learn's {@code accuracy_score} (and
 * {@code top_k_accuracy_score} for {@code k > 1}).
 *
 * <p>What {@code output} may be:
 * <ul>
 *   <li>[B, C] floating logits or probabilities: a sample is correct when its target is among the
 *       {@code k} highest scores. Ties rank the lower class index first, so top-1 is the first
 *       arg-max (as {@code argmax} in NumPy and PyTorch). NaN ranks above every number, as there.
 *   <li>[B] or [B, 1] floating scores of the positive class (binary): the prediction is
 *       {@code score >= threshold ? 1 : 0} (threshold 0.5 for probabilities; use 0 for logits).
 *   <li>[B] integer predicted labels.
 * </ul>
 * {@code target} is [B] labels (integer, bool, or floating holding whole numbers).
 */
public final class Accuracy implements Metric<Double> {
  private final int k;
  private final double threshold;
  private long correct;
  private long total;

  /** Top-1 accuracy; binary scores are thresholded at 0.5. */
  public Accuracy() {
    this(1, 0.5);
  }

  /**
   * Top-{@code k} accuracy with a decision threshold for binary scores.
   *
   * @param k how many of the highest scores may hold the target (1 for plain accuracy)
   * @param threshold decision threshold for [B] binary scores
   */
  public Accuracy(int k, double threshold) {
    if (k < 1) throw new IllegalArgumentException("Accuracy: k must be >= 1, got " + k);
    if (Double.isNaN(threshold)) throw new IllegalArgumentException("Accuracy: threshold must not be NaN");
    this.k = k;
    this.threshold = threshold;
  }

  /** Top-{@code k} accuracy of [B, C] scores. */
  public static Accuracy topK(int k) {
    return new Accuracy(k, 0.5);
  }

  /** {@code accuracy}, or {@code top<k>_accuracy} for {@code k > 1}. */
  @Override
  public String name() {
    return k == 1 ? "accuracy" : "top" + k + "_accuracy";
  }

  @Override
  public void update(Tensor output, Tensor target) {
    String op = "Accuracy.update";
    if (output.dim() == 0 || output.dim() > 2) throw Inputs.shapeError(op, output, target);
    int b = Inputs.batch(op, output, target);
    if (Inputs.isScoreVector(output)) {
      if (k != 1) throw topKNeedsScores(op, output, target);
      int[] y = Inputs.targetLabels(op, output, target, 0);
      double[] s = Inputs.values(output);
      long hits = 0;
      for (int i = 0; i < b; i++) {
        if (y[i] != 0 && y[i] != 1) {
          throw Check.fail(op, "binary scores need targets 0 or 1 (got " + y[i] + " at index " + i + ")",
              "output", output, "target", target);
        }
        if ((s[i] >= threshold ? 1 : 0) == y[i]) hits++;
      }
      add(hits, b);
    } else if (output.dim() == 1) {
      if (k != 1) throw topKNeedsScores(op, output, target);
      int[] p = Inputs.labels(op, "output", output, output, target, 0);
      int[] y = Inputs.targetLabels(op, output, target, 0);
      long hits = 0;
      for (int i = 0; i < b; i++) if (p[i] == y[i]) hits++;
      add(hits, b);
    } else {
      if (!output.dtype().isFloatingPoint()) throw Inputs.shapeError(op, output, target);
      int c = output.size(1);
      int[] y = Inputs.targetLabels(op, output, target, c);
      add(topKHits(Inputs.values(output), y, b, c), b);
    }
  }

  private long topKHits(double[] s, int[] y, int b, int c) {
    long hits = 0;
    for (int i = 0; i < b; i++) {
      int base = i * c;
      int t = y[i];
      double st = s[base + t];
      int ahead = 0;  // classes ranked before the target: higher score, or equal score and lower index
      for (int j = 0; j < c && ahead < k; j++) {
        double sj = s[base + j];
        if (Inputs.greater(sj, st) || (Inputs.same(sj, st) && j < t)) ahead++;
      }
      if (ahead < k) hits++;
    }
    return hits;
  }

  private IllegalArgumentException topKNeedsScores(String op, Tensor output, Tensor target) {
    return Check.fail(op, "top-" + k + " accuracy needs [B, C] scores", "output", output, "target", target);
  }

  private void add(long hits, long n) {
    correct += hits;
    total += n;
  }

  /** Correct / seen. */
  @Override
  public Double compute() {
    if (total == 0) throw new IllegalStateException(name() + ".compute: no samples seen since the last reset");
    return (double) correct / total;
  }

  @Override
  public void reset() {
    correct = 0;
    total = 0;
  }

  @Override
  public void merge(Metric<Double> other) {
    Accuracy o = Merges.sameKind(this, other, Accuracy.class);
    if (o.k != k || Double.compare(o.threshold, threshold) != 0) {
      throw new IllegalArgumentException("Accuracy.merge: configurations differ (k " + k + " vs " + o.k
          + ", threshold " + threshold + " vs " + o.threshold + ")");
    }
    add(o.correct, o.total);
  }

  @Override
  public Accuracy emptyCopy() {
    return new Accuracy(k, threshold);
  }

  /** {@code correct} and {@code total} (Long). */
  @Override
  public Map<String, Object> stateDict() {
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("correct", correct);
    s.put("total", total);
    return s;
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    StateReader r = new StateReader(this, state, "correct", "total");
    long c = r.count("correct");
    long t = r.count("total");
    if (c > t) throw r.fail("'correct' exceeds 'total' (" + c + " > " + t + ")");
    correct = c;
    total = t;
  }
}
