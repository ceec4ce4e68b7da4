package dev.ember.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The timing method of the PyTorch peer ({@code pytorch_bench.py measure()}), ported so that both
 * sides of a comparison are measured the same way: warm up for a fixed time (at least 2 calls),
 * calibrate the calls per repeat so one repeat lasts about {@code target} seconds, then time
 * {@code repeats} repeats and report the per-repeat throughput.
 *
 * <p>The machine has 2 cores and may be shared (builds, the other side's process): a repeat during
 * which other processes used more than {@code foreignMax} CPUs is discarded and re-run, as the peer
 * does. Foreign CPU = busy CPU time from /proc/stat minus this JVM's own CPU time (JIT and GC
 * threads are ours, so they count as own).
 */
final class Measure {
  record Options(double warmupS, double targetS, int repeats, double foreignMax, int maxAttempts, double maxWaitS) {}

  /** Per-repeat values (units/s) of the kept repeats plus diagnostics the JSON line carries. */
  record Result(double[] values, long callsPerRepeat, int discarded, boolean contaminated, double quietWaitS) {
    double median() {
      return BenchStats.median(values);
    }

    double min() {
      return Arrays.stream(values).min().orElse(Double.NaN);
    }

    double max() {
      return Arrays.stream(values).max().orElse(Double.NaN);
    }
  }

  private static final Path PROC_STAT = Path.of("/proc/stat");
  /** /proc/stat counts in USER_HZ, which Linux fixes at 100 whatever the kernel tick. */
  private static final double HZ = 100.0;
  private static final com.sun.management.OperatingSystemMXBean OS =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  private final Options o;

  Measure(Options o) {
    this.o = o;
  }

  /** Runs {@code fn} (one call) under the method above; {@code unitsPerCall} scales calls/s to the reported unit. */
  Result run(Runnable fn, double unitsPerCall) {
    return run(fn, unitsPerCall, o.warmupS(), o.targetS());
  }

  /**
   * As {@link #run(Runnable, double)} with this case's own warm-up and target seconds (a peer's schedule for one
   * case, {@link BenchCase.PeerSchedule}); the other options are the runner's.
   */
  Result run(Runnable fn, double unitsPerCall, double warmupS, double targetS) {
    double waited = waitQuiet(o.maxWaitS());
    warmUp(fn, warmupS);
    long k = 1;
    double dt;
    while (true) {
      long t = System.nanoTime();
      for (long i = 0; i < k; i++) fn.run();
      dt = seconds(t);
      if (dt >= targetS * 0.5) break;
      k = Math.max(k + 1, Math.min(k * 10, (long) (k * targetS / Math.max(dt, 1e-9))));
    }
    k = Math.max(1, Math.round(k * targetS / dt));

    List<Double> clean = new ArrayList<>();
    List<Double> dirty = new ArrayList<>();
    int attempts = 0;
    boolean lastDirty = false;
    while (clean.size() < o.repeats() && attempts < o.repeats() * o.maxAttempts()) {
      attempts++;
      if (lastDirty && waited < o.maxWaitS()) waited += waitQuiet(o.maxWaitS() - waited);
      Window w = Window.open();
      long t = System.nanoTime();
      for (long i = 0; i < k; i++) fn.run();
      double s = seconds(t);
      double foreign = w.close();
      double v = unitsPerCall * k / s;
      lastDirty = foreign > o.foreignMax();
      if (lastDirty) {
        dirty.add(v);
        if (waited >= o.maxWaitS() && dirty.size() >= o.repeats()) break;
      } else {
        clean.add(v);
      }
    }
    boolean contaminated = clean.size() < Math.max(1, (o.repeats() + 1) / 2);
    if (contaminated) clean.addAll(dirty);
    return new Result(clean.stream().mapToDouble(Double::doubleValue).toArray(), k, dirty.size(), contaminated, waited);
  }

  /** The warm-up rule: calls {@code fn} at least twice and for at least {@code seconds}; returns the calls made. */
  static int warmUp(Runnable fn, double seconds) {
    long t0 = System.nanoTime();
    int n = 0;
    while (n < 2 || seconds(t0) < seconds) {
      fn.run();
      n++;
    }
    return n;
  }

  private static double seconds(long t0) {
    return (System.nanoTime() - t0) / 1e9;
  }

  /** Waits until two consecutive 0.5 s windows show less than foreignMax foreign CPUs; returns seconds waited. */
  private double waitQuiet(double maxWaitS) {
    long t0 = System.nanoTime();
    int ok = 0;
    while (seconds(t0) < maxWaitS) {
      Window w = Window.open();
      try {
        Thread.sleep(500);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      if (w.close() < o.foreignMax()) {
        if (++ok >= 2) break;
      } else {
        ok = 0;
      }
    }
    return seconds(t0);
  }

  /** A window over which foreign CPU use (in CPUs) is accounted; 0 where /proc/stat is not readable. */
  private record Window(double busy0, double own0, long t0) {
    static Window open() {
      return new Window(busyCpuSeconds(), OS.getProcessCpuTime() / 1e9, System.nanoTime());
    }

    double close() {
      double busy1 = busyCpuSeconds();
      double own1 = OS.getProcessCpuTime() / 1e9;
      double wall = Math.max(seconds(t0), 1e-9);
      if (Double.isNaN(busy0) || Double.isNaN(busy1)) return 0;
      return Math.max(0, ((busy1 - busy0) - (own1 - own0)) / wall);
    }
  }

  /** user + nice + system + irq + softirq from the aggregate cpu line, as quiet.py counts it. */
  private static double busyCpuSeconds() {
    try {
      String line = Files.readAllLines(PROC_STAT).getFirst();
      String[] f = line.trim().split("\\s+");
      long busy = Long.parseLong(f[1]) + Long.parseLong(f[2]) + Long.parseLong(f[3])
          + Long.parseLong(f[6]) + Long.parseLong(f[7]);
      return busy / HZ;
    } catch (IOException | RuntimeException e) {
      return Double.NaN;
    }
  }
}
