package dev.ember.bench;

import dev.ember.metrics.Accuracy;
import dev.ember.metrics.Average;
import dev.ember.metrics.AveragePrecision;
import dev.ember.metrics.ConfusionMatrix;
import dev.ember.metrics.F1Score;
import dev.ember.metrics.FBetaScore;
import dev.ember.metrics.MeanAbsoluteError;
import dev.ember.metrics.MeanAveragePrecision;
import dev.ember.metrics.MeanMetric;
import dev.ember.metrics.MeanSquaredError;
import dev.ember.metrics.Metric;
import dev.ember.metrics.Precision;
import dev.ember.metrics.PrecisionRecallCurve;
import dev.ember.metrics.R2Score;
import dev.ember.metrics.Recall;
import dev.ember.metrics.RocAuc;
import dev.ember.metrics.RocCurve;
import dev.ember.metrics.RootMeanSquaredError;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The {@code metrics} category: one {@code reset(); update(output, target); compute()} of an
 * ember-train metric on one batch of {@value #BATCH} samples (10 classes where it classifies), in
 * us per call.
 *
 * <p>PyTorch 1.13 has no metrics library, so the peer (bench/peers/pytorch_ops.py {@code --suite
 * metrics}) times what a PyTorch user calls for the same number: the scikit-learn function on the
 * same batch, from the same torch tensors ({@code .numpy()} views; predicted labels by
 * {@code argmax(1)} in torch), e.g. {@code precision_score(y, pred, labels=range(10),
 * average='macro', zero_division=0)}. scikit-learn is stateless, so one call there is the whole
 * reset/update/compute here. The inputs are the same on both sides: standard-normal logits [128x10]
 * and labels uniform over 10 classes; their softmax for the one-vs-rest ranking metrics; sigmoid
 * scores [128] and 0/1 labels for the binary ranking metrics; standard-normal predictions and
 * targets [128] for regression.
 *
 * <p>sklearn equivalents: accuracy_score, top_k_accuracy_score(k=5), precision/recall/f1/fbeta_score
 * (beta 2) with average='macro', confusion_matrix, roc_auc_score (binary; and multi_class='ovr',
 * average='macro'), average_precision_score (binary; and macro over label_binarize(y) for map),
 * roc_curve, precision_recall_curve, mean_absolute_error, mean_squared_error (squared=False for
 * rmse), r2_score. MeanMetric (the running mean of 128 values) has no scikit-learn counterpart and
 * runs Ember only.
 */
final class MetricCases {
  /** Workloads without a scikit-learn counterpart: their rows carry {@code "pytorch": null}. */
  static final Set<String> EMBER_ONLY = Set.of("mean");
  static final int BATCH = 128;
  static final int CLASSES = 10;
  private static volatile Object sink;

  private MetricCases() {}

  static List<BenchCase> cases() {
    Tensor logits = Tensor.randn(new Generator(31), BATCH, CLASSES);
    Tensor labels = Tensor.randint(new Generator(32), 0, CLASSES, BATCH);
    Tensor probs = logits.softmax(1);
    Tensor scores = Tensor.randn(new Generator(33), BATCH).sigmoid();
    Tensor binary = Tensor.randint(new Generator(34), 0, 2, BATCH);
    Tensor pred = Tensor.randn(new Generator(35), BATCH);
    Tensor truth = Tensor.randn(new Generator(36), BATCH);
    String cls = "update+compute b=" + BATCH + " c=" + CLASSES;
    String bin = "update+compute b=" + BATCH + " binary";
    String reg = "update+compute b=" + BATCH;
    List<BenchCase> out = new ArrayList<>();
    out.add(metric("accuracy", cls, new Accuracy(), logits, labels));
    out.add(metric("top5_accuracy", cls, Accuracy.topK(5), logits, labels));
    out.add(metric("precision_macro", cls, new Precision(CLASSES, Average.MACRO), logits, labels));
    out.add(metric("recall_macro", cls, new Recall(CLASSES, Average.MACRO), logits, labels));
    out.add(metric("f1_macro", cls, new F1Score(CLASSES, Average.MACRO), logits, labels));
    out.add(metric("fbeta2_macro", cls, new FBetaScore(2.0, CLASSES, Average.MACRO), logits, labels));
    out.add(metric("confusion_matrix", cls, new ConfusionMatrix(CLASSES), logits, labels));
    out.add(metric("roc_auc_ovr_macro", cls, new RocAuc(CLASSES, Average.MACRO), probs, labels));
    out.add(metric("map", cls, new MeanAveragePrecision(CLASSES), probs, labels));
    out.add(metric("roc_auc", bin, new RocAuc(), scores, binary));
    out.add(metric("average_precision", bin, new AveragePrecision(), scores, binary));
    out.add(metric("roc_curve", bin, new RocCurve(), scores, binary));
    out.add(metric("pr_curve", bin, new PrecisionRecallCurve(), scores, binary));
    out.add(metric("mae", reg, new MeanAbsoluteError(), pred, truth));
    out.add(metric("mse", reg, new MeanSquaredError(), pred, truth));
    out.add(metric("rmse", reg, new RootMeanSquaredError(), pred, truth));
    out.add(metric("r2", reg, new R2Score(), pred, truth));
    out.add(metric("mean", reg, new MeanMetric("loss"), pred, null));
    return out;
  }

  private static BenchCase metric(String workload, String name, Metric<?> m, Tensor output, Tensor target) {
    return BenchCase.latency(workload, name, "latency_us", "us/call", 1e6, () -> {
      m.reset();
      m.update(output, target);
      sink = m.compute();
    });
  }
}
