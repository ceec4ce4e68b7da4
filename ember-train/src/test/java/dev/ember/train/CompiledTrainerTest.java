package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.Batch;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adam;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.optim.schedule.StepLR;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.ModelCheckpoint;
import dev.ember.train.callbacks.TerminateOnNaN;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Trainer.Builder#compile}: compiled steps train to eager's losses, metrics and weights, with the optimizer's
 * update fused into the compiled step unless something must see the gradients first ({@link Trainer#unfusedBecause()}).
 */
class CompiledTrainerTest {
  private final Tensor[] train = Fixtures.blobs(1, 200);
  private final Tensor[] val = Fixtures.blobs(2, 90);

  private History fit(Module model, boolean compile) {
    Trainer t = Trainer.builder().maxEpochs(3).compile(compile).metrics(new dev.ember.metrics.Accuracy()).build();
    assertTrue(t.compiled() == compile);
    return t.fit(model, F::crossEntropy, new Adam(model.parameters(), 1e-2), Fixtures.source(train, 32, 5),
        Fixtures.source(val, 45, 6));
  }

  @Test
  void compiledStepsTrainToEagersWeightsAndHistory() {
    Module eager = Fixtures.mlp(3);
    Module compiled = Fixtures.mlp(3);
    History he = fit(eager, false);
    History hc = fit(compiled, true);
    Fixtures.assertSameState(eager.stateDict(), compiled.stateDict());
    for (String key : new String[] {"loss", "accuracy", "val_loss", "val_accuracy"}) {
      assertArrayEquals(he.values(key), hc.values(key), 0.0, key);
    }
  }

  @Test
  void compileRefusesWhatItCannotCompile() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Trainer.builder().compile(true).accumulate(2).build());
    assertTrue(e.getMessage().contains("accumulate(2)"), e.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> Trainer.builder().compile(true).precision(Trainer.Precision.BF16).build());
    assertFalse(Trainer.builder().build().compiled());
  }

  /** Adam that counts the updates handed to it as gradients ({@code step(IdentityHashMap)}: the fused path). */
  static final class CountingAdam extends Adam {
    int fused;

    CountingAdam(List<Tensor> params) {
      super(params, 1e-2);
    }

    @Override
    public void step(IdentityHashMap<Tensor, Tensor> gradients) {
      fused++;
      super.step(gradients);
    }
  }

  /** The eager run and the compiled run of one configuration: same weights, same history of each key. */
  private static int compareRuns(UnaryOperator<Trainer.Builder> config, List<Batch> batches, int epochs,
      List<String> expectedBlockers, String... keys) {
    Module eager = Fixtures.mlp(3);
    Module compiled = Fixtures.mlp(3);
    CountingAdam oe = new CountingAdam(eager.parameters());
    CountingAdam oc = new CountingAdam(compiled.parameters());
    Trainer te = config.apply(Trainer.builder().maxEpochs(epochs)).scheduler(new StepLR(oe, 3, 0.5),
        Trainer.Interval.BATCH).build();
    Trainer tc = config.apply(Trainer.builder().maxEpochs(epochs).compile(true)).scheduler(new StepLR(oc, 3, 0.5),
        Trainer.Interval.BATCH).build();
    assertEquals(expectedBlockers, tc.unfusedBecause());
    History he = te.fit(eager, F::crossEntropy, oe, Fixtures.source(batches), null);
    History hc = tc.fit(compiled, F::crossEntropy, oc, Fixtures.source(batches), null);
    Fixtures.assertSameState(eager.stateDict(), compiled.stateDict());
    assertEquals(oe.paramGroups().get(0).lr(), oc.paramGroups().get(0).lr(), "the schedule stepped alike");
    for (String key : keys) assertArrayEquals(he.values(key), hc.values(key), 0.0, key);
    assertEquals(0, oe.fused, "eager steps never hand gradients over");
    for (Tensor p : compiled.parameters()) assertEquals(null, p.grad(), "no gradient is left after a step");
    return oc.fused;
  }

  /** 7 batches of 8 blobs, those at {@code bad} with a NaN in their first sample. */
  private static List<Batch> batches(Set<Integer> bad) {
    Tensor[] d = Fixtures.blobs(1, 56);
    List<Batch> out = new ArrayList<>();
    for (int b = 0; b < 7; b++) {
      float[] x = d[0].narrow(0, b * 8, 8).toFloatArray();
      if (bad.contains(b)) x[1] = Float.NaN;
      out.add(new Batch(Tensor.of(x, 8, 4), d[1].narrow(0, b * 8, 8).cloneContiguous()));
    }
    return out;
  }

  @Test
  void theUpdateIsFusedIntoTheCompiledStepWithEagersBits() {
    int fused = compareRuns(b -> b.metrics(new dev.ember.metrics.Accuracy()), batches(Set.of()), 2, List.of(),
        "loss", "accuracy", "lr");
    assertEquals(13, fused, "every step after the one that traces takes the update in");
  }

  @Test
  void aNonFiniteBatchIsSkippedByTheFusedStepAsByEagers() {
    int fused = compareRuns(b -> b.skipNonFiniteSteps(2), batches(Set.of(2, 5)), 2, List.of(), "loss",
        "skipped_steps");
    assertEquals(9, fused, "the 4 bad steps make no update, and the first traces");
  }

  @Test
  void clippingAndGradientReadingCallbacksFallBackByName() {
    List<String> both = List.of("clipGradNorm", "callback " + TerminateOnNaN.class.getName() + ".onAfterBackward");
    assertEquals(0, compareRuns(b -> b.clipGradNorm(0.5).callbacks(new TerminateOnNaN()), batches(Set.of()), 2, both,
        "loss"));
    Callback before = new Callback() {
      @Override
      public void onBeforeOptimizerStep(TrainContext ctx) {}
    };
    List<String> why = Trainer.builder().compile(true).clipGradValue(1).callbacks(before).build().unfusedBecause();
    assertEquals(List.of("clipGradValue", "callback " + before.getClass().getName() + ".onBeforeOptimizerStep"), why);
    assertEquals(List.of("compile(false)"), Trainer.builder().build().unfusedBecause());
    assertEquals(List.of(), Trainer.builder().compile(true).callbacks(new dev.ember.train.callbacks.Profiling(null, null))
        .build().unfusedBecause(), "profiling reads no gradient");
  }

  @Test
  void aStopAskedForBeforeTheStepCancelsItAsInEagerSteps() {
    UnaryOperator<Trainer.Builder> stopAt4 = b -> b.callbacks(new Callback() {
      @Override
      public void onBatchBegin(TrainContext ctx, Batch batch) {
        if (ctx.batchIndex() == 4) ctx.requestStop("enough");
      }
    });
    assertEquals(3, compareRuns(stopAt4, batches(Set.of()), 1, List.of(), "loss"));
  }

  @Test
  void aCompiledRunResumedFromAnyCheckpointIsTheUninterruptedRun(@TempDir Path dir) throws Exception {
    Path ckpts = dir.resolve("ckpt");
    Module ref = Fixtures.mlp(3);
    var refOpt = new Adam(ref.parameters(), 0.01);
    History refHist = Trainer.builder().maxEpochs(3).compile(true).scheduler(new StepLR(refOpt, 3, 0.5),
        Trainer.Interval.BATCH).callbacks(new ModelCheckpoint(ckpts, 0, 4, 1000)).build()
        .fit(ref, F::crossEntropy, refOpt, Fixtures.source(batches(Set.of())), null);
    Module eager = Fixtures.mlp(3);
    var eagerOpt = new Adam(eager.parameters(), 0.01);
    Trainer.builder().maxEpochs(3).scheduler(new StepLR(eagerOpt, 3, 0.5), Trainer.Interval.BATCH).build()
        .fit(eager, F::crossEntropy, eagerOpt, Fixtures.source(batches(Set.of())), null);
    Fixtures.assertSameState(eager.stateDict(), ref.stateDict());
    List<Path> files;
    try (Stream<Path> s = Files.list(ckpts)) {
      files = s.sorted().toList();
    }
    assertEquals(21 / 4, files.size(), files.toString());
    for (Path f : files) {
      Module m = Fixtures.mlp(99); // other initial weights: all must come from the file
      var opt = new Adam(m.parameters(), 0.01);
      History h = Trainer.builder().maxEpochs(3).compile(true).scheduler(new StepLR(opt, 3, 0.5),
          Trainer.Interval.BATCH).resumeFrom(f).build()
          .fit(m, F::crossEntropy, opt, Fixtures.source(batches(Set.of())), null);
      Fixtures.assertSameState(ref.stateDict(), m.stateDict());
      assertArrayEquals(refHist.values("loss"), h.values("loss"), 0.0, f.toString());
    }
  }

  @Test
  void aTrainableParameterTheOptimizerLeavesOutKeepsItsGradientsAsInEagerSteps() {
    Module[] models = {Fixtures.mlp(3), Fixtures.mlp(3)};
    CountingAdam[] opts = new CountingAdam[2];
    for (int i = 0; i < 2; i++) { // the optimizer updates the last layer only; the first still requires grad
      List<Tensor> last = new ArrayList<>(models[i].parameters().subList(2, 4));
      opts[i] = new CountingAdam(last);
      Trainer.builder().maxEpochs(1).compile(i == 1).build()
          .fit(models[i], F::crossEntropy, opts[i], Fixtures.source(batches(Set.of())), null);
    }
    Fixtures.assertSameState(models[0].stateDict(), models[1].stateDict());
    assertEquals(0, opts[1].fused, "not fused: the first layer's gradients accumulate as in eager steps");
    for (int p = 0; p < 2; p++) {
      assertArrayEquals(models[0].parameters().get(p).grad().toFloatArray(),
          models[1].parameters().get(p).grad().toFloatArray(), 0f);
    }
  }
}
