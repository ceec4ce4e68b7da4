package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.ember.autograd.Grad;
import dev.ember.data.Batch;
import dev.ember.metrics.MeanAbsoluteError;
import dev.ember.nn.Linear;
import dev.ember.nn.functional.F;
import dev.ember.optim.SGD;
import dev.ember.optim.schedule.StepLR;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bytes of a trainer checkpoint do not change: a fixed short run writes one, and it must equal
 * {@code /checkpoints/trainer-state.ckpt}, recorded by the same run. Every part of the trainer's
 * state is non-trivial in it: model, SGD momentum, schedule, the global and one extra generator,
 * the counters (a skipped non-finite step included), the logs, a training metric, the history and
 * a callback's state.
 *
 * <p>The arithmetic is exact (small dyadic inputs, weights and targets, batch and learning rates
 * powers of two), so the file is the same at any thread count and with scalar or vector kernels.
 * To record the fixture again after a deliberate change of the format, run this test with
 * {@code -Dember.recordCheckpointFixture=<path of the resource file>}.
 */
class CheckpointBytesTest {
  /** Batches of 2 samples of 2 features; batch 5 holds a NaN, so the step of batches 4-5 is skipped. */
  private static List<Batch> batches() {
    List<Batch> out = new ArrayList<>();
    for (int b = 0; b < 8; b++) {
      float[] x = {b % 3 - 1, 1, (b % 2) * 2 - 1, b % 4 - 2};
      if (b == 5) x[1] = Float.NaN;
      float[] y = {b % 2, -1, 1, (b % 3) - 1};
      out.add(new Batch(Tensor.of(x, 2, 2), Tensor.of(y, 2, 2)));
    }
    return out;
  }


  /** Logs a value into the history at every batch, keeps a count, and asks for a checkpoint after batch 6. */
  private static final class Probe implements Callback {
    final Path file;
    long batchesSeen;

    Probe(Path file) {
      this.file = file;
    }

    @Override
    public void onBatchEnd(TrainContext ctx, Batch batch, double loss) {
      batchesSeen++;
      ctx.log("probe", ctx.batchIndex() / 4.0);
      if (ctx.batchIndex() == 6) ctx.requestCheckpoint(file, null);
    }

    @Override
    public Map<String, Object> stateDict() {
      return Map.of("batches_seen", batchesSeen);      // one entry: no order to vary
    }
  }

  /** Runs the fixed 7 batches of epoch 1 (3 steps taken, 1 skipped) and returns the checkpoint written after batch 6. */
  private static Path writeCheckpoint(Path dir) {
    long[] globalBefore = Generator.global().state();
    try {
      Generator.manualSeed(34);
      Linear model = new Linear(2, 2, true, new Generator(1));
      LinkedHashMap<String, Tensor> init = new LinkedHashMap<>();
      init.put("weight", Tensor.of(new float[] {1, -0.5f, 0.25f, 2}, 2, 2));
      init.put("bias", Tensor.of(new float[] {0.5f, -1}, 2));
      try (var ignored = Grad.off()) {
        model.loadStateDict(init);
      }
      SGD opt = new SGD(model.parameters(), Map.of("lr", 0.125, "momentum", 0.5));
      Path file = dir.resolve("probe.ckpt");
      Trainer.builder().maxEpochs(1).maxSteps(3).accumulate(2).skipNonFiniteSteps(2)
          .scheduler(new StepLR(opt, 2, 0.5), Trainer.Interval.BATCH)
          .metrics(new MeanAbsoluteError()).generators(new Generator(7)).callbacks(new Probe(file)).build()
          .fit(model, F::mseLoss, opt, Fixtures.source(batches()), null);
      return file;
    } finally {
      Generator.global().setState(globalBefore);
    }
  }

  @Test
  void aFixedRunWritesTheRecordedCheckpointByteForByte(@TempDir Path dir) throws Exception {
    byte[] got = Files.readAllBytes(writeCheckpoint(dir));
    String record = System.getProperty("ember.recordCheckpointFixture");
    if (record != null) Files.write(Path.of(record), got);
    byte[] want;
    try (InputStream in = CheckpointBytesTest.class.getResourceAsStream("/checkpoints/trainer-state.ckpt")) {
      assertNotNull(in, "the fixture /checkpoints/trainer-state.ckpt is missing");
      want = in.readAllBytes();
    }
    // the first difference past the checksum says what changed (a checksum differs whenever anything does)
    int sha = new String(want, StandardCharsets.ISO_8859_1).indexOf("\"sha256\":\"");
    int at = firstDifference(got, want, 0);
    if (at >= sha && at < sha + 10 + 64) at = firstDifference(got, want, sha + 10 + 64);
    if (at < got.length || at < want.length) {
      assertEquals(excerpt(want, at), excerpt(got, at), "the checkpoint differs from the fixture at byte " + at
          + " (fixture " + want.length + " bytes, written " + got.length + ")");
    }
    assertArrayEquals(want, got, "the checkpoint's bytes (its checksum)");
  }

  private static int firstDifference(byte[] a, byte[] b, int from) {
    int at = from;
    while (at < Math.min(a.length, b.length) && a[at] == b[at]) at++;
    return at;
  }

  /** The bytes around {@code at}, as text (the state is JSON in the safetensors header). */
  private static String excerpt(byte[] b, int at) {
    int from = Math.max(0, at - 80);
    int to = Math.min(b.length, at + 80);
    return new String(b, from, to - from, StandardCharsets.ISO_8859_1);
  }
}
