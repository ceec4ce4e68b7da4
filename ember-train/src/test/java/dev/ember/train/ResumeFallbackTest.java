package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.Batch;
import dev.ember.data.BatchSource;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adam;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.ModelCheckpoint;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link ModelCheckpoint#latestValid}: a corrupt newest checkpoint says why and the run resumes from the newest good one. */
class ResumeFallbackTest {
  private final Tensor[] train = Fixtures.blobs(1, 200);
  private final BatchSource src = Fixtures.source(train, 20, 7);      // 10 batches per epoch

  /** Trains 30 steps saving every 10 (keeping 3); returns the model. */
  private Module train(Path ckpts, Path resumeFrom, List<Long> stepsRun) {
    Module m = Fixtures.mlp(resumeFrom == null ? 3 : 99);
    var opt = new Adam(m.parameters(), 0.01);
    Callback count = new Callback() {
      @Override public void onBatchEnd(TrainContext c, Batch b, double loss) {
        stepsRun.add(c.globalStep());
      }
    };
    Trainer.builder().maxSteps(30).callbacks(new ModelCheckpoint(ckpts, 0, 10, 3), count).resumeFrom(resumeFrom).build()
        .fit(m, F::crossEntropy, opt, src, null);
    return m;
  }

  private static void truncate(Path f, int keep) throws Exception {
    Files.write(f, Arrays.copyOf(Files.readAllBytes(f), keep));
  }

  @Test
  void aCorruptNewestCheckpointIsNamedAndTheNewestGoodOneUsed(@TempDir Path dir) throws Exception {
    Path ckpts = dir.resolve("ckpt");
    Module ref = train(ckpts, null, new ArrayList<>());
    Path s10 = ckpts.resolve("step-00000010.ckpt");
    Path s20 = ckpts.resolve("step-00000020.ckpt");
    Path s30 = ckpts.resolve("step-00000030.ckpt");
    try (Stream<Path> s = Files.list(ckpts)) {
      assertEquals(List.of(s10, s20, s30), s.sorted().toList());
    }
    List<String> warnings = new ArrayList<>();
    assertEquals(Optional.of(s30), ModelCheckpoint.latestValid(ckpts, warnings::add));
    assertEquals(List.of(), warnings, "nothing to say when the newest verifies");

    long size = Files.size(s30);
    long cut = size - 300;                              // inside the tensors' data, past the header
    truncate(s30, (int) cut);
    assertEquals(Optional.of(s20), ModelCheckpoint.latestValid(ckpts, warnings::add));
    assertEquals(List.of(String.format(Locale.ROOT, "%s is corrupt (truncated at %,d of %,d bytes); resuming from %s",
        s30, cut, size, s20)), warnings);
    var e = assertThrows(UncheckedIOException.class, () -> train(dir.resolve("x"), s30, new ArrayList<>()));
    assertEquals(String.format(Locale.ROOT, "Trainer: cannot resume from %s: truncated at %,d of %,d bytes", s30, cut, size),
        e.getMessage());

    // the resumed run is the one from step 20: it runs steps 21..30 and ends where the uninterrupted run did
    List<Long> stepsRun = new ArrayList<>();
    Module resumed = train(dir.resolve("again"), ModelCheckpoint.latestValid(ckpts, null).orElseThrow(), stepsRun);
    assertEquals(List.of(21L, 22L, 23L, 24L, 25L, 26L, 27L, 28L, 29L, 30L), stepsRun);
    Fixtures.assertSameState(ref.stateDict(), resumed.stateDict());
  }

  @Test
  void aFlippedByteFallsBackTooAndNoneVerifyingListsEachFile(@TempDir Path dir) throws Exception {
    Path ckpts = dir.resolve("ckpt");
    train(ckpts, null, new ArrayList<>());
    Path s10 = ckpts.resolve("step-00000010.ckpt");
    Path s20 = ckpts.resolve("step-00000020.ckpt");
    Path s30 = ckpts.resolve("step-00000030.ckpt");
    byte[] b = Files.readAllBytes(s30);
    b[b.length - 2] ^= 0x40;                            // a bit of the last tensor's data
    Files.write(s30, b);
    truncate(s20, 4);
    List<String> warnings = new ArrayList<>();
    assertEquals(Optional.of(s10), ModelCheckpoint.latestValid(ckpts, warnings::add));
    assertEquals(1, warnings.size(), warnings.toString());
    assertTrue(warnings.get(0).matches("\\Q" + s30 + "\\E is corrupt \\(checksum mismatch \\(expected sha256 [0-9a-f]{64},"
        + " got [0-9a-f]{64}\\)\\); \\Q" + s20 + "\\E is corrupt \\(truncated at 4 bytes, before the end of the 8-byte header"
        + " length\\); resuming from \\Q" + s10 + "\\E"), warnings.get(0));

    Files.write(s10, new byte[0]);
    var e = assertThrows(CheckpointException.class, () -> ModelCheckpoint.latestValid(ckpts, warnings::add));
    assertTrue(e.getMessage().matches("checkpoint \\Q" + ckpts + "\\E: none of its 3 checkpoints verifies:"
        + " step-00000030.ckpt \\(checksum mismatch [^;]*\\); step-00000020.ckpt \\(truncated at 4 bytes, [^;]*\\);"
        + " step-00000010.ckpt \\(truncated at 0 bytes, [^;]*\\)"), e.getMessage());
    assertEquals(1, warnings.size(), "no fallback to announce");

    assertEquals(Optional.empty(), ModelCheckpoint.latestValid(dir.resolve("none"), warnings::add));
    Files.createDirectories(dir.resolve("empty"));
    assertEquals(Optional.empty(), ModelCheckpoint.latestValid(dir.resolve("empty"), warnings::add));
  }
}
