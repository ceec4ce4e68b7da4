package dev.ember.train.callbacks;

import dev.ember.data.Batch;
import dev.ember.nn.io.AtomicFiles;
import dev.ember.nn.io.Json;
import dev.ember.tensor.Device;
import dev.ember.tensor.MemoryScope;
import dev.ember.train.Callback;
import dev.ember.train.Phase;
import dev.ember.train.TrainContext;
import dev.ember.train.summary.MemoryProfile;
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
 * Where the time and memory of a training step go. Per phase it sums
 * {@link TrainContext#stepNanos(Phase)} of every step. For memory it measures three things after
 * every step:
 * <ul>
 *   <li>the bytes the training thread newly allocated on the JVM heap during the step
 *       ({@code com.sun.management.ThreadMXBean#getCurrentThreadAllocatedBytes}): new arrays and
 *       objects; buffers that Ember's pool ({@link MemoryScope}) hands out again are not new, so
 *       they do not count, and a step that fills the pool (the first, or the first of a new batch
 *       shape) allocates far more than the steps after it, hence the step of the maximum is kept;
 *   <li>the bytes the training thread's buffer pool holds for reuse ({@link MemoryScope#pooledBytes()});
 *   <li>the heap in use ({@link MemoryMXBean}): live data of all threads plus garbage not yet collected.
 * </ul>
 * At train end it prints a table (phase, total s, mean ms/step, % of step) and the memory lines, and,
 * if given a path, writes the same as JSON ({@code profile.json}, read by
 * {@link dev.ember.train.report.HtmlReport}). {@link #summary()} gives the numbers as data.
 *
 * <p>The step of a batch counts from the hook after its {@code onBatchEnd} (the Trainer fills the
 * callback time of a step only once every callback has returned). Allocation is measured between
 * consecutive {@code onBatchEnd}s (from {@code onEpochBegin} for an epoch's first step), so
 * validation does not count.
 *
 * <p>It also notes when this process's first optimizer step ended (the first {@code onBatchEnd}), as
 * the JVM's uptime and as Unix time: {@link #firstStepUptimeSeconds()}, and {@code first_step} in the
 * JSON ({@code jvm_uptime_s}, {@code unix_time_s}), which {@code bench/first-minute.sh} reads to time
 * a whole run's first step from its launch.
 */
public final class Profiling implements Callback {
  /** Time spent in one phase over all steps. */
  public record PhaseTime(Phase phase, double totalSeconds, double meanMillisPerStep, double percentOfStep) {}

  /** Min, mean and max of a per-step quantity in bytes (NaN when nothing was measured). */
  public record Bytes(double mean, long min, long max) {}

  /**
   * Everything measured. {@code allocatedPerStep} (bytes newly allocated on the heap by the training
   * thread per step) is null when the JVM cannot count allocation per thread, and
   * {@code maxAllocationStep} is the optimizer step that allocated the most (-1 when unknown);
   * {@code pooledAfterStep} is what Ember's buffer pool held for reuse after a step;
   * {@code heapUsedAfterStep} also has the last value.
   */
  public record Summary(long steps, double stepSeconds, List<PhaseTime> phases, Bytes allocatedPerStep,
      long maxAllocationStep, Bytes pooledAfterStep, Bytes heapUsedAfterStep, long lastHeapUsed, String device,
      Map<String, Long> deviceMemory, MemoryProfile memory) {
    /** A summary without a memory profile. */
    public Summary(long steps, double stepSeconds, List<PhaseTime> phases, Bytes allocatedPerStep,
        long maxAllocationStep, Bytes pooledAfterStep, Bytes heapUsedAfterStep, long lastHeapUsed, String device,
        Map<String, Long> deviceMemory) {
      this(steps, stepSeconds, phases, allocatedPerStep, maxAllocationStep, pooledAfterStep, heapUsedAfterStep,
          lastHeapUsed, device, deviceMemory, null);
    }

    /** A summary of a run on the CPU (no device memory). */
    public Summary(long steps, double stepSeconds, List<PhaseTime> phases, Bytes allocatedPerStep,
        long maxAllocationStep, Bytes pooledAfterStep, Bytes heapUsedAfterStep, long lastHeapUsed) {
      this(steps, stepSeconds, phases, allocatedPerStep, maxAllocationStep, pooledAfterStep, heapUsedAfterStep,
          lastHeapUsed, "cpu", Map.of(), null);
    }

    /**
     * The device memory line: peak and current bytes allocated to tensors and reserved by the allocator, or null
     * when the run kept no device statistics (the CPU).
     */
    public String deviceMemoryLine() {
      Long peak = deviceMemory.get("allocated_bytes.all.peak");
      if (peak == null) return null;
      return String.format(Locale.ROOT, "device memory on %s: peak %s allocated to tensors, %s reserved by the caching"
          + " allocator (peak); %s allocated at the end", device, size(peak),
          size(deviceMemory.getOrDefault("reserved_bytes.all.peak", 0L)),
          size(deviceMemory.getOrDefault("allocated_bytes.all.current", 0L)));
    }

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
      if (allocatedPerStep != null) {
        m.put("alloc_bytes_per_step", bytes(allocatedPerStep));
        m.put("alloc_max_step", maxAllocationStep);
      }
      m.put("pool_bytes_after_step", bytes(pooledAfterStep));
      m.put("heap_used_bytes", bytes(heapUsedAfterStep));
      m.put("heap_used_last_bytes", lastHeapUsed);
      m.put("device", device);
      if (!deviceMemory.isEmpty()) {
        LinkedHashMap<String, Object> dm = new LinkedHashMap<>();
        for (String k : new String[] {"allocated_bytes.all.current", "allocated_bytes.all.peak",
            "reserved_bytes.all.current", "reserved_bytes.all.peak", "num_alloc_retries", "num_ooms"}) {
          if (deviceMemory.containsKey(k)) dm.put(k, deviceMemory.get(k));
        }
        m.put("device_memory", dm);
      }
      if (memory != null) m.put("memory", memory.toMap());
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
        sb.append(String.format(Locale.ROOT,
            "memory per step: %s newly allocated on the JVM heap by the training thread (mean; min %s, max %s%s);"
                + " buffers reused from Ember's pool are not counted%n", size(allocatedPerStep.mean()), size(allocatedPerStep.min()),
            size(allocatedPerStep.max()), maxAllocationStep >= 0 ? " at step " + maxAllocationStep : ""));
      } else {
        sb.append("memory per step: this JVM cannot count the training thread's heap allocation\n");
      }
      sb.append(String.format(Locale.ROOT, "Ember's buffer pool after a step: %s held for reuse (mean; max %s)%n",
          size(pooledAfterStep.mean()), size(pooledAfterStep.max())));
      sb.append(String.format(Locale.ROOT,
          "JVM heap in use after a step: mean %s, min %s, max %s (live data of all threads and garbage not yet collected)%n",
          size(heapUsedAfterStep.mean()), size(heapUsedAfterStep.min()), size(heapUsedAfterStep.max())));
      String dm = deviceMemoryLine();
      if (dm != null) sb.append(dm).append(String.format("%n"));
      if (memory != null) sb.append(memory.totals());
      return sb.toString();
    }

    /** Bytes in the largest binary unit that keeps the number at or above 1 ({@code 812 B}, {@code 7.41 GiB}). */
    public static String size(double bytes) {
      if (Double.isNaN(bytes)) return "-";
      String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
      int u = 0;
      double v = bytes;
      while (Math.abs(v) >= 1024 && u < units.length - 1) {
        v /= 1024;
        u++;
      }
      return u == 0 ? String.format(Locale.ROOT, "%.0f B", v) : String.format(Locale.ROOT, "%.2f %s", v, units[u]);
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
  private long allocMaxStep = -1;
  private long poolSum;
  private long poolMin = Long.MAX_VALUE;
  private long poolMax;
  private long heapSum;
  private long heapCount;
  private long heapMin = Long.MAX_VALUE;
  private long heapMax = Long.MIN_VALUE;
  private long heapLast;
  private TrainContext lastCtx;
  /** Records the first training batch's activations per layer; null before and after. */
  private MemoryProfile.Recorder recorder;
  private MemoryProfile memoryProfile;
  private MemoryProfile.StepPeak stepPeak;
  private long peakStepBytes = -1;
  /** When this process's first optimizer step ended: JVM uptime and Unix time in milliseconds (-1 before). */
  private long firstStepUptimeMillis = -1;
  private long firstStepUnixMillis = -1;

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
    if (out != null && ctx.memoryPlan() != null) {
      out.println(ctx.memoryPlan().describe());
      out.flush();
    }
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
    if (memoryProfile == null && recorder == null) recorder = MemoryProfile.record(ctx.model());
    stepPeak = MemoryProfile.StepPeak.start(ctx.model(), ctx.optimizer());
  }


  @Override
  public void onBatchEnd(TrainContext ctx, Batch batch, double loss) {
    if (firstStepUptimeMillis < 0) {
      firstStepUnixMillis = System.currentTimeMillis();
      firstStepUptimeMillis = ManagementFactory.getRuntimeMXBean().getUptime();
    }
    collect(ctx);
    if (stepPeak != null) {
      peakStepBytes = Math.max(peakStepBytes, stepPeak.end());
      stepPeak = null;
    }
    if (recorder != null) { // after the first optimizer step, so that its state exists
      recorder.close();
      if (recorder.recordedCalls() > 0) memoryProfile = recorder.profile(ctx.optimizer(), peakStepBytes);
      recorder = null; // a batch without a model call (a driver of callbacks) tries again on the next
    }
    pending = true;
    lastCtx = ctx;
    long now = allocated();
    if (now >= 0 && allocMark >= 0) {
      long a = now - allocMark;
      allocSum += a;
      allocCount++;
      allocMin = Math.min(allocMin, a);
      if (a > allocMax) {
        allocMax = a;
        allocMaxStep = ctx.globalStep();
      }
    }
    allocMark = now;
    long pooled = MemoryScope.pooledBytes(); // this thread's pool: the training thread runs the callbacks
    poolSum += pooled;
    poolMin = Math.min(poolMin, pooled);
    poolMax = Math.max(poolMax, pooled);
    long heap = memory.getHeapMemoryUsage().getUsed();
    heapSum += heap;
    heapCount++;
    heapMin = Math.min(heapMin, heap);
    heapMax = Math.max(heapMax, heap);
    heapLast = heap;
  }

  /**
   * Also: a validation inside the first batch's step (every N steps) is no part of the step, so the memory
   * recorder's hooks go before its forward calls (the rows stay). Closed here rather than after backward, so that
   * this callback leaves a compiled trainer's optimizer update fused ({@link dev.ember.train.Trainer#unfusedBecause()}).
   */
  @Override
  public void onValidationBegin(TrainContext ctx) {
    if (recorder != null) recorder.close();
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
      Map<String, Object> map = new LinkedHashMap<>(s.toMap());
      if (firstStepUptimeMillis >= 0) {
        LinkedHashMap<String, Object> first = new LinkedHashMap<>();
        first.put("jvm_uptime_s", firstStepUptimeMillis / 1e3);
        first.put("unix_time_s", firstStepUnixMillis / 1e3);
        map.put("first_step", first);
      }
      try {
        AtomicFiles.write(file, Json.write(map, Json.NonFinite.NULL) + "\n");
      } catch (IOException e) {
        throw new UncheckedIOException("Profiling: writing " + file + " failed", e);
      }
    }
  }

  /**
   * Seconds from the JVM's start to the end of the first optimizer step this callback saw in this
   * process (a resumed run's first step after its restart), or NaN before one.
   */
  public double firstStepUptimeSeconds() {
    return firstStepUptimeMillis < 0 ? Double.NaN : firstStepUptimeMillis / 1e3;
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
    // the pool is sampled at the same moments as the heap, so heapCount counts its samples too
    Bytes pool = heapCount == 0 ? new Bytes(Double.NaN, 0, 0) : new Bytes((double) poolSum / heapCount, poolMin, poolMax);
    Device dev = lastCtx == null ? Device.CPU : lastCtx.model().device();
    MemoryProfile mem = memoryProfile == null ? null
        : memoryProfile.withPeakStepBytes(peakStepBytes, MemoryProfile.optimizerStateBytes(lastCtx.model(), lastCtx.optimizer()))
            .withPlan(lastCtx.memoryPlan());
    return new Summary(steps, total / 1e9, List.copyOf(phases), alloc, alloc == null ? -1 : allocMaxStep, pool, heap,
        heapLast, dev.toString(), dev.isCpu() ? Map.of() : Map.copyOf(dev.memoryStats()), mem);
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
    s.put("alloc_max_step", allocMaxStep);
    s.put("pool", new long[] {poolSum, poolMin, poolMax});
    s.put("peak_step_bytes", peakStepBytes);
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
    // absent from checkpoints written before these were measured: start them from here
    allocMaxStep = state.get("alloc_max_step") instanceof Number n ? n.longValue() : -1;
    if (state.get("pool") instanceof long[] pl && pl.length == 3) {
      poolSum = pl[0];
      poolMin = pl[1];
      poolMax = pl[2];
    }
    if (state.get("peak_step_bytes") instanceof Number pk) peakStepBytes = pk.longValue();
    pending = false;
  }
}
