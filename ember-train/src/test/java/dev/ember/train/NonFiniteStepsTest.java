package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.Batch;
import dev.ember.data.BatchIterator;
import dev.ember.data.BatchSource;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adam;
import dev.ember.optim.SGD;
import dev.ember.optim.schedule.StepLR;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.GradientMonitor;
import dev.ember.train.callbacks.ModelCheckpoint;
import dev.ember.train.callbacks.TerminateOnNaN;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Trainer.Builder#skipNonFiniteSteps}: a non-finite loss or gradient never reaches the weights or a checkpoint. */
class NonFiniteStepsTest {
  /** 10 batches of 8 samples, in the same order every epoch. */
  private static final int BATCHES = 10;

  /** The batches of blobs(seed 1, 80), those at {@code bad} with a NaN in their first sample. */
  private static List<Batch> batches(Set<Integer> bad) {
    Tensor[] d = Fixtures.blobs(1, BATCHES * 8);
    List<Batch> out = new ArrayList<>();
    for (int b = 0; b < BATCHES; b++) {
      float[] x = d[0].narrow(0, b * 8, 8).toFloatArray();
      if (bad.contains(b)) x[1] = Float.NaN;
      out.add(new Batch(Tensor.of(x, 8, 4), d[1].narrow(0, b * 8, 8).cloneContiguous()));
    }
    return out;
  }


  private static List<Batch> without(List<Batch> all, Set<Integer> drop) {
    List<Batch> out = new ArrayList<>();
    for (int i = 0; i < all.size(); i++) if (!drop.contains(i)) out.add(all.get(i));
    return out;
  }

  private static void assertFinite(Module m) {
    m.stateDict().forEach((k, v) -> {
      for (float f : v.toFloatArray()) assertTrue(Float.isFinite(f), k + " holds " + f);
    });
  }

  @Test
  void aSkippedStepLeavesTheWeightsOfARunWithoutThatBatch() {
    Set<Integer> bad = Set.of(3, 4, 7);                 // two in a row, then one: never 3 consecutive
    Module a = Fixtures.mlp(5);
    var optA = new Adam(a.parameters(), 0.01);
    var schedA = new StepLR(optA, 4, 0.5);
    List<Long> skippedAt = new ArrayList<>();
    Callback watch = new Callback() {
      @Override public void onBatchEnd(TrainContext c, Batch b, double loss) {
        if (c.stepSkipped()) skippedAt.add(c.epoch() * 100L + c.batchIndex());
      }
    };
    History ha = Trainer.builder().maxEpochs(2).skipNonFiniteSteps(3).metrics(new TrainerTest.Acc())
        .scheduler(schedA, Trainer.Interval.BATCH).callbacks(watch).build()
        .fit(a, F::crossEntropy, optA, Fixtures.source(batches(bad)), null);

    Module b = Fixtures.mlp(5);
    var optB = new Adam(b.parameters(), 0.01);
    var schedB = new StepLR(optB, 4, 0.5);
    History hb = Trainer.builder().maxEpochs(2).metrics(new TrainerTest.Acc())
        .scheduler(schedB, Trainer.Interval.BATCH).build()
        .fit(b, F::crossEntropy, optB, Fixtures.source(without(batches(bad), bad)), null);

    assertFinite(a);
    Fixtures.assertSameState(b.stateDict(), a.stateDict());
    assertEquals(schedB.lastEpoch(), schedA.lastEpoch(), "the schedule does not step on a skipped step");
    assertEquals(List.of(103L, 104L, 107L, 203L, 204L, 207L), skippedAt);
    assertArrayEquals(new double[] {3, 3}, ha.values("skipped_steps"));
    assertArrayEquals(hb.values("loss"), ha.values("loss"), 0.0, "the bad batches' losses stay out of the epoch's");
    assertArrayEquals(hb.values("accuracy"), ha.values("accuracy"), 0.0);
    assertEquals(14, ha.entries("loss").get(1).step(), "2 epochs of 7 good steps");
    assertEquals(0, hb.values("skipped_steps").length);
  }

  @Test
  void aNonFiniteGradientWithAFiniteLossIsSkippedToo() {
    Module a = Fixtures.mlp(5);
    Callback poison = new Callback() {                  // what an overflow in backward would leave
      @Override public void onAfterBackward(TrainContext c) {
        if (c.batchIndex() == 2) c.model().namedParameters().get("2.bias").grad().storage().floats()[1] = Float.POSITIVE_INFINITY;
      }
    };
    var e = assertThrows(NonFiniteStepException.class, () -> Trainer.builder().maxEpochs(1).skipNonFiniteSteps(1)
        .callbacks(poison).build().fit(a, F::crossEntropy, new SGD(a.parameters(), 0.1), Fixtures.source(batches(Set.of())), null));
    assertEquals("2.bias", e.parameter());
    assertTrue(Double.isFinite(e.loss()), "loss " + e.loss());
    assertTrue(e.getMessage().startsWith("Trainer: 1 consecutive non-finite step (the last at epoch 1, batch 2, after step 2:"
        + " loss=" + e.loss() + ", first non-finite gradient in 2.bias); stopping."), e.getMessage());
    assertFinite(a);
  }

  @Test
  void threeConsecutiveBadStepsStopNamingTheStepAndKeepTheLastGoodCheckpointNewest(@TempDir Path dir) throws Exception {
    Module m = Fixtures.mlp(5);
    var opt = new Adam(m.parameters(), 0.01);
    var e = assertThrows(NonFiniteStepException.class, () -> Trainer.builder().maxEpochs(3).skipNonFiniteSteps(3)
        .callbacks(new ModelCheckpoint(dir, 0, 1, 1000)).build()
        .fit(m, F::crossEntropy, opt, Fixtures.source(batches(Set.of(4, 5, 6))), null));
    Path last = dir.resolve("step-00000004.ckpt");
    assertEquals("Trainer: 3 consecutive non-finite steps (the last at epoch 1, batch 6, after step 4: loss=NaN,"
        + " first non-finite gradient in 0.weight); stopping. The last good checkpoint is " + last, e.getMessage());
    assertEquals(4, e.step());
    assertEquals(6, e.batchIndex());
    assertEquals(last, e.lastCheckpoint());
    try (Stream<Path> s = Files.list(dir)) {
      assertEquals(List.of("step-00000001.ckpt", "step-00000002.ckpt", "step-00000003.ckpt", "step-00000004.ckpt"),
          s.map(p -> p.getFileName().toString()).sorted().toList(), "no checkpoint of a skipped step or after the stop");
    }
    assertEquals(last, ModelCheckpoint.latest(dir).orElseThrow());
    assertFinite(m);
    @SuppressWarnings("unchecked")
    Map<String, Object> saved = (Map<String, Object>) Checkpoint.read(last).get("model");
    saved.forEach((k, v) -> assertArrayEquals(((Tensor) v).toFloatArray(), m.stateDict().get(k).toFloatArray(), 0f,
        "the model keeps the weights of the last good step: " + k));

    // without a checkpoint the message says so
    Module n = Fixtures.mlp(5);
    var e2 = assertThrows(NonFiniteStepException.class, () -> Trainer.builder().maxEpochs(1).skipNonFiniteSteps(2).build()
        .fit(n, F::crossEntropy, new SGD(n.parameters(), 0.1), Fixtures.source(batches(Set.of(0, 1))), null));
    assertTrue(e2.getMessage().endsWith("after step 0: loss=NaN, first non-finite gradient in 0.weight); stopping."
        + " No checkpoint was written before it."), e2.getMessage());
    assertNull(e2.lastCheckpoint());
  }

  @Test
  void resumeAcrossSkippedStepsIsBitwiseTheUninterruptedRun(@TempDir Path dir) throws Exception {
    Set<Integer> bad = Set.of(3, 9);                    // 9 is an epoch's last batch: an epoch-end checkpoint follows it
    Path ckpts = dir.resolve("ckpt");
    Module ref = Fixtures.mlp(3);
    var refOpt = new Adam(ref.parameters(), 0.01);
    History refHist = Trainer.builder().maxEpochs(3).skipNonFiniteSteps(2).metrics(new TrainerTest.Acc())
        .scheduler(new StepLR(refOpt, 3, 0.5), Trainer.Interval.BATCH)
        .callbacks(new ModelCheckpoint(ckpts, 1, 3, 1000)).build()
        .fit(ref, F::crossEntropy, refOpt, Fixtures.source(batches(bad)), null);
    assertArrayEquals(new double[] {2, 2, 2}, refHist.values("skipped_steps"));
    List<Path> files;
    try (Stream<Path> s = Files.list(ckpts)) {
      files = s.sorted().toList();
    }
    assertEquals(List.of(3, 6, 8, 9, 12, 15, 16, 18, 21, 24), files.stream()
        .map(p -> Integer.parseInt(p.getFileName().toString().replaceAll("\\D", ""))).toList());
    for (Path f : files) {
      Module m = Fixtures.mlp(99);
      var opt = new Adam(m.parameters(), 0.01);
      History h = Trainer.builder().maxEpochs(3).skipNonFiniteSteps(2).metrics(new TrainerTest.Acc())
          .scheduler(new StepLR(opt, 3, 0.5), Trainer.Interval.BATCH)
          .callbacks(new ModelCheckpoint(dir.resolve("other"), 1, 3, 1000))
          .resumeFrom(f).build().fit(m, F::crossEntropy, opt, Fixtures.source(batches(bad)), null);
      Fixtures.assertSameState(ref.stateDict(), m.stateDict());
      for (String key : List.of("loss", "lr", "accuracy", "skipped_steps")) {
        assertArrayEquals(refHist.values(key), h.values(key), 0.0, key + " from " + f);
      }
    }
  }

  @Test
  void theConsecutiveCountTravelsInTheCheckpoint(@TempDir Path dir) throws Exception {
    Set<Integer> bad = Set.of(8, 9, 0);                 // 8 and 9 end epoch 1, 0 starts epoch 2: 3 in a row across it
    List<Batch> data = new ArrayList<>(batches(Set.of(8, 9)));
    List<Batch> later = batches(bad);
    BatchSource src = new BatchSource() {
      @Override public int numBatches() {
        return BATCHES;
      }

      @Override public BatchIterator iterate(int epoch, int skip) {
        return Fixtures.source(epoch == 0 ? data : later).iterate(epoch, skip);
      }
    };
    Module a = Fixtures.mlp(3);
    var e = assertThrows(NonFiniteStepException.class, () -> Trainer.builder().maxEpochs(2).skipNonFiniteSteps(3)
        .callbacks(new ModelCheckpoint(dir, 1, 0, 10)).build().fit(a, F::crossEntropy, new SGD(a.parameters(), 0.1), src, null));
    assertEquals(dir.resolve("step-00000008.ckpt"), e.lastCheckpoint(), "the epoch-end checkpoint after two skipped steps");
    Module b = Fixtures.mlp(99);
    var resumed = assertThrows(NonFiniteStepException.class, () -> Trainer.builder().maxEpochs(2).skipNonFiniteSteps(3)
        .resumeFrom(e.lastCheckpoint()).build().fit(b, F::crossEntropy, new SGD(b.parameters(), 0.1), src, null));
    assertEquals(e.getMessage(), resumed.getMessage());
    Fixtures.assertSameState(a.stateDict(), b.stateDict());
  }

  @Test
  void terminateOnNaNStopsBeforeTheBadStepLands() {
    Module a = Fixtures.mlp(5);
    var nan = new TerminateOnNaN();
    var gm = new GradientMonitor(1, false);
    History h = Trainer.builder().maxEpochs(2).callbacks(gm, nan).build()
        .fit(a, F::crossEntropy, new SGD(a.parameters(), 0.1), Fixtures.source(batches(Set.of(3))), null);
    Module b = Fixtures.mlp(5);
    Trainer.builder().maxSteps(3).build().fit(b, F::crossEntropy, new SGD(b.parameters(), 0.1), Fixtures.source(batches(Set.of())), null);
    assertFinite(a);
    Fixtures.assertSameState(b.stateDict(), a.stateDict());
    assertEquals(3, nan.stoppedAtStep());
    assertArrayEquals(new double[] {3}, h.values("stopped_at_step"));
    assertTrue(gm.firstNonFinite().startsWith("0.weight at epoch 1, batch 3"), gm.firstNonFinite());

    // a finite loss with a non-finite gradient is caught too, before clipping could hide which one
    Module c = Fixtures.mlp(5);
    var nan2 = new TerminateOnNaN();
    List<String> reasons = new ArrayList<>();
    Callback poison = new Callback() {
      @Override public void onAfterBackward(TrainContext ctx) {
        if (ctx.batchIndex() == 1) ctx.model().namedParameters().get("0.bias").grad().storage().floats()[0] = Float.NaN;
      }

      @Override public void onTrainEnd(TrainContext ctx) {
        reasons.add(ctx.stopReason());
      }
    };
    Trainer.builder().maxEpochs(1).clipGradNorm(1.0).callbacks(poison, nan2).build()
        .fit(c, F::crossEntropy, new SGD(c.parameters(), 0.1), Fixtures.source(batches(Set.of())), null);
    assertEquals(1, nan2.stoppedAtStep());
    assertFinite(c);
    assertTrue(reasons.get(0).startsWith("TerminateOnNaN: the gradient of 0.bias is not finite"), reasons.get(0));
  }

  @Test
  void offByDefaultAndRejectsANegativeLimit() {
    Module a = Fixtures.mlp(5);
    History h = Trainer.builder().maxEpochs(1).build()
        .fit(a, F::crossEntropy, new SGD(a.parameters(), 0.1), Fixtures.source(batches(Set.of(3))), null);
    assertFalse(Float.isFinite(a.stateDict().get("0.weight").toFloatArray()[0]), "without skipping, NaN reaches the weights");
    assertEquals(0, h.values("skipped_steps").length);
    assertEquals("Trainer: skip_non_finite_steps must be >= 0 (0: off), got -1",
        assertThrows(IllegalArgumentException.class, () -> Trainer.builder().skipNonFiniteSteps(-1)).getMessage());
  }

  @Test
  void theCheckFindsEveryNonFiniteValueAndNoFiniteOne() {
    for (int n : new int[] {1, 7, 64, 1000, (1 << 18) + 5, 3 * (1 << 18)}) {   // the last two take the threaded path
      float[] f = new float[n];
      double[] d = new double[n];
      for (int i = 0; i < n; i++) {
        f[i] = (i % 3 == 0 ? -1 : 1) * (i % 5 == 0 ? Float.MAX_VALUE : i % 7 == 0 ? Float.MIN_VALUE : i * 0.5f);
        d[i] = (i % 3 == 0 ? -1 : 1) * (i % 5 == 0 ? Double.MAX_VALUE : i % 7 == 0 ? Double.MIN_VALUE : i * 0.5);
      }
      assertTrue(NonFinite.allFinite(Tensor.of(f, n)), "finite f32, n=" + n);
      assertTrue(NonFinite.allFinite(Tensor.of(d, n)), "finite f64, n=" + n);
      for (int at : new int[] {0, n / 2, n - 1}) {
        for (float bad : new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY,
            Float.intBitsToFloat(0xffc00001)}) {                          // a negative NaN with a payload
          float[] g = f.clone();
          g[at] = bad;
          assertFalse(NonFinite.allFinite(Tensor.of(g, n)), bad + " at " + at + " of " + n);
          double[] e = d.clone();
          e[at] = bad;
          assertFalse(NonFinite.allFinite(Tensor.of(e, n)), bad + " (f64) at " + at + " of " + n);
        }
      }
    }
    // views: only the elements in view count
    float[] v = {Float.NaN, 1, 2, 3, 4, Float.POSITIVE_INFINITY};
    Tensor t = Tensor.of(v, 6);
    assertTrue(NonFinite.allFinite(t.narrow(0, 1, 4)));
    assertFalse(NonFinite.allFinite(t.narrow(0, 1, 5)));
    Tensor m = Tensor.of(new float[] {1, Float.NaN, 3, 4}, 2, 2);
    assertFalse(NonFinite.allFinite(m.transpose(0, 1)));
    assertTrue(NonFinite.allFinite(m.select(1, 0)));
    assertTrue(NonFinite.allFinite(Tensor.of(new long[] {Long.MAX_VALUE, -1}, 2)), "integer tensors are finite");
  }
}
