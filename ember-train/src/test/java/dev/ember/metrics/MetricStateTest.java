package dev.ember.metrics;

import static dev.ember.metrics.MetricsFixtureTest.classificationOutput;
import static dev.ember.metrics.MetricsFixtureTest.doubles;
import static dev.ember.metrics.MetricsFixtureTest.floats;
import static dev.ember.metrics.MetricsFixtureTest.longs;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.tensor.Tensor;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link Metric#stateDict} and {@link Metric#loadStateDict} of every metric class: a metric
 * stopped part way through the data, saved, loaded into an empty copy and fed the rest computes
 * exactly what one metric fed everything computes.
 */
class MetricStateTest {
  /** One metric on inputs it accepts (from metrics_fixtures.json). */
  record Case(String label, Supplier<Metric<?>> make, Tensor output, Tensor target) {
    @Override
    public String toString() {
      return label;
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> fixture(String section, String name) {
    return ((List<Object>) MetricsFixtureTest.fixtures().get(section)).stream()
        .map(c -> (Map<String, Object>) c)
        .filter(c -> name.equals(c.get("name")))
        .findFirst().orElseThrow(() -> new IllegalStateException("no fixture " + section + "/" + name));
  }

  static Stream<Case> everyMetric() {
    List<Case> cases = new ArrayList<>();
    var three = fixture("classification", "three_class_logits");
    Tensor out3 = classificationOutput(three);
    Tensor y3 = longs(three.get("target"));
    var bin = fixture("classification", "binary_logits");
    Tensor outB = classificationOutput(bin);
    Tensor yB = longs(bin.get("target"));
    var labels = fixture("classification", "four_class_labels");
    Tensor out4 = classificationOutput(labels);
    Tensor y4 = longs(labels.get("target"));
    cases.add(new Case("Accuracy", Accuracy::new, out3, y3));
    cases.add(new Case("Accuracy top2", () -> Accuracy.topK(2), out3, y3));
    cases.add(new Case("Accuracy binary logits", () -> new Accuracy(1, 0.0), outB, yB));
    cases.add(new Case("Accuracy labels", Accuracy::new, out4, y4));
    for (Average avg : List.of(Average.MICRO, Average.MACRO, Average.WEIGHTED)) {
      cases.add(new Case("Precision " + avg, () -> new Precision(3, avg), out3, y3));
      cases.add(new Case("Recall " + avg, () -> new Recall(3, avg), out3, y3));
      cases.add(new Case("F1Score " + avg, () -> new F1Score(3, avg), out3, y3));
      cases.add(new Case("FBetaScore " + avg, () -> new FBetaScore(0.5, 3, avg), out3, y3));
    }
    cases.add(new Case("F1Score BINARY", () -> new F1Score(2, Average.BINARY, 0.0), outB, yB));
    cases.add(new Case("FBetaScore BINARY", () -> new FBetaScore(2, 2, Average.BINARY, 0.0), outB, yB));
    cases.add(new Case("ConfusionMatrix", () -> new ConfusionMatrix(3), out3, y3));
    cases.add(new Case("ConfusionMatrix labels", () -> new ConfusionMatrix(4), out4, y4));

    var ties = fixture("binary_ranking", "binary_ties");
    Tensor s = floats(ties.get("scores"));
    Tensor ys = longs(ties.get("target"));
    cases.add(new Case("RocCurve", RocCurve::new, s, ys));
    cases.add(new Case("RocAuc", RocAuc::new, s, ys));
    cases.add(new Case("PrecisionRecallCurve", PrecisionRecallCurve::new, s, ys));
    cases.add(new Case("AveragePrecision", AveragePrecision::new, s, ys));
    var probs = fixture("multiclass_ranking", "three_class_tied_probs");
    Tensor p = floats(probs.get("scores"));
    Tensor yp = longs(probs.get("target"));
    cases.add(new Case("RocAuc MACRO", () -> new RocAuc(3, Average.MACRO), p, yp));
    cases.add(new Case("RocAuc WEIGHTED", () -> new RocAuc(3, Average.WEIGHTED), p, yp));
    cases.add(new Case("MeanAveragePrecision", () -> new MeanAveragePrecision(3), p, yp));

    for (String name : List.of("single_output", "three_outputs")) {
      var r = fixture("regression", name);
      Tensor o = floats(r.get("output"));
      Tensor t = floats(r.get("target"));
      cases.add(new Case("MeanAbsoluteError " + name, MeanAbsoluteError::new, o, t));
      cases.add(new Case("MeanSquaredError " + name, MeanSquaredError::new, o, t));
      cases.add(new Case("RootMeanSquaredError " + name, RootMeanSquaredError::new, o, t));
      cases.add(new Case("R2Score " + name, R2Score::new, o, t));
    }
    @SuppressWarnings("unchecked")
    var mean = (Map<String, Object>) ((List<Object>) MetricsFixtureTest.fixtures().get("mean")).get(0);
    double[] v = doubles(mean.get("values"));
    double[] w = doubles(mean.get("weights"));
    cases.add(new Case("MeanMetric", () -> new MeanMetric("loss"), Tensor.of(v, v.length), Tensor.of(w, w.length)));
    return cases.stream();
  }

  @Test
  void casesCoverEveryMetricClass() {
    List<Class<?>> expected = List.of(Accuracy.class, Precision.class, Recall.class, F1Score.class, FBetaScore.class,
        ConfusionMatrix.class, RocCurve.class, RocAuc.class, PrecisionRecallCurve.class, AveragePrecision.class,
        MeanAveragePrecision.class, MeanAbsoluteError.class, MeanSquaredError.class, RootMeanSquaredError.class,
        R2Score.class, MeanMetric.class);
    Set<Class<?>> covered = new java.util.HashSet<>();
    everyMetric().forEach(c -> covered.add(c.make().get().getClass()));
    assertEquals(Set.copyOf(expected), covered);
  }

  // ---------------------------------------------------------------- feeding and comparing

  /** Feeds rows [from, to) in uneven batches chosen by {@code seed}. */
  private static void feed(Metric<?> m, Case c, int from, int to, long seed) {
    Random rnd = new Random(seed);
    int pos = from;
    while (pos < to) {
      int len = Math.min(to - pos, 1 + rnd.nextInt(7));
      m.update(c.output().narrow(0, pos, len), c.target().narrow(0, pos, len));
      pos += len;
    }
  }

  /** Bitwise equality of compute results: Doubles, long[][] matrices, records of double[] curves. */
  private static void assertSameResult(String what, Object expected, Object actual) {
    switch (expected) {
      case Double d -> assertEquals(Double.doubleToRawLongBits(d), Double.doubleToRawLongBits((Double) actual),
          what + ": expected " + d + ", got " + actual);
      case long[][] m -> assertArrayEquals(m, (long[][]) actual, what);
      case Record r -> {
        assertEquals(r.getClass(), actual.getClass(), what);
        for (RecordComponent rc : r.getClass().getRecordComponents()) {
          try {
            double[] e = (double[]) rc.getAccessor().invoke(r);
            double[] a = (double[]) rc.getAccessor().invoke(actual);
            assertTrue(Arrays.equals(e, a), what + "." + rc.getName() + ": expected " + Arrays.toString(e)
                + ", got " + Arrays.toString(a));
          } catch (ReflectiveOperationException ex) {
            throw new AssertionError(ex);
          }
        }
      }
      default -> fail(what + ": no comparison for " + expected.getClass());
    }
  }

  /** Deep equality of states; arrays compared element-wise (doubles by bits). */
  private static boolean sameState(Object a, Object b) {
    return switch (a) {
      case double[] x -> b instanceof double[] y && Arrays.equals(x, y);
      case long[] x -> b instanceof long[] y && Arrays.equals(x, y);
      case int[] x -> b instanceof int[] y && Arrays.equals(x, y);
      case Map<?, ?> x -> b instanceof Map<?, ?> y && x.keySet().equals(y.keySet())
          && x.keySet().stream().allMatch(k -> sameState(x.get(k), y.get(k)));
      case List<?> x -> b instanceof List<?> y && x.size() == y.size()
          && java.util.stream.IntStream.range(0, x.size()).allMatch(i -> sameState(x.get(i), y.get(i)));
      default -> a.equals(b);
    };
  }

  /** Fails unless every value under {@code v} is one of the kinds {@link Metric#stateDict} allows. */
  static void assertAllowedKinds(String path, Object v) {
    switch (v) {
      case Integer i -> { }
      case Long l -> { }
      case Double d -> { }
      case Boolean b -> { }
      case String s -> { }
      case int[] a -> { }
      case long[] a -> { }
      case double[] a -> { }
      case Tensor t -> { }
      case List<?> l -> {
        for (int i = 0; i < l.size(); i++) assertAllowedKinds(path + "[" + i + "]", l.get(i));
      }
      case Map<?, ?> m -> {
        for (var e : m.entrySet()) {
          if (!(e.getKey() instanceof String k)) throw new AssertionError(path + ": non-String key " + e.getKey());
          assertAllowedKinds(path + "." + k, e.getValue());
        }
      }
      case null -> fail(path + " is null");
      default -> fail(path + " is a " + v.getClass().getName() + ", not an allowed state kind");
    }
  }

  /** A deep copy, so that a test can scramble what it loaded. */
  private static Object deepCopy(Object v) {
    return switch (v) {
      case double[] a -> a.clone();
      case long[] a -> a.clone();
      case int[] a -> a.clone();
      case Map<?, ?> m -> {
        Map<String, Object> out = new LinkedHashMap<>();
        for (var e : m.entrySet()) out.put((String) e.getKey(), deepCopy(e.getValue()));
        yield out;
      }
      default -> v;
    };
  }

  private static void scramble(Map<String, Object> state) {
    for (Object v : state.values()) {
      switch (v) {
        case double[] a -> Arrays.fill(a, 7.25);
        case long[] a -> Arrays.fill(a, 1);
        case int[] a -> Arrays.fill(a, 1);
        default -> { }
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> copyOf(Map<String, Object> state) {
    return (Map<String, Object>) deepCopy(state);
  }

  // ---------------------------------------------------------------- the round trip

  @ParameterizedTest(name = "{0}")
  @MethodSource("everyMetric")
  void resumedFromStateMatchesUninterrupted(Case c) {
    int n = c.output().size(0);
    Metric<?> whole = c.make().get();
    feed(whole, c, 0, n, 1);
    Object expected = whole.compute();
    for (int split : new int[] {0, 1, 2 * n / 5, n - 1, n}) {
      String at = c.label() + " split at " + split + "/" + n;
      Metric<?> first = c.make().get();
      feed(first, c, 0, split, 1);
      Map<String, Object> state = first.stateDict();
      assertAllowedKinds(at + " state", state);
      Map<String, Object> saved = copyOf(state);
      feed(first, c, split, n, 2);  // the state taken must not change with the metric
      assertTrue(sameState(saved, state), at + ": stateDict aliases the metric's arrays");
      assertSameResult(at + " (not stopped)", expected, first.compute());

      Metric<?> resumed = first.emptyCopy();
      Map<String, Object> loaded = copyOf(state);
      resumed.loadStateDict(loaded);
      assertTrue(sameState(state, resumed.stateDict()), at + ": state does not round-trip");
      scramble(loaded);  // the metric must not alias what it loaded
      feed(resumed, c, split, n, 3);
      assertSameResult(at + " (resumed)", expected, resumed.compute());
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("everyMetric")
  void resetAfterLoadClears(Case c) {
    int n = c.output().size(0);
    Metric<?> m = c.make().get();
    feed(m, c, 0, n / 2, 4);
    Metric<?> loaded = m.emptyCopy();
    loaded.loadStateDict(m.stateDict());
    loaded.reset();
    assertTrue(sameState(m.emptyCopy().stateDict(), loaded.stateDict()), c.label() + ": reset left state behind");
    Metric<?> whole = c.make().get();
    feed(whole, c, 0, n, 5);
    feed(loaded, c, 0, n, 5);
    assertSameResult(c.label() + " after reset", whole.compute(), loaded.compute());
  }

  // ---------------------------------------------------------------- bad states

  private static <R> Metric<R> halfFed(Case c) {
    @SuppressWarnings("unchecked")
    Metric<R> m = (Metric<R>) c.make().get();
    feed(m, c, 0, c.output().size(0) / 2, 6);
    return m;
  }

  /** Loading {@code bad} fails naming the metric and {@code key}, and leaves the metric as it was. */
  private static void assertRejected(Metric<?> m, Map<String, Object> bad, String key) {
    Map<String, Object> before = m.stateDict();
    var e = assertThrows(IllegalArgumentException.class, () -> m.loadStateDict(bad), key);
    String msg = e.getMessage();
    assertTrue(msg.startsWith(m.getClass().getSimpleName() + ".loadStateDict: "), msg);
    assertTrue(msg.endsWith("metric=" + m.name()), msg);
    if (key != null) assertTrue(msg.contains("'" + key + "'"), msg + " should name '" + key + "'");
    assertTrue(sameState(before, m.stateDict()), "a rejected state changed the metric: " + msg);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("everyMetric")
  void missingWrongTypedOrUnexpectedKeysAreRejected(Case c) {
    Metric<?> m = halfFed(c);
    Map<String, Object> good = m.stateDict();
    assertRejected(m, null, null);
    for (String key : good.keySet()) {
      Map<String, Object> missing = copyOf(good);
      missing.remove(key);
      assertRejected(m, missing, key);
      Map<String, Object> wrongType = copyOf(good);
      wrongType.put(key, "x");
      assertRejected(m, wrongType, key);
      Map<String, Object> nulled = new HashMap<>(good);
      nulled.put(key, null);
      assertRejected(m, nulled, key);
    }
    Map<String, Object> extra = copyOf(good);
    extra.put("bogus", 1L);
    assertRejected(m, extra, "bogus");
  }

  @Test
  void confusionMatrixOfAnotherClassCountIsRejected() {
    ConfusionMatrix three = new ConfusionMatrix(3);
    three.update(Tensor.of(new long[] {0, 1, 2}, 3), Tensor.of(new long[] {0, 2, 2}, 3));
    var e = assertThrows(IllegalArgumentException.class, () -> new ConfusionMatrix(4).loadStateDict(three.stateDict()));
    assertEquals("ConfusionMatrix.loadStateDict: 'counts' has the wrong size (9 vs 16 for 4 x 4 classes):"
        + " metric=confusion_matrix", e.getMessage());
    F1Score f1 = new F1Score(3, Average.MACRO);
    f1.update(Tensor.of(new long[] {0, 1, 2}, 3), Tensor.of(new long[] {0, 2, 2}, 3));
    e = assertThrows(IllegalArgumentException.class, () -> new F1Score(2, Average.MACRO).loadStateDict(f1.stateDict()));
    assertEquals("F1Score.loadStateDict: 'counts' has the wrong size (9 vs 4 for 2 x 2 classes): metric=f1_macro",
        e.getMessage());
    Map<String, Object> negative = Map.of("counts", new long[] {1, 0, 0, 0, -1, 0, 0, 0, 0});
    e = assertThrows(IllegalArgumentException.class, () -> new ConfusionMatrix(3).loadStateDict(negative));
    assertEquals("ConfusionMatrix.loadStateDict: 'counts' must hold counts >= 0 (got -1 at index 4):"
        + " metric=confusion_matrix", e.getMessage());
  }

  @Test
  void accuracyCountsAreChecked() {
    Accuracy a = new Accuracy();
    var e = assertThrows(IllegalArgumentException.class, () -> a.loadStateDict(Map.of("correct", 3.0, "total", 4L)));
    assertEquals("Accuracy.loadStateDict: 'correct' must be a Long (got Double 3.0): metric=accuracy", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> a.loadStateDict(Map.of("correct", 5L, "total", 4L)));
    assertEquals("Accuracy.loadStateDict: 'correct' exceeds 'total' (5 > 4): metric=accuracy", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> a.loadStateDict(Map.of("correct", -1L, "total", 4L)));
    assertEquals("Accuracy.loadStateDict: 'correct' must be >= 0 (got -1): metric=accuracy", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> a.loadStateDict(Map.of("total", 4L)));
    assertEquals("Accuracy.loadStateDict: key 'correct' is missing (expected [correct, total], got [total]):"
        + " metric=accuracy", e.getMessage());
    a.loadStateDict(Map.of("correct", 3, "total", 4));  // Integer widens to Long
    assertEquals(0.75, a.compute());
  }

  @Test
  void rankingStatesAreCheckedAgainstTheConfiguration() {
    MeanAveragePrecision map3 = new MeanAveragePrecision(3);
    map3.update(Tensor.of(new double[][] {{0.2, 0.5, 0.3}, {0.6, 0.3, 0.1}}), Tensor.of(new long[] {1, 0}, 2));
    var e = assertThrows(IllegalArgumentException.class, () -> new MeanAveragePrecision(4).loadStateDict(map3.stateDict()));
    assertEquals("MeanAveragePrecision.loadStateDict: 'scores' has the wrong size (6 vs 8 for 2 labels x 4 scores):"
        + " metric=map", e.getMessage());
    Map<String, Object> label3 = map3.stateDict();
    label3.put("labels", new long[] {1, 3});
    e = assertThrows(IllegalArgumentException.class, () -> new MeanAveragePrecision(3).loadStateDict(label3));
    assertEquals("MeanAveragePrecision.loadStateDict: 'labels' must lie in [0, 3) (got 3 at index 1): metric=map",
        e.getMessage());
    Map<String, Object> binary = new HashMap<>(Map.of("scores", new double[] {0.1, Double.NaN}, "labels", new long[] {0, 1}));
    e = assertThrows(IllegalArgumentException.class, () -> new RocAuc().loadStateDict(binary));
    assertEquals("RocAuc.loadStateDict: 'scores' must be finite (got NaN at index 1): metric=roc_auc", e.getMessage());
    binary.put("scores", new double[] {0.1, 0.2});
    binary.put("labels", new long[] {0, 2});
    e = assertThrows(IllegalArgumentException.class, () -> new RocCurve().loadStateDict(binary));
    assertEquals("RocCurve.loadStateDict: 'labels' must lie in [0, 2) (got 2 at index 1): metric=roc_curve",
        e.getMessage());
  }

  @Test
  void regressionStatesMustFitTheirOutputs() {
    MeanSquaredError mse = new MeanSquaredError();
    mse.update(Tensor.of(new double[][] {{1, 2, 3}}), Tensor.of(new double[][] {{1, 2, 4}}));
    Map<String, Object> s = mse.stateDict();
    assertEquals(3, s.get("outputs"));
    s.put("sq_sum", new double[] {0, 1});
    var e = assertThrows(IllegalArgumentException.class, () -> new MeanSquaredError().loadStateDict(s));
    assertEquals("MeanSquaredError.loadStateDict: 'sq_sum' has the wrong size (2 vs 3 for outputs 3): metric=mse",
        e.getMessage());
    Map<String, Object> noOutputs = Map.of("outputs", 0, "count", 5L, "sq_sum", new double[0]);
    e = assertThrows(IllegalArgumentException.class, () -> new MeanSquaredError().loadStateDict(noOutputs));
    assertEquals("MeanSquaredError.loadStateDict: 'count' is 5 but 'outputs' is 0: metric=mse", e.getMessage());
  }

  @Test
  void loadedOutputsFixTheShapeOfLaterBatches() {
    R2Score r2 = new R2Score();
    r2.update(Tensor.of(new double[][] {{1, 2}, {2, 3}}), Tensor.of(new double[][] {{1, 2.5}, {2.5, 3}}));
    R2Score resumed = new R2Score();
    resumed.loadStateDict(r2.stateDict());
    assertThrows(IllegalArgumentException.class,
        () -> resumed.update(Tensor.of(new double[] {1, 2}, 2), Tensor.of(new double[] {1, 2}, 2)));
    assertEquals(r2.compute(), resumed.compute());
  }

  @Test
  void meanWeightMustBeNonNegative() {
    var e = assertThrows(IllegalArgumentException.class, () -> new MeanMetric("loss").loadStateDict(
        Map.of("sum", 1.0, "sum_compensation", 0.0, "weight", -2.0)));
    assertEquals("MeanMetric.loadStateDict: 'weight' must be >= 0 (got -2.0): metric=loss", e.getMessage());
  }

  // ---------------------------------------------------------------- tracker

  private static MetricTracker tracker() {
    return new MetricTracker()
        .add(new Accuracy())
        .add(new F1Score(3, Average.MACRO))
        .add(new RocAuc(3, Average.WEIGHTED))
        .addMean("loss");
  }

  @Test
  void trackerResumesMidEpochWithItsHistory() {
    var probs = fixture("multiclass_ranking", "three_class_probs");
    Tensor p = floats(probs.get("scores"));
    Tensor y = longs(probs.get("target"));
    int n = p.size(0);
    int batch = 6;
    MetricTracker whole = tracker();
    MetricTracker stopped = tracker();
    MetricTracker resumed = null;
    for (int epoch = 0; epoch < 3; epoch++) {
      for (int pos = 0; pos < n; pos += batch) {
        int len = Math.min(batch, n - pos);
        double loss = 1.0 / (1 + epoch * 7 + pos);
        for (MetricTracker t : resumed == null ? List.of(whole, stopped) : List.of(whole, resumed)) {
          t.update(p.narrow(0, pos, len), y.narrow(0, pos, len));
          t.updateMean("loss", loss, len);
        }
        if (epoch == 1 && pos == 4 * batch) {  // checkpoint mid-epoch, continue in a fresh tracker
          Map<String, Object> state = stopped.stateDict();
          assertAllowedKinds("tracker", state);
          resumed = tracker();
          resumed.loadStateDict(state);
          assertEquals(1, resumed.epochs());
          assertTrue(sameState(state, resumed.stateDict()));
        }
      }
      Map<String, Double> w = whole.endEpoch();
      Map<String, Double> r = (resumed == null ? stopped : resumed).endEpoch();
      assertEquals(w, r, "epoch " + epoch);
    }
    for (String name : whole.names()) assertEquals(whole.history(name), resumed.history(name), name);
    assertEquals(whole.best("loss", "min"), resumed.best("loss", "min"));
  }

  @Test
  void trackerStateIsCheckedBeforeAnythingChanges() {
    MetricTracker t = tracker();
    t.update(Tensor.of(new double[][] {{0.6, 0.3, 0.1}, {0.2, 0.5, 0.3}, {0.2, 0.3, 0.5}}),
        Tensor.of(new long[] {0, 2, 1}, 3));
    t.updateMean("loss", 0.5, 3);
    t.endEpoch();
    t.update(Tensor.of(new double[][] {{0.6, 0.3, 0.1}}), Tensor.of(new long[] {0}, 1));
    Map<String, Object> good = t.stateDict();

    MetricTracker target = tracker();
    target.update(Tensor.of(new double[][] {{0.1, 0.3, 0.6}}), Tensor.of(new long[] {2}, 1));
    target.updateMean("loss", 9, 1);
    Map<String, Object> before = target.stateDict();

    @SuppressWarnings("unchecked")
    Map<String, Object> badLoss = copyOf(good);
    ((Map<String, Object>) badLoss.get("metrics")).put("loss", Map.of("sum", 1.0, "sum_compensation", 0.0));
    var e = assertThrows(IllegalArgumentException.class, () -> target.loadStateDict(badLoss));
    assertEquals("MeanMetric.loadStateDict: key 'weight' is missing (expected [sum, sum_compensation, weight],"
        + " got [sum, sum_compensation]): metric=loss", e.getMessage());
    assertTrue(sameState(before, target.stateDict()), "a rejected state changed the tracker");

    Map<String, Object> shortHistory = copyOf(good);
    @SuppressWarnings("unchecked")
    Map<String, Object> h = (Map<String, Object>) shortHistory.get("history");
    h.put("loss", new double[0]);
    e = assertThrows(IllegalArgumentException.class, () -> target.loadStateDict(shortHistory));
    assertEquals("MetricTracker.loadStateDict: 'loss' has the wrong size (0 vs 1 epochs, as the other metrics'"
        + " histories): tracked=[accuracy, f1_macro, roc_auc_weighted, loss]", e.getMessage());

    MetricTracker fewer = new MetricTracker().add(new Accuracy());
    e = assertThrows(IllegalArgumentException.class, () -> fewer.loadStateDict(good));
    assertTrue(e.getMessage().startsWith("MetricTracker.loadStateDict: unexpected key 'f1_macro'"), e.getMessage());
    assertTrue(sameState(before, target.stateDict()));

    target.loadStateDict(good);
    assertEquals(1, target.epochs());
    assertTrue(sameState(good, target.stateDict()));
  }
}
