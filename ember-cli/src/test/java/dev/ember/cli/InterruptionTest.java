package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.train.callbacks.ModelCheckpoint;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shutdown hook's side of an interruption before training starts, driven on a thread of the
 * test (the real signal path is {@link TrainInterruptTest}'s).
 */
class InterruptionTest {
  @TempDir Path tmp;

  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private final PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);

  private Interruption interruption(RunFolder folder, long stopWaitMillis) {
    return new Interruption(folder, true, new ModelCheckpoint(folder.checkpoints(), 1, 0, 3), errStream,
        "./ember train --resume " + folder.dir(), stopWaitMillis);
  }

  @Test
  void theRunSeesTheSignalAtItsNextCheckAndTheHookThenReturns() throws Exception {
    RunFolder folder = RunFolder.create(tmp.resolve("runs/x"), false);
    Thread hook;
    try (folder; Interruption in = interruption(folder, 10_000)) {
      hook = new Thread(in::onSignal);
      hook.start();
      while (!in.requested()) Thread.onSpinWait();
      assertThrows(Interruption.Interrupted.class, in::check);
    }
    hook.join(5_000);
    assertFalse(hook.isAlive(), "the hook still waits after the run ended");
    assertEquals("", err.toString(StandardCharsets.UTF_8), "the run, not the hook, says what happened");
  }

  @Test
  void aHookThatWaitsInVainSaysNothingWasSavedAndRemovesTheNewRunsFolder() throws Exception {
    Path x = tmp.resolve("runs/x");
    RunFolder folder = RunFolder.create(x, false);
    Files.writeString(x.resolve("run.properties"), "epochs=1\n");
    try (Interruption in = interruption(folder, 200)) {
      in.onSignal(); // nothing checks the flag: the wait runs out
      assertEquals("ember train: interrupted before training started; nothing was saved\n", err.toString(StandardCharsets.UTF_8));
    }
    assertFalse(Files.exists(tmp.resolve("runs")), "the new run's folder (and the runs/ made for it) with nothing of value");
  }

  @Test
  void aHookThatWaitsInVainNamesTheLastCheckpointToContinueFrom() throws Exception {
    Path x = tmp.resolve("x");
    RunFolder folder = RunFolder.create(x, false);
    Files.createDirectories(folder.checkpoints());
    Files.writeString(folder.checkpoints().resolve(ModelCheckpoint.fileName(40)), "a checkpoint");
    try (folder; Interruption in = interruption(folder, 200)) {
      in.onSignal();
    }
    assertEquals("ember train: interrupted before training started; continue from its last checkpoint (step 40) with"
        + " ./ember train --resume " + x + "\n", err.toString(StandardCharsets.UTF_8));
    assertTrue(Files.exists(folder.checkpoints().resolve(ModelCheckpoint.fileName(40))));
  }
}
