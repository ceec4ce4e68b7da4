package dev.ember.train.summary;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.BatchNorm1d;
import dev.ember.nn.Dropout;
import dev.ember.nn.Embedding;
import dev.ember.nn.Flatten;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.optim.SGD;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BatchSizeFinderTest {
  /** Activations (256 per sample) outweigh the ~5k parameters, so bytes per step grow with the batch. */
  static Sequential tiny(Generator g) {
    return new Sequential(new Linear(16, 256, true, g), new ReLU(), new Linear(256, 4, true, g));
  }

  private static List<Integer> batches(BatchSizeResult r) {
    return r.rows().stream().map(BatchSizeResult.Row::batchSize).toList();
  }

  /** The invariants every result keeps, whatever the timings. */
  private static void assertConsistent(BatchSizeResult r) {
    List<BatchSizeResult.Row> rows = r.rows();
    for (int i = 0; i < rows.size(); i++) {
      BatchSizeResult.Row row = rows.get(i);
      if (i > 0) assertEquals(2 * rows.get(i - 1).batchSize(), row.batchSize(), "powers of two");
      if (row.fits()) {
        assertTrue(row.bytesPerStep() <= r.budgetBytes(), row.toString());
        assertTrue(row.samplesPerSecond() > 0, row.toString());
      }
      if (i < rows.size() - 1) assertTrue(row.fits(), "only the last row may not fit: " + rows);
    }
    if (r.recommended().isPresent()) {
      BatchSizeResult.Row best = r.row(r.recommended().getAsInt());
      assertTrue(best.fits() && best.bytesPerStep() <= r.budgetBytes(), best.toString());
      for (BatchSizeResult.Row row : rows) {
        if (row.fits()) assertTrue(row.samplesPerSecond() <= best.samplesPerSecond(), rows.toString());
      }
    } else {
      assertTrue(rows.stream().noneMatch(BatchSizeResult.Row::fits));
    }
  }

  @Test
  void aLargeBudgetTriesEveryPowerOfTwoUpToTheMaximum() {
    BatchSizeResult r = new BatchSizeFinder(tiny(new Generator(1)), F::crossEntropy, 16).range(2, 32).steps(1, 2)
        .jitWarmup(50).memoryBudget(1L << 40).find();
    assertEquals(List.of(2, 4, 8, 16, 32), batches(r));
    assertTrue(r.rows().stream().allMatch(BatchSizeResult.Row::fits));
    for (BatchSizeResult.Row row : r.rows()) {
      assertTrue(row.bytesPerStep() > 0 && row.heapPeakBytes() > 0 && row.note().isEmpty(), row.toString());
    }
    assertEquals("reached the maximum batch size 32", r.stopReason());
    assertTrue(r.recommended().isPresent());
    assertConsistent(r);
  }

  @Test
  void aSmallBudgetStopsTheSearchAndTheRecommendationFitsIt() {
    // the budget: a quarter above what batch 4 allocated in a first search (compiled code by then)
    BatchSizeResult probe = new BatchSizeFinder(tiny(new Generator(2)), F::crossEntropy, 16).range(1, 64).steps(1, 2)
        .jitWarmup(100).memoryBudget(1L << 40).find();
    long budget = probe.row(4).bytesPerStep() + probe.row(4).bytesPerStep() / 4;
    BatchSizeResult r = new BatchSizeFinder(tiny(new Generator(2)), F::crossEntropy, 16).range(1, 64).steps(1, 2)
        .jitWarmup(100).memoryBudget(budget).find();
    assertEquals(budget, r.budgetBytes());
    assertConsistent(r);
    BatchSizeResult.Row last = r.rows().get(r.rows().size() - 1);
    assertFalse(last.fits(), r.toString());
    assertTrue(last.batchSize() <= 64, r.toString());
    assertTrue(r.stopReason().startsWith("batch " + last.batchSize()), r.stopReason());
    assertTrue(r.recommended().isPresent(), r.toString());
    assertTrue(r.recommended().getAsInt() < last.batchSize());
  }

  @Test
  void aBudgetNothingFitsRecommendsNothing() {
    BatchSizeResult r = new BatchSizeFinder(tiny(new Generator(3)), F::crossEntropy, 16).range(4, 64).steps(0, 1)
        .jitWarmup(0).memoryBudget(1).find();
    assertEquals(List.of(4), batches(r));
    assertFalse(r.rows().get(0).fits());
    assertEquals("over budget", r.rows().get(0).note());
    assertTrue(r.recommended().isEmpty());
    assertTrue(r.toString().contains("Recommended batch size: none fits"), r.toString());
  }

  @Test
  void outOfMemoryIsCaughtAndEndsTheSearch() {
    BatchSizeResult r = new BatchSizeFinder(tiny(new Generator(4)), (out, target) -> {
      if (out.size(0) >= 8) throw new OutOfMemoryError("simulated: Java heap space");
      return F.crossEntropy(out, target);
    }, 16).range(2, 64).steps(0, 1).jitWarmup(0).memoryBudget(1L << 40).find();
    assertEquals(List.of(2, 4, 8), batches(r));
    assertEquals("OutOfMemoryError", r.row(8).note());
    assertFalse(r.row(8).fits());
    assertTrue(r.row(2).fits() && r.row(4).fits());
    assertTrue(List.of(2, 4).contains(r.recommended().getAsInt()));
    assertEquals("batch 8: OutOfMemoryError", r.stopReason());
    assertConsistent(r);
  }

  @Test
  void theModelOptimizerAndGlobalGeneratorAreLeftAsTheyWere() {
    Generator g = new Generator(5);
    Sequential model = new Sequential(new Linear(16, 32, true, g), new BatchNorm1d(32), new ReLU(), new Dropout(0.5),
        new Linear(32, 4, true, g));
    model.eval();
    Map<String, Tensor> before = new java.util.LinkedHashMap<>();
    model.stateDict().forEach((k, v) -> before.put(k, v.cloneContiguous()));
    Tensor w = model.get(0).param("weight");
    Tensor grad = Tensor.ones(w.shape());
    w.setGrad(grad);
    SGD sgd = new SGD(model.parameters(), Map.of("lr", 0.5, "momentum", 0.9));
    long[] rng = Generator.global().state();

    BatchSizeResult r = new BatchSizeFinder(model, F::crossEntropy, 16).range(2, 8).steps(1, 1).optimizer(sgd)
        .jitWarmup(0).memoryBudget(1L << 40).find();
    assertEquals(List.of(2, 4, 8), batches(r));

    model.stateDict().forEach((k, v) -> assertArrayEquals(before.get(k).toDoubleArray(), v.toDoubleArray(), k));
    for (Module m : model.modules()) assertFalse(m.isTraining());
    assertSame(grad, w.grad());
    assertTrue(sgd.state(w).isEmpty(), "momentum buffers dropped again");
    assertArrayEquals(rng, Generator.global().state());
  }

  @Test
  void inputsAndTargetsCanBeSupplied() {
    Generator g = new Generator(6);
    Sequential model = new Sequential(new Embedding(50, 8), new Flatten(), new Linear(8 * 5, 3, true, g));
    List<Integer> asked = new ArrayList<>();
    BatchSizeResult r = new BatchSizeFinder(model, F::mseLoss).range(1, 4).steps(0, 1).jitWarmup(0).memoryBudget(1L << 40)
        .target(BatchSizeFinder.TargetFactory.normalLike())
        .inputs(n -> {
          asked.add(n);
          return Tensor.randint(g, 0, 50, n, 5);
        }).find();
    assertEquals(List.of(1, 2, 4), batches(r));
    assertEquals(List.of(1, 2, 4), asked);
    assertConsistent(r);
  }

  @Test
  void theTableListsEveryRowAndTheRecommendation() {
    BatchSizeResult r = new BatchSizeFinder(tiny(new Generator(7)), F::crossEntropy, 16).range(1, 4).steps(0, 1)
        .jitWarmup(0).memoryBudget(1L << 40).find();
    String text = r.toString();
    List<String> lines = text.lines().toList();
    assertTrue(lines.get(1).startsWith("   Batch     Samples/s     MB/step"), text);
    assertTrue(lines.get(1).contains("MB/step") && lines.get(1).contains("Heap peak MB"), text);
    assertTrue(lines.get(3).startsWith("       1  "), text);
    assertTrue(lines.get(5).startsWith("       4  "), text);
    assertEquals(1, lines.stream().filter(l -> l.contains("recommended")).count(), text);
    assertTrue(text.contains("Recommended batch size: " + r.recommended().getAsInt()), text);
    assertTrue(text.contains("stopped: reached the maximum batch size 4"), text);
  }

  @Test
  void badArgumentsAreRejected() {
    Sequential model = tiny(new Generator(8));
    assertEquals("BatchSizeFinder: need 1 <= start <= max, got start 8, max 4",
        assertThrows(IllegalArgumentException.class, () -> new BatchSizeFinder(model, F::crossEntropy, 16).range(8, 4))
            .getMessage());
    assertEquals("BatchSizeFinder: sample dimensions must be positive, got [0]",
        assertThrows(IllegalArgumentException.class, () -> new BatchSizeFinder(model, F::crossEntropy, 0)).getMessage());
    assertEquals("BatchSizeFinder: memory budget must be positive, got 0",
        assertThrows(IllegalArgumentException.class, () -> new BatchSizeFinder(model, F::crossEntropy, 16).jitWarmup(0).memoryBudget(0))
            .getMessage());
    assertEquals("BatchSizeFinder: the loss must be a scalar, got shape [2]",
        assertThrows(IllegalArgumentException.class, () -> new BatchSizeFinder(model,
            (out, t) -> F.crossEntropy(out, t, dev.ember.nn.functional.Reduction.NONE), 16).range(2, 2).find())
            .getMessage());
    assertEquals("BatchSizeFinder: the input factory must return a batch of 1 along dimension 0, got [2, 16]",
        assertThrows(IllegalArgumentException.class, () -> new BatchSizeFinder(model, F::crossEntropy, 16).range(1, 1)
            .inputs(n -> Tensor.zeros(2, 16)).find()).getMessage());
  }
}
