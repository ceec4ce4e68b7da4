package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.amp.Autocast;
import dev.ember.data.BatchSource;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adam;
import dev.ember.optim.GradClip;
import dev.ember.optim.GradScaler;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.train.Trainer.Precision;
import dev.ember.train.callbacks.ModelCheckpoint;
import dev.ember.train.callbacks.TerminateOnNaN;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Trainer.Builder#precision}: autocast around forward and loss only, the F16 loss scaler, its checkpoints. */
class PrecisionTrainerTest {
  private final Tensor[] train = Fixtures.blobs(1, 200);
  private final Tensor[] val = Fixtures.blobs(2, 90);

  /** A scaler that grows after 2 clean steps, so that a short run both backs off and grows. */
  private static GradScaler hugeScaler() {
    return new GradScaler(65536.0, 2.0, 0.5, 2, true);
  }

  /**
   * Cross-entropy, plus {@code sqrt(sum(0 * out))} on the batches whose first label is 0: a finite loss (the term is
   * 0) whose gradients are NaN (0.5 / sqrt(0) times 0), in any precision: an overflow the scaler must skip.
   */
  private static Tensor overflowing(Tensor out, Tensor y) {
    Tensor ce = F.crossEntropy(out, y);
    return y.toLongArray()[0] == 0 ? ce.add(out.mul(0).sum().sqrt()) : ce;
  }

  @Test
  void precisionParsesTheCliNamesAndListsTheChoices() {
    assertEquals(Precision.F32, Precision.parse("fp32"));
    assertEquals(Precision.BF16, Precision.parse("BF16"));
    assertEquals(Precision.F16, Precision.parse("half"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Precision.parse("fp8"));
    assertEquals("precision must be one of fp32, bf16, fp16, got 'fp8'", e.getMessage());
    assertTrue(Precision.F16.scalesLoss());
    assertFalse(Precision.BF16.scalesLoss());
    assertNull(Precision.F32.autocastDType());
  }

  @Test
  void forwardAndLossRunUnderAutocastBackwardAndStepDoNot() {
    for (Precision p : Precision.values()) {
      List<DType> lossScopes = new ArrayList<>();
      List<String> outside = new ArrayList<>();
      BiFunction<Tensor, Tensor, Tensor> loss = (out, y) -> {
        lossScopes.add(Autocast.dtype());
        return F.crossEntropy(out, y);
      };
      Callback probe = new Callback() {
        @Override
        public void onAfterBackward(TrainContext ctx) {
          if (Autocast.enabled()) outside.add("backward");
          for (Tensor w : ctx.model().parameters()) {
            if (w.grad().dtype() != DType.F32) outside.add("gradient " + w.grad().dtype());
          }
        }

        @Override
        public void onBeforeOptimizerStep(TrainContext ctx) {
          if (Autocast.enabled()) outside.add("step");
        }
      };
      Module m = Fixtures.mlp(0);
      History h = Trainer.builder().precision(p).maxEpochs(1).callbacks(probe).build()
          .fit(m, loss, new Adam(m.parameters(), 0.01), Fixtures.source(train, 50, 1), Fixtures.source(val, 45, 0));
      assertEquals(4 + 2, lossScopes.size(), p + ": 4 training batches, 2 validation batches");
      for (DType d : lossScopes) assertEquals(p.autocastDType(), d, p + ": the loss (and validation) runs in the precision");
      assertEquals(List.of(), outside, p.toString());
      assertFalse(Autocast.enabled());
      for (Tensor w : m.parameters()) assertEquals(DType.F32, w.dtype(), "master weights stay float32");
      assertEquals(p == Precision.F16, h.values("loss_scale").length == 1, p + ": loss_scale is logged with a scaler");
      if (p == Precision.F16) assertEquals(65536.0, h.values("loss_scale")[0], "PyTorch's initial scale, no overflow");
    }
  }

  @Test
  void gradientsAreUnscaledBeforeClipping() {
    double[] norms = new double[4];
    int[] seen = {0};
    Callback probe = new Callback() {
      @Override
      public void onBeforeOptimizerStep(TrainContext ctx) {
        norms[seen[0]++] = GradClip.gradNorm(ctx.model().parameters(), 2.0);
        assertEquals(65536.0, ctx.lossScale());
      }
    };
    Module m = Fixtures.mlp(0);
    Trainer.builder().precision(Precision.F16).clipGradNorm(1e-3).maxEpochs(1).callbacks(probe).build()
        .fit(m, F::crossEntropy, new SGD(m.parameters(), 0.1), Fixtures.source(train, 50, 1), null);
    for (double n : norms) {
      // clipping the scaled gradients and then unscaling would leave norms near 1e-3 / 65536
      assertTrue(n > 0.9e-3 && n <= 1.0e-3, "the clipped gradient norm is 1e-3 (true gradients), got " + n);
    }
  }

  @Test
  void aScalerInFloat32ChangesNoBitWithAccumulationAndClipping() {
    // scaling by 2^16 and unscaling by 2^-16 is exact in float32 (no overflow here): the scaled path must give
    // the unscaled run's parameters and losses bit for bit, through accumulation (loss / k, then scaled) and clipping
    Module plain = Fixtures.mlp(5);
    History hp = Trainer.builder().accumulate(2).clipGradNorm(0.5).maxEpochs(2).build()
        .fit(plain, F::crossEntropy, new Adam(plain.parameters(), 0.01), Fixtures.source(train, 30, 1), null);
    for (GradScaler scaler : List.of(new GradScaler(), new GradScaler(false))) {
      Module scaled = Fixtures.mlp(5);
      History hs = Trainer.builder().gradScaler(scaler).accumulate(2).clipGradNorm(0.5).maxEpochs(2).build()
          .fit(scaled, F::crossEntropy, new Adam(scaled.parameters(), 0.01), Fixtures.source(train, 30, 1), null);
      Fixtures.assertSameState(plain.stateDict(), scaled.stateDict());
      assertArrayEquals(hp.values("loss"), hs.values("loss"), 0.0);
      assertEquals(scaler.isEnabled() ? 2 : 0, hs.values("loss_scale").length, "loss_scale only while scaling");
    }
  }

  @Test
  void scalerSkipsAreCountedAndAreNotNonFiniteFailures() {
    Module m = Fixtures.mlp(0);
    GradScaler scaler = hugeScaler();
    List<Boolean> skipped = new ArrayList<>();
    Callback probe = new Callback() {
      @Override
      public void onBatchEnd(TrainContext ctx, dev.ember.data.Batch b, double loss) {
        skipped.add(ctx.stepSkipped());
      }
    };
    // skipNonFiniteSteps(1) would stop at the first skip if an overflow counted as a non-finite step
    History h = Trainer.builder().precision(Precision.F16).gradScaler(scaler).skipNonFiniteSteps(1).maxEpochs(3)
        .callbacks(probe).build().fit(m, PrecisionTrainerTest::overflowing, new SGD(m.parameters(), 0.1),
            Fixtures.source(train, 20, 1), null);
    long skips = skipped.stream().filter(s -> s).count();
    assertTrue(skips > 0 && skips < skipped.size(), "some steps overflow and are skipped, others step: " + skipped);
    double[] perEpoch = h.values("skipped_steps");
    double total = 0;
    for (double d : perEpoch) total += d;
    assertEquals(skips, (long) total, "skipped_steps in the history counts the scaler's skips");
    assertTrue(h.values("loss_scale")[0] != 65536.0, "the scale moved");
    for (Tensor w : m.parameters()) for (float f : w.toFloatArray()) assertTrue(Float.isFinite(f));
  }

  @Test
  void terminateOnNaNLeavesTheScalersOverflowsToIt() {
    for (Precision p : List.of(Precision.F32, Precision.F16)) {
      Module m = Fixtures.mlp(0);
      var nan = new TerminateOnNaN();
      Trainer.builder().precision(p).maxEpochs(1).callbacks(nan).build()
          .fit(m, PrecisionTrainerTest::overflowing, new Adam(m.parameters(), 0.01), Fixtures.source(train, 20, 1), null);
      assertEquals(p == Precision.F32, nan.stoppedAtStep() >= 0, p + ": a NaN gradient stops F32 training only");
    }
  }

  private static List<Path> files(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      return s.sorted().toList();
    }
  }

  @Test
  void f16ResumeIsBitwiseTheUninterruptedRunScalerIncluded(@TempDir Path dir) throws Exception {
    Path ckpts = dir.resolve("ckpt");
    BatchSource src = Fixtures.source(train, 20, 7);    // 10 batches per epoch
    Module ref = Fixtures.mlp(3);
    GradScaler refScaler = hugeScaler();
    var refOpt = new Adam(ref.parameters(), 0.01);
    History refHist = Trainer.builder().precision(Precision.F16).gradScaler(refScaler).maxEpochs(2)
        .callbacks(new ModelCheckpoint(ckpts, 0, 3, 1000))
        .build().fit(ref, PrecisionTrainerTest::overflowing, refOpt, src, Fixtures.source(val, 45, 0));
    assertTrue(refHist.values("skipped_steps").length > 0, "the run has scaler skips to resume across");
    List<Path> saved = files(ckpts);
    assertFalse(saved.isEmpty());
    for (Path f : saved) {
      Module m = Fixtures.mlp(99);                       // other weights: all must come from the file
      GradScaler scaler = hugeScaler();
      var opt = new Adam(m.parameters(), 0.01);
      History h = Trainer.builder().precision(Precision.F16).gradScaler(scaler).maxEpochs(2)
          .callbacks(new ModelCheckpoint(dir.resolve("other"), 0, 3, 1000)).resumeFrom(f)
          .build().fit(m, PrecisionTrainerTest::overflowing, opt, src, Fixtures.source(val, 45, 0));
      Fixtures.assertSameState(ref.stateDict(), m.stateDict());
      assertEquals(refScaler.stateDict(), scaler.stateDict(), "scaler state from " + f);
      for (String key : List.of("loss", "val_loss", "loss_scale", "skipped_steps")) {
        assertArrayEquals(refHist.values(key), h.values(key), 0.0, key + " from " + f);
      }
    }
    // a checkpoint of an F16 run does not resume in another precision
    Module m = Fixtures.mlp(99);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Trainer.builder().maxEpochs(2)
        .resumeFrom(saved.get(0)).build().fit(m, F::crossEntropy, new Adam(m.parameters(), 0.01), src, null));
    assertTrue(e.getMessage().contains("precision F16"), e.getMessage());
  }

  @Test
  void checkpointHoldsPrecisionAndScalerState(@TempDir Path dir) throws Exception {
    Module m = Fixtures.mlp(0);
    Trainer.builder().precision(Precision.F16).maxEpochs(1).callbacks(new ModelCheckpoint(dir, 1, 0, 5)).build()
        .fit(m, F::crossEntropy, new SGD(m.parameters(), 0.1), Fixtures.source(train, 50, 1), null);
    Map<String, Object> state = Checkpoint.read(files(dir).get(0));
    assertEquals("F16", state.get("precision"));
    assertEquals(Map.of("scale", 65536.0, "growth_factor", 2.0, "backoff_factor", 0.5, "growth_interval", 2000,
        "_growth_tracker", 4), state.get("scaler"));
  }
}
