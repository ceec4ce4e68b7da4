package dev.ember.train.callbacks;

import dev.ember.data.Batch;
import dev.ember.train.Callback;
import dev.ember.train.Phase;
import dev.ember.train.TrainContext;
import dev.ember.nn.io.AtomicFiles;
import dev.ember.train.report.Json;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Where the time of a training step goes: sums {@link TrainContext#stepNanos(Phase)} of every step
 * per phase, the bytes the training thread allocated per step
 * ({@code com.sun.management.ThreadMXBean#getCurrentThreadAllocatedBytes}) and the heap in use after
 * each step ({@link MemoryMXBean}). At train end it prints a table (phase, total s, mean ms/step,
 * % of step) and, if given a path, writes the same as JSON ({@code profile.json}, read by
 * {@link dev.ember.train.report.HtmlReport}). {@link #summary()} gives the numbers as data.
 *
 * <p>The step of a batch counts from the hook after its {@code onBatchEnd} (the Trainer fills the
 * callback time of a step only once every callback has returned). Allocation is measured between
 * consecutive {@code onBatchEnd}s (from {@code onEpochBegin} for an epoch's first step), so
 * validation does not count.
 */
public final class Profiling implements Callback {
  /** Time spent in one phase over all steps. */
  public record PhaseTime(Phase phase, double totalSeconds, double meanMillisPerStep, double percentOfStep) {}

  /** Min, mean and max of a per-step quantity in bytes (NaN when nothing was measured). */
  public record Bytes(double mean, long min, long max) {}

  /**
   * Everything measured. {@code allocatedPerStep} is null when the JVM cannot count allocation per
   * thread; {@code heapUsedAfterStep} also has the last value.
   */
  public record Summary(long steps, double stepSeconds, List<PhaseTime> phases, Bytes allocatedPerStep,
      Bytes heapUsedAfterStep, long lastHeapUsed) {
    /** The summary as plain maps and lists (the content of profile.json). */
    public Map<String, Object> toMap() {
      LinkedHashMap<String, Object> m = new LinkedHashMap<>();
      m.put("steps", steps);
      m.put("step_total_s", stepSeconds);
      List<Object> ph = new ArrayList<>();
      for (PhaseTime p : phases) {
        LinkedHashMap<String, Object> e = new LinkedHashMap<>();
        e.put("phase", p.phase().name().toLowerCase(Locale.ROOT));
        e.put("total_s", p.totalSeconds());
        e.put("mean_ms", p.meanMillisPerStep());
        e.put("percent", p.percentOfStep());
        ph.add(e);
      }
      m.put("phases", ph);
      if (allocatedPerStep != null) m.put("alloc_bytes_per_step", bytes(allocatedPerStep));
      m.put("heap_used_bytes", bytes(heapUsedAfterStep));
      m.put("heap_used_last_bytes", lastHeapUsed);
      return m;
    }

    private static Map<String, Object> bytes(Bytes b) {
      LinkedHashMap<String, Object> m = new LinkedHashMap<>();
      m.put("mean", b.mean());
      m.put("min", b.min());
      m.put("max", b.max());
      return m;
    }

    /** The table printed at train end. */
    public String table() {
      StringBuilder sb = new StringBuilder();
      sb.append(String.format(Locale.ROOT, "profile: %d %s, %.3f s in steps%n", steps, steps == 1 ? "step" : "steps", stepSeconds));
      sb.append(String.format(Locale.ROOT, "%-10s %10s %12s %10s%n", "phase", "total s", "ms/step", "% of step"));
      double total = 0;
      for (PhaseTime p : phases) {
        total += p.totalSeconds();
        sb.append(String.format(Locale.ROOT, "%-10s %10.3f %12.3f %9.1f%%%n", p.phase().name().toLowerCase(Locale.ROOT),
            p.totalSeconds(), p.meanMillisPerStep(), p.percentOfStep()));
      }
      sb.append(String.format(Locale.ROOT, "%-10s %10.3f %12.3f %9.1f%%%n", "total", total,
          steps == 0 ? 0.0 : total * 1e3 / steps, total > 0 ? 100.0 : 0.0));
      if (allocatedPerStep != null) {
        sb.append(String.format(Locale.ROOT, "allocated per step: mean %s, min %s, max %s%n", mib(allocatedPerStep.mean()),
            mib(allocatedPerStep.min()), mib(allocatedPerStep.max())));
      } else {
        sb.append("allocated per step: not measurable on this JVM\n");
      }
      sb.append(String.format(Locale.ROOT, "heap used after a step: mean %s, min %s, max %s%n",
          mib(heapUsedAfterStep.mean()), mib(heapUsedAfterStep.min()), mib(heapUsedAfterStep.max())));
      return sb.toString();
    }

    private static String mib(double bytes) {
      return Double.isNaN(bytes) ? "-" : String.format(Locale.ROOT, "%.2f MiB", bytes / (1024.0 * 1024.0));
    }
  }

  private static final int PHASES = Phase.values().length;

  private final PrintStream out;
  private final Path jsonPath;
  private final com.sun.management.ThreadMXBean threads;
  private final MemoryMXBean memory = ManagementFactory.getMemoryMXBean();

  private final long[] phaseNanos = new long[PHASES];
  private long steps;
  private boolean pending;
  private long allocMark = -1;
  private long allocSum;
  private long allocCount;
  private long allocMin = Long.MAX_VALUE;
  private long allocMax = Long.MIN_VALUE;
  private long heapSum;
  private long heapCount;
  private long heapMin = Long.MAX_VALUE;
  private long heapMax = Long.MIN_VALUE;
  private long heapLast;
  private TrainContext lastCtx;

  /** Prints the summary to {@code System.out} at train end. */
  public Profiling() {
    this(System.out, null);
  }

  /**
   * Prints the summary to {@code System.out} and writes it as JSON to {@code json} (when
   * {@code json} is an existing folder, to {@code profile.json} inside it).
   */
  public Profiling(Path json) {
    this(System.out, json);
  }

  /** Prints the summary to {@code out} (null: no printing) and writes JSON to {@code json} if it is not null. */
  public Profiling(PrintStream out, Path json) {
    this.out = out;
    this.jsonPath = json;
    java.lang.management.ThreadMXBean bean = ManagementFactory.getThreadMXBean();
    com.sun.management.ThreadMXBean sun = bean instanceof com.sun.management.ThreadMXBean s ? s : null;
    if (sun != null && sun.isThreadAllocatedMemorySupported()) {
      if (!sun.isThreadAllocatedMemoryEnabled()) sun.setThreadAllocatedMemoryEnabled(true);
      this.threads = sun;
    } else {
      this.threads = null;
    }
  }

  /** Where the JSON goes (a folder given to the constructor resolves to {@code profile.json} in it), or null. */
  public Path jsonFile() {
    if (jsonPath == null) return null;
    return Files.isDirectory(jsonPath) ? jsonPath.resolve("profile.json") : jsonPath;
  }

  @Override
  public void onTrainBegin(TrainContext ctx) {
    allocMark = allocated();
  }

  @Override
  public void onEpochBegin(TrainContext ctx) {
    collect(ctx);
    allocMark = allocated();
  }

  @Override
  public void onBatchBegin(TrainContext ctx, Batch batch) {
    collect(ctx);
  }

  @Override
  public void onBatchEnd(TrainContext ctx, Batch batch, double loss) {
    collect(ctx);
    pending = true;
    lastCtx = ctx;
    long now = allocated();
    if (now >= 0 && allocMark >= 0) {
      long a = now - allocMark;
      allocSum += a;
      allocCount++;
      allocMin = Math.min(allocMin, a);
      allocMax = Math.max(allocMax, a);
    }
    allocMark = now;
    long heap = memory.getHeapMemoryUsage().getUsed();
    heapSum += heap;
    heapCount++;
    heapMin = Math.min(heapMin, heap);
    heapMax = Math.max(heapMax, heap);
    heapLast = heap;
  }

  @Override
  public void onValidationBegin(TrainContext ctx) {
    collect(ctx);
  }

  @Override
  public void onEpochEnd(TrainContext ctx) {
    collect(ctx);
  }

  @Override
  public void onTrainEnd(TrainContext ctx) {
    collect(ctx);
    Summary s = summary();
    if (out != null) {
      out.print(s.table());
      out.flush();
    }
    Path file = jsonFile();
    if (file != null) {
      try {
        AtomicFiles.write(file, Json.write(s.toMap()) + "\n");
      } catch (IOException e) {
        throw new UncheckedIOException("Profiling: writing " + file + " failed", e);
      }
    }
  }

  /** Adds the phase times of the step that ended before this hook, once. */
  private void collect(TrainContext ctx) {
    if (!pending) return;
    pending = false;
    for (Phase p : Phase.values()) phaseNanos[p.ordinal()] += ctx.stepNanos(p);
    steps++;
  }

  private long allocated() {
    return threads == null ? -1 : threads.getCurrentThreadAllocatedBytes();
  }

  /** The numbers so far. */
  public Summary summary() {
    long total = 0;
    for (long n : phaseNanos) total += n;
    List<PhaseTime> phases = new ArrayList<>();
    for (Phase p : Phase.values()) {
      long n = phaseNanos[p.ordinal()];
      phases.add(new PhaseTime(p, n / 1e9, steps == 0 ? 0 : n / 1e6 / steps, total == 0 ? 0 : 100.0 * n / total));
    }
    Bytes alloc = threads == null ? null
        : allocCount == 0 ? new Bytes(Double.NaN, 0, 0) : new Bytes((double) allocSum / allocCount, allocMin, allocMax);
    Bytes heap = heapCount == 0 ? new Bytes(Double.NaN, 0, 0) : new Bytes((double) heapSum / heapCount, heapMin, heapMax);
    return new Summary(steps, total / 1e9, List.copyOf(phases), alloc, heap, heapLast);
  }

  @Override
  public Map<String, Object> stateDict() {
    // a checkpoint is taken after onBatchEnd, once the step's times are final: count that step now
    if (pending && lastCtx != null) collect(lastCtx);
    LinkedHashMap<String, Object> s = new LinkedHashMap<>();
    s.put("phase_nanos", phaseNanos.clone());
    s.put("steps", steps);
    s.put("alloc", new long[] {allocSum, allocCount, allocMin, allocMax});
    s.put("heap", new long[] {heapSum, heapCount, heapMin, heapMax, heapLast});
    return s;
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    if (!(state.get("phase_nanos") instanceof long[] ph) || ph.length != PHASES || !(state.get("steps") instanceof Number st)
        || !(state.get("alloc") instanceof long[] al) || al.length != 4 || !(state.get("heap") instanceof long[] hp)
        || hp.length != 5) {
      throw new IllegalArgumentException("Profiling.loadStateDict: expected phase_nanos (long[" + PHASES
          + "]), steps (number), alloc (long[4]) and heap (long[5]), got keys " + state.keySet());
    }
    System.arraycopy(ph, 0, phaseNanos, 0, PHASES);
    steps = st.longValue();
    allocSum = al[0];
    allocCount = al[1];
    allocMin = al[2];
    allocMax = al[3];
    heapSum = hp[0];
    heapCount = hp[1];
    heapMin = hp[2];
    heapMax = hp[3];
    heapLast = hp[4];
    pending = false;
  }
}
