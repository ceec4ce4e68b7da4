package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.io.Json;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.HistogramLogger;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HistogramLoggerTest {
  @TempDir Path dir;

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> read(Path f) throws IOException {
    List<Map<String, Object>> out = new ArrayList<>();
    for (String line : Files.readAllLines(f)) {
      try {
        out.add((Map<String, Object>) Json.parsePlain(line, Json.NonFinite.REJECT));
      } catch (Json.SyntaxError e) {
        throw new AssertionError(f + ": " + e.getMessage() + " at byte " + e.pos + " of line " + (out.size() + 1), e);
      }
    }
    return out;
  }

  private static long[] counts(Map<String, Object> h) {
    return ((List<?>) h.get("counts")).stream().mapToLong(o -> ((Number) o).longValue()).toArray();
  }

  /** A 2x3 weight with known values, gradients set by hand. */
  private static Module model() {
    Linear l = new Linear(3, 2, true);
    Sequential m = new Sequential(l);
    try (var ignored = dev.ember.autograd.Grad.off()) {
      l.param("weight").copy_(Tensor.of(new float[] {0f, 1f, 2f, 3f, 4f, 10f}, 2, 3));
      l.param("bias").copy_(Tensor.of(new float[] {5f, 5f}, 2));
    }
    l.param("weight").setGrad(Tensor.of(new float[] {-1f, -1f, 0f, 0f, 1f, Float.NaN}, 2, 3));
    return m;
  }

  @Test
  void histogramsOfWeightsAndGradientsEveryNSteps() throws IOException {
    Path f = dir.resolve("histograms.jsonl");
    CallbackDriver d = new CallbackDriver(model(), 1, 5, new HistogramLogger(f, 2, 5));
    d.trainBegin();
    d.epoch(1, 5, Map.of(), Map.of());
    d.trainEnd();
    List<Map<String, Object>> l = read(f);
    // steps 0, 2, 4 (globalStep before the step), two parameters each
    assertEquals(List.of(0L, 0L, 2L, 2L, 4L, 4L), l.stream().map(m -> m.get("step")).toList());
    assertEquals(List.of("0.weight", "0.bias"), l.subList(0, 2).stream().map(m -> m.get("name")).toList());
    @SuppressWarnings("unchecked")
    Map<String, Object> w = (Map<String, Object>) l.get(0).get("weight");
    assertEquals(0L, w.get("min"));
    assertEquals(10L, w.get("max"));
    // bins of width 2 over [0, 10]: {0,1} {2,3} {4} {} {10}
    assertEquals(List.of(2L, 2L, 1L, 0L, 1L), List.of(counts(w)[0], counts(w)[1], counts(w)[2], counts(w)[3], counts(w)[4]));
    assertEquals(6L, l.get(0).get("numel"));
    @SuppressWarnings("unchecked")
    Map<String, Object> g = (Map<String, Object>) l.get(0).get("grad");
    assertEquals(1L, g.get("nonfinite"));
    assertEquals(-1L, g.get("min"));
    assertEquals(1L, g.get("max"));
    assertEquals(5, java.util.Arrays.stream(counts(g)).sum());
    // a constant tensor gets numpy's range [v - 0.5, v + 0.5], all in the middle bin
    @SuppressWarnings("unchecked")
    Map<String, Object> b = (Map<String, Object>) l.get(1).get("weight");
    assertEquals(4.5, b.get("lo"));
    assertEquals(5.5, b.get("hi"));
    assertEquals(List.of(0L, 0L, 2L, 0L, 0L), java.util.Arrays.stream(counts(b)).boxed().toList());
    assertFalse(l.get(1).containsKey("grad"), "the bias has no gradient");
  }

  @Test
  void perEpochTakesTheLastStepOfEachEpoch() throws IOException {
    Path f = dir.resolve("h.jsonl");
    CallbackDriver d = new CallbackDriver(model(), 2, 3, HistogramLogger.perEpoch(f, 4));
    d.trainBegin();
    d.epoch(1, 3, Map.of(), Map.of());
    d.epoch(2, 3, Map.of(), Map.of());
    d.trainEnd();
    List<Map<String, Object>> l = read(f);
    assertEquals(List.of(2L, 2L, 5L, 5L), l.stream().map(m -> m.get("step")).toList());
    assertEquals(List.of(1L, 1L, 2L, 2L), l.stream().map(m -> m.get("epoch")).toList());
    assertTrue(l.get(0).containsKey("grad"));
  }

  @Test
  void badArguments() {
    var e = assertThrows(IllegalArgumentException.class, () -> new HistogramLogger(dir.resolve("h"), 0, 10));
    assertTrue(e.getMessage().contains("perEpoch"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new HistogramLogger(dir.resolve("h"), 1, 0));
  }
}
