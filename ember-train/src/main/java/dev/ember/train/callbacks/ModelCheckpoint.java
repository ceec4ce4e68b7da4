package dev.ember.train.callbacks;

import dev.ember.data.Batch;
import dev.ember.train.Callback;
import dev.ember.train.Checkpoint;
import dev.ember.train.CheckpointException;
import dev.ember.train.TrainContext;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Saves the whole training state every N epochs and/or every N optimizer steps as
 * {@code step-00001234.ckpt} in a folder, keeps the last {@code k} of them, and optionally keeps
 * {@code best.ckpt}, the state at the best value of a monitored metric. A file is replaced or
 * deleted only after the new one is committed (flushed and renamed into place), so a crash at any
 * moment leaves every checkpoint file in the folder complete. {@link #latestValid(Path, Consumer)}
 * finds the one to resume from (the newest that verifies, in case a disk or a copy damaged one).
 * A step skipped as non-finite ({@code Trainer.Builder.skipNonFiniteSteps}) is never saved.
 */
public final class ModelCheckpoint implements Callback {
  private static final Pattern NAME = Pattern.compile("step-(\\d{8,})\\.ckpt");

  private final Path dir;
  private final int everyEpochs;
  private final long everySteps;
  private final int keepLast;
  private final Monitor monitor;
  private final List<String> kept = new ArrayList<>();
  private double best;
  private long lastSavedStep = -1;

  /**
   * @param everyEpochs save at the end of every this many epochs (0: not by epoch)
   * @param everySteps save after every this many optimizer steps (0: not by step)
   * @param keepLast how many periodic checkpoints to keep (>= 1)
   */
  public ModelCheckpoint(Path dir, int everyEpochs, long everySteps, int keepLast) {
    this(dir, everyEpochs, everySteps, keepLast, null, "min");
  }

  /** As above, and keeps {@code best.ckpt} at the best value of {@code monitor} (checked at epoch ends). */
  public ModelCheckpoint(Path dir, int everyEpochs, long everySteps, int keepLast, String monitor, String mode) {
    if (dir == null) throw new IllegalArgumentException("ModelCheckpoint: dir is null");
    if (everyEpochs < 0 || everySteps < 0 || (everyEpochs == 0 && everySteps == 0 && monitor == null)) {
      throw new IllegalArgumentException("ModelCheckpoint: say when to save: every_epochs (" + everyEpochs + ") or every_steps ("
          + everySteps + ") must be > 0, or a monitor given");
    }
    if (keepLast < 1) throw new IllegalArgumentException("ModelCheckpoint: keep_last must be >= 1, got " + keepLast);
    this.dir = dir;
    this.everyEpochs = everyEpochs;
    this.everySteps = everySteps;
    this.keepLast = keepLast;
    this.monitor = monitor == null ? null : Monitor.of("ModelCheckpoint", monitor, mode, 0.0);
    this.best = this.monitor == null ? Double.NaN : this.monitor.worst();
  }

  /** The file name of the periodic checkpoint after {@code step} optimizer steps. */
  public static String fileName(long step) {
    return String.format(Locale.ROOT, "step-%08d.ckpt", step);
  }

  /** The committed periodic checkpoint with the most steps in {@code dir}, if any. */
  public static Optional<Path> latest(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) return Optional.empty();
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(ModelCheckpoint::isPeriodic)
          .max(Comparator.comparingLong(ModelCheckpoint::stepOf));
    }
  }

  /**
   * The newest periodic checkpoint in {@code dir} that {@linkplain Checkpoint#verify verifies}, to
   * resume from; empty when {@code dir} holds none. Newer ones that do not verify are passed over
   * and told to {@code warn} (may be null) in one line, e.g. {@code dir/step-00001400.ckpt is corrupt
   * (truncated at 1,204,224 of 2,409,001 bytes); resuming from dir/step-00001300.ckpt}. When there
   * are checkpoints but none verifies, throws a {@link CheckpointException} naming each with its problem.
   * Each candidate is read whole once.
   */
  public static Optional<Path> latestValid(Path dir, Consumer<String> warn) throws IOException {
    if (!Files.isDirectory(dir)) return Optional.empty();
    List<Path> newestFirst;
    try (Stream<Path> files = Files.list(dir)) {
      newestFirst = files.filter(ModelCheckpoint::isPeriodic)
          .sorted(Comparator.comparingLong(ModelCheckpoint::stepOf).reversed()).toList();
    }
    List<String> corrupt = new ArrayList<>();
    StringBuilder all = new StringBuilder();
    for (Path p : newestFirst) {
      Optional<String> problem = Checkpoint.verify(p);
      if (problem.isEmpty()) {
        if (!corrupt.isEmpty() && warn != null) warn.accept(String.join("; ", corrupt) + "; resuming from " + p);
        return Optional.of(p);
      }
      corrupt.add(p + " is corrupt (" + problem.get() + ")");
      all.append(all.isEmpty() ? "" : "; ").append(p.getFileName()).append(" (").append(problem.get()).append(')');
    }
    if (corrupt.isEmpty()) return Optional.empty();
    String what = newestFirst.size() == 1 ? "its only checkpoint does not verify: " : "none of its " + newestFirst.size()
        + " checkpoints verifies: ";
    throw new CheckpointException(dir, what + all);
  }

  /** Whether {@code p} is named as a periodic checkpoint ({@code step-00001234.ckpt}). */
  public static boolean isPeriodic(Path p) {
    return NAME.matcher(p.getFileName().toString()).matches();
  }

  /** The optimizer step in a periodic checkpoint's name ({@code step-00014070.ckpt}: 14070). */
  public static long stepOf(Path p) {
    Matcher m = NAME.matcher(p.getFileName().toString());
    if (!m.matches()) throw new IllegalArgumentException("ModelCheckpoint: not a checkpoint name: " + p);
    return Long.parseLong(m.group(1));
  }

  @Override
  public void onTrainBegin(TrainContext ctx) {
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("ModelCheckpoint: cannot create " + dir, e);
    }
  }

  @Override
  public void onBatchEnd(TrainContext ctx, Batch batch, double loss) {
    if (ctx.stepSkipped()) return;                       // a skipped non-finite step is never saved
    if (everySteps > 0 && ctx.globalStep() > 0 && ctx.globalStep() % everySteps == 0) savePeriodic(ctx);
  }

  @Override
  public void onEpochEnd(TrainContext ctx) {
    if (monitor != null) {
      double v = monitor.read(ctx.logs());
      if (monitor.improves(v, best)) {
        best = v;
        ctx.requestCheckpoint(dir.resolve("best.ckpt"), null);
      }
    }
    if (everyEpochs > 0 && ctx.epoch() % everyEpochs == 0) savePeriodic(ctx);
  }

  private void savePeriodic(TrainContext ctx) {
    long step = ctx.globalStep();
    if (step == lastSavedStep) return;
    lastSavedStep = step;
    String name = fileName(step);
    kept.remove(name);
    kept.add(name);
    List<String> drop = new ArrayList<>();
    while (kept.size() > keepLast) drop.add(kept.removeFirst());
    ctx.requestCheckpoint(dir.resolve(name), () -> {
      for (String old : drop) {
        try {
          Files.deleteIfExists(dir.resolve(old));
        } catch (IOException e) {
          throw new UncheckedIOException("ModelCheckpoint: cannot delete old checkpoint " + dir.resolve(old), e);
        }
      }
    });
  }

  /** Names of the periodic checkpoints kept, oldest first. */
  public List<String> kept() {
    return List.copyOf(kept);
  }

  /** The best monitored value so far (NaN without a monitor). */
  public double best() {
    return best;
  }

  @Override
  public Map<String, Object> stateDict() {
    LinkedHashMap<String, Object> s = new LinkedHashMap<>();
    s.put("kept", new ArrayList<Object>(kept));
    s.put("best", best);
    s.put("last_saved_step", lastSavedStep);
    return s;
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    kept.clear();
    for (Object o : (List<?>) state.get("kept")) kept.add((String) o);
    best = (Double) state.get("best");
    lastSavedStep = (Long) state.get("last_saved_step");
  }
}
