package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.Batch;
import dev.ember.data.BatchSource;
import dev.ember.metrics.Metric;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adam;
import dev.ember.optim.SGD;
import dev.ember.optim.schedule.StepLR;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.EarlyStopping;
import dev.ember.train.callbacks.GradientAccumulationScheduler;
import dev.ember.train.callbacks.GradientMonitor;
import dev.ember.train.callbacks.ModelCheckpoint;
import dev.ember.train.callbacks.TerminateOnNaN;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TrainerTest {
  private final Tensor[] train = Fixtures.blobs(1, 200);
  private final Tensor[] val = Fixtures.blobs(2, 90);

  /** Fraction of correct argmax predictions: a minimal metric for these tests. */
  static final class Acc implements Metric<Double> {
    long correct;
    long total;

    @Override
    public String name() {
      return "accuracy";
    }

    @Override
    public void update(Tensor output, Tensor target) {
      long[] p = output.argmax(1, false).toLongArray();
      long[] t = target.toLongArray();
      for (int i = 0; i < p.length; i++) if (p[i] == t[i]) correct++;
      total += p.length;
    }

    @Override
    public Double compute() {
      return total == 0 ? Double.NaN : (double) correct / total;
    }

    @Override
    public void reset() {
      correct = 0;
      total = 0;
    }

    @Override
    public void merge(Metric<Double> other) {
      correct += ((Acc) other).correct;
      total += ((Acc) other).total;
    }

    @Override
    public Metric<Double> emptyCopy() {
      return new Acc();
    }

    @Override
    public Map<String, Object> stateDict() {
      return new java.util.HashMap<>(Map.of("correct", correct, "total", total));
    }

    @Override
    public void loadStateDict(Map<String, Object> state) {
      correct = (Long) state.get("correct");
      total = (Long) state.get("total");
    }
  }

  @Test
  void fitLearnsAndLogsEveryEpoch() {
    Module model = Fixtures.mlp(0);
    var opt = new Adam(model.parameters(), 0.01);
    Trainer t = Trainer.builder().maxEpochs(8).metrics(new Acc()).build();
    History h = t.fit(model, F::crossEntropy, opt, Fixtures.source(train, 16, 5), Fixtures.source(val, 30, 0));
    double[] loss = h.values("loss");
    assertEquals(8, loss.length);
    assertTrue(loss[7] < 0.5 * loss[0], "loss should fall: " + java.util.Arrays.toString(loss));
    assertEquals(8, h.values("val_loss").length);
    assertTrue(h.last("val_accuracy") > 0.85, "val accuracy " + h.last("val_accuracy"));
    assertTrue(h.last("accuracy") > 0.85, "train accuracy " + h.last("accuracy"));
    assertEquals(8, h.entries("val_accuracy").get(7).epoch());
    assertEquals(8L * 13, h.entries("loss").get(7).step());
    assertTrue(model.isTraining(), "fit leaves the model in train mode");
  }

  @Test
  void hooksRunInOrder() {
    List<String> calls = new ArrayList<>();
    Callback recorder = new Callback() {
      @Override public void onTrainBegin(TrainContext c) { calls.add("trainBegin"); }
      @Override public void onEpochBegin(TrainContext c) { calls.add("epochBegin" + c.epoch()); }
      @Override public void onBatchBegin(TrainContext c, Batch b) { calls.add("batchBegin" + c.batchIndex()); }
      @Override public void onAfterBackward(TrainContext c) { calls.add("afterBackward"); }
      @Override public void onBeforeOptimizerStep(TrainContext c) { calls.add("beforeStep"); }
      @Override public void onBatchEnd(TrainContext c, Batch b, double loss) { calls.add("batchEnd" + c.globalStep()); }
      @Override public void onValidationBegin(TrainContext c) { calls.add("valBegin"); }
      @Override public void onValidationEnd(TrainContext c, Map<String, Double> m) { calls.add("valEnd" + m.keySet()); }
      @Override public void onEpochEnd(TrainContext c) { calls.add("epochEnd" + c.epoch()); }
      @Override public void onTrainEnd(TrainContext c) { calls.add("trainEnd"); }
    };
    Module model = Fixtures.mlp(0);
    Tensor[] small = Fixtures.blobs(3, 8);
    Trainer.builder().maxEpochs(1).accumulate(2).callbacks(recorder).build()
        .fit(model, F::crossEntropy, new SGD(model.parameters(), 0.1), Fixtures.source(small, 3, 0), Fixtures.source(small, 8, 0));
    assertEquals(List.of("trainBegin", "epochBegin1",
        "batchBegin0", "afterBackward", "batchEnd0",
        "batchBegin1", "afterBackward", "beforeStep", "batchEnd1",
        "batchBegin2", "afterBackward", "beforeStep", "batchEnd2",   // the epoch's last batch always steps
        "valBegin", "valEnd[val_loss]", "epochEnd1", "trainEnd"), calls);
  }

  @Test
  void accumulationEqualsOneStepOnTheWholeBatch() {
    Tensor[] d = Fixtures.blobs(4, 8);
    Module a = Fixtures.mlp(9);
    Trainer.builder().maxEpochs(1).accumulate(2).build()
        .fit(a, F::crossEntropy, new SGD(a.parameters(), 0.5), Fixtures.source(d, 4, 0), null);
    Module b = Fixtures.mlp(9);
    Trainer.builder().maxEpochs(1).build()
        .fit(b, F::crossEntropy, new SGD(b.parameters(), 0.5), Fixtures.source(d, 8, 0), null);
    for (String k : a.stateDict().keySet()) {
      float[] x = a.stateDict().get(k).toFloatArray();
      float[] y = b.stateDict().get(k).toFloatArray();
      for (int i = 0; i < x.length; i++) assertEquals(y[i], x[i], 1e-6, k);
    }
    Module c = Fixtures.mlp(9);
    Trainer.builder().maxEpochs(1).callbacks(new GradientAccumulationScheduler(2)).build()
        .fit(c, F::crossEntropy, new SGD(c.parameters(), 0.5), Fixtures.source(d, 4, 0), null);
    Fixtures.assertSameState(a.stateDict(), c.stateDict());
  }

  @Test
  void maxStepsStopsMidEpochAndSchedulesStepPerBatch() {
    Module model = Fixtures.mlp(0);
    var opt = new SGD(model.parameters(), 0.1);
    var sched = new StepLR(opt, 5, 0.5);
    History h = Trainer.builder().maxSteps(12).scheduler(sched, Trainer.Interval.BATCH).build()
        .fit(model, F::crossEntropy, opt, Fixtures.source(train, 100, 0), null);
    assertEquals(12, sched.lastEpoch());
    assertEquals(0.1 * 0.25, opt.paramGroups().get(0).lr(), 1e-15);
    assertEquals(6, h.values("loss").length, "6 full epochs of 2 batches");
  }

  @Test
  void earlyStoppingStopsAndRestoresTheBestWeights() {
    Module model = Fixtures.mlp(0);
    // a learning rate so large that validation loss gets worse after the first epochs
    var opt = new SGD(model.parameters(), 5.0);
    var es = new EarlyStopping("val_loss", "min", 1, 0.0, true);
    List<Map<String, Tensor>> snapshots = new ArrayList<>();
    Callback snap = new Callback() {
      @Override public void onEpochEnd(TrainContext c) {
        var copy = new java.util.LinkedHashMap<String, Tensor>();
        c.model().stateDict().forEach((k, v) -> copy.put(k, v.cloneContiguous()));
        snapshots.add(copy);
      }
    };
    History h = Trainer.builder().maxEpochs(50).callbacks(snap, es).build()
        .fit(model, F::crossEntropy, opt, Fixtures.source(train, 10, 0), Fixtures.source(val, 90, 0));
    assertTrue(es.stoppedEpoch() > 0 && es.stoppedEpoch() < 50, "stopped at " + es.stoppedEpoch());
    assertEquals(es.stoppedEpoch(), h.values("val_loss").length);
    double[] vl = h.values("val_loss");
    int bestIdx = 0;
    for (int i = 1; i < vl.length; i++) if (vl[i] < vl[bestIdx]) bestIdx = i;
    assertEquals(bestIdx + 1, es.bestEpoch());
    Fixtures.assertSameState(snapshots.get(bestIdx), model.stateDict());
  }

  @Test
  void terminateOnNaNAndGradientMonitorNameTheStep() {
    Module model = Fixtures.mlp(0);
    Tensor[] bad = Fixtures.blobs(5, 40);
    float[] x = bad[0].toFloatArray();
    x[4 * 25 + 2] = Float.NaN;                            // sample 25 carries a NaN
    bad[0] = Tensor.of(x, 40, 4);
    var nan = new TerminateOnNaN();
    var gm = new GradientMonitor(1, false);
    Trainer.builder().maxEpochs(3).callbacks(gm, nan).build()
        .fit(model, F::crossEntropy, new SGD(model.parameters(), 0.1), Fixtures.source(bad, 10, 0), null);
    assertTrue(nan.stoppedAtStep() >= 0);
    assertNotNull(gm.firstNonFinite());
    assertTrue(gm.firstNonFinite().startsWith("0.weight at epoch 1"), gm.firstNonFinite());
  }

  @Test
  void resumeFromAnyCheckpointIsBitwiseTheUninterruptedRun(@TempDir Path dir) throws Exception {
    Path ckpts = dir.resolve("ckpt");
    BatchSource src = Fixtures.source(train, 32, 7);    // 7 batches per epoch, the last of 8 samples
    Module ref = Fixtures.mlp(3);
    var refOpt = new Adam(ref.parameters(), 0.01);
    History refHist = Trainer.builder().maxEpochs(4).metrics(new Acc())
        .scheduler(new StepLR(refOpt, 3, 0.5), Trainer.Interval.BATCH)
        .callbacks(new ModelCheckpoint(ckpts, 0, 3, 1000), new EarlyStopping("val_loss", "min", 100))
        .build().fit(ref, F::crossEntropy, refOpt, src, Fixtures.source(val, 45, 0));
    List<Path> files;
    try (Stream<Path> s = Files.list(ckpts)) {
      files = s.sorted().toList();
    }
    assertEquals(28 / 3, files.size(), files.toString());
    for (Path f : files) {
      Module m = Fixtures.mlp(99);                      // other initial weights: all must come from the file
      var opt = new Adam(m.parameters(), 0.01);
      var es = new EarlyStopping("val_loss", "min", 100);
      History h = Trainer.builder().maxEpochs(4).metrics(new Acc())
          .scheduler(new StepLR(opt, 3, 0.5), Trainer.Interval.BATCH)
          .callbacks(new ModelCheckpoint(dir.resolve("other"), 0, 3, 1000), es)
          .resumeFrom(f).build().fit(m, F::crossEntropy, opt, src, Fixtures.source(val, 45, 0));
      Fixtures.assertSameState(ref.stateDict(), m.stateDict());
      for (String key : List.of("loss", "val_loss", "lr", "accuracy", "val_accuracy")) {
        org.junit.jupiter.api.Assertions.assertArrayEquals(refHist.values(key), h.values(key), 0.0, key + " from " + f);
      }
    }
  }

  @Test
  void modelCheckpointKeepsTheLastK(@TempDir Path dir) throws Exception {
    Module model = Fixtures.mlp(0);
    var mc = new ModelCheckpoint(dir, 1, 0, 2, "val_loss", "min");
    Trainer.builder().maxEpochs(5).callbacks(mc).build()
        .fit(model, F::crossEntropy, new SGD(model.parameters(), 0.1), Fixtures.source(train, 50, 0), Fixtures.source(val, 90, 0));
    try (Stream<Path> s = Files.list(dir)) {
      assertEquals(List.of("best.ckpt", "step-00000016.ckpt", "step-00000020.ckpt"),
          s.map(p -> p.getFileName().toString()).sorted().toList());
    }
    assertEquals(dir.resolve("step-00000020.ckpt"), ModelCheckpoint.latest(dir).orElseThrow());
    for (String f : List.of("best.ckpt", "step-00000016.ckpt", "step-00000020.ckpt")) {
      assertNotNull(Checkpoint.read(dir.resolve(f)).get("model"));
    }
  }

  @Test
  void badConfigurationIsRejected() {
    assertEquals("Trainer: max_epochs must be >= 1, got 0",
        assertThrows(IllegalArgumentException.class, () -> Trainer.builder().maxEpochs(0)).getMessage());
    assertEquals("Trainer: two callbacks share the state key 'TerminateOnNaN'; give one of them another stateKey()",
        assertThrows(IllegalArgumentException.class,
            () -> Trainer.builder().callbacks(new TerminateOnNaN(), new TerminateOnNaN()).build()).getMessage());
    Module model = Fixtures.mlp(0);
    var ex = assertThrows(IllegalArgumentException.class, () -> Trainer.builder().maxEpochs(1).build()
        .fit(model, (o, t) -> o.sum(1, false), new SGD(model.parameters(), 0.1), Fixtures.source(train, 50, 0), null));
    assertEquals("Trainer.fit: the loss must be a scalar, got shape [50]; use a mean or sum reduction", ex.getMessage());
  }

  @Test
  void earlyStoppingSaysOneEpochInTheSingular() {
    Module model = Fixtures.mlp(0);
    String[] reason = new String[1];
    Callback last = new Callback() {
      @Override public void onTrainEnd(TrainContext c) {
        reason[0] = c.stopReason();
      }
    };
    // patience 0 and a learning rate that makes validation loss worse: stops one epoch without improvement
    Trainer.builder().maxEpochs(50).callbacks(new EarlyStopping("val_loss", "min", 0), last).build()
        .fit(model, F::crossEntropy, new SGD(model.parameters(), 5.0), Fixtures.source(train, 10, 0), Fixtures.source(val, 90, 0));
    assertTrue(reason[0] != null && reason[0].startsWith("EarlyStopping: val_loss did not improve for 1 epoch (best "),
        String.valueOf(reason[0]));
  }
}
