package dev.ember.cli;

import dev.ember.data.Batch;
import dev.ember.train.Callback;
import dev.ember.train.TrainContext;
import dev.ember.train.callbacks.ModelCheckpoint;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Ctrl-C (SIGINT) or SIGTERM during {@code ./ember train}: the JVM runs this shutdown hook, which
 * raises a flag and waits. The training loop sees the flag at its next batch boundary (this
 * callback's {@code onBatchEnd}, or {@code onEpochEnd}), asks for a checkpoint of that consistent
 * state (unless the rotation writes one at that step anyway) and stops; {@code TrainCommand} then
 * writes the weights and the report and prints where to continue. The hook waits a bounded time for
 * the loop to reach the boundary ({@link #STOP_WAIT_MILLIS}, or three times the last step's time if
 * that is longer, at most {@link #MAX_STOP_WAIT_MILLIS}), then at most {@link #FINISH_WAIT_MILLIS}
 * for the files; past either, it says what is on disk (a new run with nothing worth keeping is
 * removed) and lets the JVM end. Files are written atomically, so an end mid-write loses only that
 * file's new version.
 *
 * <p>Must be the last callback, so that the checkpoint rotation has made its request for the step
 * before this one looks at it.
 */
final class Interruption implements Callback, AutoCloseable {
  /** How long the hook waits for the training loop to reach the end of its batch. */
  static final long STOP_WAIT_MILLIS = 10_000;
  /** The longest wait for the end of a batch, whatever the step time. */
  static final long MAX_STOP_WAIT_MILLIS = 60_000;
  /** How long the hook then waits for the checkpoint, weights and report to be written. */
  static final long FINISH_WAIT_MILLIS = 60_000;

  private final RunFolder folder;
  private final boolean fresh;
  private final Path checkpoints;
  private final ModelCheckpoint rotation;
  private final PrintStream err;
  private final String resumeCommand;
  private final long minStopWaitMillis;
  private final Thread hook = new Thread(this::onSignal, "ember-train-interrupt");
  private final CountDownLatch stopped = new CountDownLatch(1);
  private final CountDownLatch finished = new CountDownLatch(1);
  private volatile boolean requested;
  private volatile boolean training;
  private volatile TrainContext live;
  private volatile int stopEpoch;
  private volatile long stopStep = -1;

  /**
   * Installs the hook; {@link #close()} removes it (or, on the way out of an interrupted run, lets it
   * end). {@code fresh}: the folder is a new run's, which may be removed if nothing was saved.
   */
  Interruption(RunFolder folder, boolean fresh, ModelCheckpoint rotation, PrintStream err, String resumeCommand) {
    this(folder, fresh, rotation, err, resumeCommand, STOP_WAIT_MILLIS);
  }

  /** As above, waiting at least {@code minStopWaitMillis} (instead of {@link #STOP_WAIT_MILLIS}) for the loop to stop; for tests. */
  Interruption(RunFolder folder, boolean fresh, ModelCheckpoint rotation, PrintStream err, String resumeCommand,
      long minStopWaitMillis) {
    this.minStopWaitMillis = minStopWaitMillis;
    this.folder = folder;
    this.fresh = fresh;
    this.checkpoints = folder.checkpoints();
    this.rotation = rotation;
    this.err = err;
    this.resumeCommand = resumeCommand;
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /** Whether a signal arrived. */
  boolean requested() {
    return requested;
  }

  /** Whether training stopped at a batch boundary for the signal (then {@link #epoch()} and {@link #step()} say where). */
  boolean stoppedTraining() {
    return stopStep >= 0;
  }

  int epoch() {
    return stopEpoch;
  }

  long step() {
    return stopStep;
  }

  /** The training loop is about to start (true) or has returned (false). */
  void training(boolean on) {
    training = on;
    if (!on) stopped.countDown();
  }

  /** Throws {@link Interrupted} when a signal arrived: called between the preparing steps, before training. */
  void check() {
    if (requested) {
      stopped.countDown();
      throw new Interrupted();
    }
  }

  /** A signal arrived before training started. */
  static final class Interrupted extends RuntimeException {
    Interrupted() {
      super("interrupted before training started", null, false, false);
    }
  }

  @Override
  public void onTrainBegin(TrainContext ctx) {
    live = ctx;
  }

  @Override
  public void onBatchEnd(TrainContext ctx, Batch batch, double loss) {
    if (requested) stopHere(ctx);
  }

  @Override
  public void onEpochEnd(TrainContext ctx) {
    if (requested) stopHere(ctx);
  }

  private void stopHere(TrainContext ctx) {
    if (stopStep >= 0) return;
    String name = ModelCheckpoint.fileName(ctx.globalStep());
    // the rotation's request for this step (an epoch end, --checkpoint-every) already saves this state
    if (ctx.globalStep() > 0 && !rotation.kept().contains(name)) ctx.requestCheckpoint(checkpoints.resolve(name), null);
    ctx.requestStop("interrupted");
    stopEpoch = ctx.epoch();
    stopStep = ctx.globalStep();
    stopped.countDown();
  }

  /** The hook: raise the flag, wait for the loop to stop and the files to be written, each for a bounded time. */
  void onSignal() {
    requested = true;
    try {
      long wait = stopWaitMillis();
      if (training) {
        err.println("ember train: stopping at the end of this step (waiting up to " + wait / 1000 + " s)...");
        err.flush();
      }
      if (!stopped.await(wait, TimeUnit.MILLISECONDS)) {
        err.println("ember train: " + notStopped(wait));
        err.flush();
        return;
      }
      if (!finished.await(FINISH_WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
        err.println("ember train: interrupted; writing the run's files took longer than " + FINISH_WAIT_MILLIS / 1000
            + " s, stopped now; " + lastCheckpoint());
        err.flush();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** {@link #STOP_WAIT_MILLIS}, or three times the last step's time when that is longer, at most {@link #MAX_STOP_WAIT_MILLIS}. */
  private long stopWaitMillis() {
    TrainContext ctx = live;
    long stepNanos = 0;
    if (ctx != null) for (dev.ember.train.Phase p : dev.ember.train.Phase.values()) stepNanos += ctx.stepNanos(p);
    return Math.min(MAX_STOP_WAIT_MILLIS, Math.max(minStopWaitMillis, 3 * stepNanos / 1_000_000));
  }

  /** The line for a loop that did not reach a batch boundary in time. */
  private String notStopped(long waitedMillis) {
    TrainContext ctx = live;
    String where = !training || ctx == null ? "before training started" : "at epoch " + ctx.epoch() + " step " + ctx.globalStep()
        + "; the step in progress did not end within " + waitedMillis / 1000 + " s";
    return "interrupted " + where + "; " + lastCheckpoint();
  }

  /** Where to continue from, or that nothing was saved (then a new run's folder is removed). */
  private String lastCheckpoint() {
    try {
      Optional<Path> latest = ModelCheckpoint.latest(checkpoints);
      if (latest.isPresent()) {
        return "continue from its last checkpoint (step " + ModelCheckpoint.stepOf(latest.get()) + ") with " + resumeCommand;
      }
      if (fresh) folder.discardIfWorthless();
      return "nothing was saved";
    } catch (IOException e) {
      return "cannot look into " + checkpoints + " (" + e.getMessage() + ")";
    }
  }

  /** Removes the hook; when the JVM is already shutting down (a signal came), lets the waiting hook end instead. */
  @Override
  public void close() {
    stopped.countDown();
    finished.countDown();
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // the hook is running or has run: it returns now that finished is counted down
    }
  }
}
