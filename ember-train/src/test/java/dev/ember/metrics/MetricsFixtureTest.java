package dev.ember.metrics;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.nn.io.Json;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every metric against scikit-learn 1.2 on the cases in metrics/metrics_fixtures.json (written by
 * make_fixtures.py beside it). Each value is checked twice: fed in several uneven batches, and as
 * the merge of two instances that saw one half each.
 */
class MetricsFixtureTest {
  static final double RTOL = 1e-12;
  private static Map<String, Object> fixtures;

  @SuppressWarnings("unchecked")
  static synchronized Map<String, Object> fixtures() {
    if (fixtures == null) {
      try (InputStream in = MetricsFixtureTest.class.getResourceAsStream("/metrics/metrics_fixtures.json")) {
        if (in == null) throw new IllegalStateException("metrics/metrics_fixtures.json is not on the test classpath");
        fixtures = (Map<String, Object>) Json.parsePlain(in.readAllBytes(), 0, Json.MAX_DEPTH, Json.NonFinite.REJECT);
      } catch (IOException | Json.SyntaxError e) {
        throw new IllegalStateException(e);
      }
    }
    return fixtures;
  }

  @SuppressWarnings("unchecked")
  static Stream<Arguments> section(String name) {
    return ((List<Object>) fixtures().get(name)).stream()
        .map(c -> (Map<String, Object>) c)
        .map(c -> Arguments.of(c.get("name"), c));
  }

  static Stream<Arguments> classification() {
    return section("classification");
  }

  static Stream<Arguments> binaryRanking() {
    return section("binary_ranking");
  }

  static Stream<Arguments> multiclassRanking() {
    return section("multiclass_ranking");
  }

  static Stream<Arguments> regression() {
    return section("regression");
  }

  // ---------------------------------------------------------------- conversions

  @SuppressWarnings("unchecked")
  static Tensor floats(Object json) {
    List<Object> l = (List<Object>) json;
    if (!l.isEmpty() && l.get(0) instanceof List<?> first) {
      int cols = first.size();
      double[] d = new double[l.size() * cols];
      for (int i = 0; i < l.size(); i++) {
        List<Object> row = (List<Object>) l.get(i);
        for (int j = 0; j < cols; j++) d[i * cols + j] = number(row.get(j));
      }
      return Tensor.of(d, l.size(), cols);
    }
    return Tensor.of(doubles(json), l.size());
  }

  @SuppressWarnings("unchecked")
  static double[] doubles(Object json) {
    List<Object> l = (List<Object>) json;
    double[] d = new double[l.size()];
    for (int i = 0; i < d.length; i++) d[i] = number(l.get(i));
    return d;
  }

  static Tensor longs(Object json) {
    double[] d = doubles(json);
    long[] v = new long[d.length];
    for (int i = 0; i < d.length; i++) v[i] = (long) d[i];
    return Tensor.of(v, v.length);
  }

  /** A JSON number as a double (the reader gives Long for integers, Double otherwise); null stays null. */
  static Double number(Object json) {
    return json == null ? null : ((Number) json).doubleValue();
  }

  static int integer(Object json) {
    return (int) (double) number(json);
  }

  // ---------------------------------------------------------------- feeding

  /** Feeds (output, target) in 3 to 6 uneven batches chosen by {@code seed} and computes. */
  static <R> R batched(Metric<R> m, Tensor output, Tensor target, long seed) {
    feed(m, output, target, 0, output.size(0), seed);
    return m.compute();
  }

  /** Two empty copies see one half each (itself in batches), then the first merges the second. */
  static <R> R merged(Metric<R> proto, Tensor output, Tensor target, long seed) {
    Metric<R> a = proto.emptyCopy();
    Metric<R> b = proto.emptyCopy();
    int n = output.size(0);
    int half = n / 2;
    feed(a, output, target, 0, half, seed);
    feed(b, output, target, half, n, seed + 1);
    a.merge(b);
    return a.compute();
  }

  private static void feed(Metric<?> m, Tensor output, Tensor target, int from, int to, long seed) {
    Random rnd = new Random(seed);
    int pos = from;
    while (pos < to) {
      int len = Math.min(to - pos, 1 + rnd.nextInt(Math.max(1, (to - from) / 3)));
      m.update(output.narrow(0, pos, len), target.narrow(0, pos, len));
      pos += len;
    }
  }

  /** Checks {@code expected} against the batched and the merged value of a scalar metric. */
  static void check(String what, double expected, Supplier<Metric<Double>> metric, Tensor output, Tensor target) {
    assertClose(what + " (batched)", expected, batched(metric.get(), output, target, 11));
    assertClose(what + " (merged halves)", expected, merged(metric.get(), output, target, 12));
  }

  static void assertClose(String what, double expected, double actual) {
    if (Double.isNaN(expected) && Double.isNaN(actual)) return;
    double tol = RTOL * Math.abs(expected) + 1e-300;
    if (!(Math.abs(actual - expected) <= tol)) {
      fail(what + ": expected " + expected + ", got " + actual + " (|diff| " + Math.abs(actual - expected)
          + " > " + tol + ")");
    }
  }

  static void assertClose(String what, double[] expected, double[] actual) {
    assertEquals(expected.length, actual.length, what + ": length");
    for (int i = 0; i < expected.length; i++) assertClose(what + "[" + i + "]", expected[i], actual[i]);
  }

  // ---------------------------------------------------------------- classification

  static Tensor classificationOutput(Map<String, Object> c) {
    return "labels".equals(c.get("kind")) ? longs(c.get("output")) : floats(c.get("output"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("classification")
  void accuracyMatchesSklearn(String name, Map<String, Object> c) {
    Tensor out = classificationOutput(c);
    Tensor y = longs(c.get("target"));
    double th = number(c.get("threshold"));
    check(name + " accuracy", number(c.get("accuracy")), () -> new Accuracy(1, th), out, y);
    if (c.containsKey("top2_accuracy")) {
      check(name + " top2", number(c.get("top2_accuracy")), () -> Accuracy.topK(2), out, y);
    }
  }

  @SuppressWarnings("unchecked")
  @ParameterizedTest(name = "{0}")
  @MethodSource("classification")
  void precisionRecallFScoresMatchSklearn(String name, Map<String, Object> c) {
    Tensor out = classificationOutput(c);
    Tensor y = longs(c.get("target"));
    int k = integer(c.get("num_classes"));
    double th = number(c.get("threshold"));
    Map<String, Object> prf = (Map<String, Object>) c.get("prf");
    int checked = 0;
    for (var e : prf.entrySet()) {
      Average avg = Average.valueOf(e.getKey().toUpperCase(java.util.Locale.ROOT));
      Map<String, Object> v = (Map<String, Object>) e.getValue();
      String at = name + " " + e.getKey() + " ";
      check(at + "precision", number(v.get("precision")), () -> new Precision(k, avg, th), out, y);
      check(at + "recall", number(v.get("recall")), () -> new Recall(k, avg, th), out, y);
      check(at + "f1", number(v.get("f1")), () -> new F1Score(k, avg, th), out, y);
      check(at + "f0.5", number(v.get("f0.5")), () -> new FBetaScore(0.5, k, avg, th), out, y);
      check(at + "f2", number(v.get("f2")), () -> new FBetaScore(2, k, avg, th), out, y);
      checked++;
    }
    assertEquals(k == 2 ? 4 : 3, checked);
  }

  @SuppressWarnings("unchecked")
  @ParameterizedTest(name = "{0}")
  @MethodSource("classification")
  void confusionMatrixMatchesSklearn(String name, Map<String, Object> c) {
    Tensor out = classificationOutput(c);
    Tensor y = longs(c.get("target"));
    int k = integer(c.get("num_classes"));
    List<Object> rows = (List<Object>) c.get("confusion_matrix");
    long[][] expected = new long[k][];
    for (int i = 0; i < k; i++) expected[i] = longs(rows.get(i)).toLongArray();
    ConfusionMatrix proto = new ConfusionMatrix(k, number(c.get("threshold")));
    assertArrayEquals(expected, batched(proto.emptyCopy(), out, y, 3));
    assertArrayEquals(expected, merged(proto, out, y, 4));

    ConfusionMatrix cm = proto.emptyCopy();
    batched(cm, out, y, 5);
    for (ConfusionMatrix.Normalize by : ConfusionMatrix.Normalize.values()) {
      List<Object> exp = (List<Object>) c.get("confusion_matrix_" + by.name().toLowerCase(java.util.Locale.ROOT));
      double[][] got = cm.normalized(by);
      for (int i = 0; i < k; i++) assertClose(name + " normalized " + by + " row " + i, doubles(exp.get(i)), got[i]);
    }
  }

  // ---------------------------------------------------------------- ranking

  @SuppressWarnings("unchecked")
  @ParameterizedTest(name = "{0}")
  @MethodSource("binaryRanking")
  void binaryCurvesMatchSklearn(String name, Map<String, Object> c) {
    Tensor s = floats(c.get("scores"));
    Tensor y = longs(c.get("target"));
    Map<String, Object> roc = (Map<String, Object>) c.get("roc");
    for (RocCurve.Result r : List.of(batched(new RocCurve(), s, y, 1), merged(new RocCurve(), s, y, 2))) {
      assertClose(name + " fpr", doubles(roc.get("fpr")), r.fpr());
      assertClose(name + " tpr", doubles(roc.get("tpr")), r.tpr());
      assertClose(name + " roc thresholds", doubles(roc.get("thresholds")), r.thresholds());
    }
    Map<String, Object> pr = (Map<String, Object>) c.get("pr");
    var proto = new PrecisionRecallCurve();
    for (PrecisionRecallCurve.Result r : List.of(batched(proto.emptyCopy(), s, y, 1), merged(proto, s, y, 2))) {
      assertClose(name + " precision", doubles(pr.get("precision")), r.precision());
      assertClose(name + " recall", doubles(pr.get("recall")), r.recall());
      assertClose(name + " pr thresholds", doubles(pr.get("thresholds")), r.thresholds());
    }
    check(name + " roc_auc", number(c.get("roc_auc")), RocAuc::new, s, y);
    check(name + " average_precision", number(c.get("average_precision")), AveragePrecision::new, s, y);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("multiclassRanking")
  void oneVsRestMatchesSklearn(String name, Map<String, Object> c) {
    Tensor s = floats(c.get("scores"));
    Tensor y = longs(c.get("target"));
    int k = integer(c.get("num_classes"));
    if (c.containsKey("roc_auc_macro")) {
      check(name + " roc_auc macro", number(c.get("roc_auc_macro")), () -> new RocAuc(k, Average.MACRO), s, y);
      check(name + " roc_auc weighted", number(c.get("roc_auc_weighted")), () -> new RocAuc(k, Average.WEIGHTED), s, y);
    } else {  // a class is missing from the targets: sklearn raises, and so does compute
      RocAuc auc = new RocAuc(k, Average.MACRO);
      auc.update(s, y);
      assertThrows(IllegalStateException.class, auc::compute);
    }
    check(name + " map", number(c.get("mean_average_precision")), () -> new MeanAveragePrecision(k), s, y);
  }

  // ---------------------------------------------------------------- regression and means

  @ParameterizedTest(name = "{0}")
  @MethodSource("regression")
  void regressionMatchesSklearn(String name, Map<String, Object> c) {
    Tensor o = floats(c.get("output"));
    Tensor t = floats(c.get("target"));
    check(name + " mae", number(c.get("mae")), MeanAbsoluteError::new, o, t);
    check(name + " mse", number(c.get("mse")), MeanSquaredError::new, o, t);
    check(name + " rmse", number(c.get("rmse")), RootMeanSquaredError::new, o, t);
    check(name + " r2", number(c.get("r2")), R2Score::new, o, t);
  }

  @SuppressWarnings("unchecked")
  @Test
  void weightedMeanMatchesNumpy() {
    for (Object o : (List<Object>) fixtures().get("mean")) {
      Map<String, Object> c = (Map<String, Object>) o;
      double[] v = doubles(c.get("values"));
      double[] w = doubles(c.get("weights"));
      double expected = number(c.get("mean"));
      MeanMetric scalar = new MeanMetric("loss");
      for (int i = 0; i < v.length; i++) scalar.update(v[i], (long) w[i]);
      assertClose("scalar updates", expected, scalar.compute());
      MeanMetric proto = new MeanMetric("loss");
      check("tensor updates", expected, () -> proto.emptyCopy(), Tensor.of(v, v.length), Tensor.of(w, w.length));
    }
  }

  @Test
  void emptyBatchesChangeNothing() {
    Tensor out = Tensor.of(new double[][] {{0.6, 0.3, 0.1}, {0.2, 0.5, 0.3}, {0.1, 0.2, 0.7}, {0.5, 0.1, 0.4}});
    Tensor labels = Tensor.of(new long[] {0, 1, 2, 2}, 4);
    Tensor noScores = Tensor.zeros(0, 3);
    List<Metric<Double>> metrics = List.of(new Accuracy(), new F1Score(3, Average.MACRO), new RocAuc(3, Average.MACRO),
        new MeanAveragePrecision(3), new MeanSquaredError(), new R2Score());
    for (Metric<Double> m : metrics) {
      boolean regression = m instanceof RegressionMetric;
      Tensor target = regression ? out.mul(0.5) : labels;
      Tensor noTarget = regression ? Tensor.zeros(0, 3) : Tensor.of(new long[0], 0);
      Metric<Double> reference = m.emptyCopy();
      reference.update(out, target);
      m.update(noScores, noTarget);
      assertThrows(IllegalStateException.class, m::compute, m.name());
      m.update(out, target);
      m.update(noScores, noTarget);
      assertEquals(reference.compute(), m.compute(), m.name());
    }
  }

  @Test
  void fixturesCoverEveryCaseTheScriptWrites() {
    assertEquals("1.2.1", fixtures().get("sklearn"));
    assertEquals(7, classification().count());
    assertEquals(4, binaryRanking().count());
    assertEquals(4, multiclassRanking().count());
    assertEquals(3, regression().count());
  }

  @Test
  void float32InputsGiveTheSameCountsAsFloat64() {
    Map<String, Object> c = classification().map(a -> {
      @SuppressWarnings("unchecked") Map<String, Object> m = (Map<String, Object>) a.get()[1];
      return m;
    }).filter(m -> m.get("name").equals("three_class_logits")).findFirst().orElseThrow();
    Tensor out = floats(c.get("output"));
    Tensor y = longs(c.get("target"));
    // argmax of the float32-rounded logits equals that of the float64 ones on this case
    Tensor out32 = out.to(DType.F32);
    assertEquals(number(c.get("accuracy")), batched(new Accuracy(), out32, y.to(DType.I32), 7), 0.0);
    List<Double> f1 = new ArrayList<>();
    for (Tensor o : List.of(out, out32)) f1.add(batched(new F1Score(3, Average.MACRO), o, y, 8));
    assertEquals(f1.get(0), f1.get(1), 0.0);
    assertTrue(f1.get(0) > 0);
  }
}
