package dev.ember.bench;

import com.sun.management.GarbageCollectionNotificationInfo;
import dev.ember.nn.Module;
import dev.ember.tensor.Device;
import dev.ember.train.summary.MemoryPlan;
import dev.ember.train.summary.MemoryProfile;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

/**
 * Ember's side of the {@code memory} category: runs one training workload of {@link TrainingCases}
 * in this JVM, which {@code bench/compare.py} starts fresh for every workload, and reports its
 * memory after {@code --warmup-steps} plus {@code --steps} training steps, as JSON lines in
 * {@link Compare}'s format (unit MB, lower is better):
 *
 * <ul>
 *   <li>{@code peak RSS, CASE}: VmHWM of /proc/self/status, the most resident memory the process
 *       ever had (heap pages touched, JIT code, metaspace, thread stacks);
 *   <li>{@code start RSS}: VmRSS before the model is built (the bare runtime);
 *   <li>{@code peak heap, CASE}: the most Java heap in use at once: the larger of the heap in use
 *       just before each garbage collection and the heap in use after the last step;
 *   <li>{@code live heap, CASE}: heap in use after a full collection at the end (parameters,
 *       gradients, optimizer state, the data batches).
 * </ul>
 *
 * <p>One case per workload, the one with the most state: batch 128 and Adam for the MLPs, and the
 * only case of the others (see {@link #CASES}). The PyTorch side is {@code bench/peers/pytorch_memory.py}.
 */
public final class MemoryProbe {
  /** The training case measured per workload (names as in {@link TrainingCases}). */
  static final Map<String, String> CASES = caseMap();

  static final String USAGE = """
      usage: MemoryProbe WORKLOAD [--warmup-steps N] [--steps N] [--threads N] [--checkpoint | --memory-budget SIZE]
        WORKLOAD           one of %s
        --warmup-steps N   untimed steps first (default 5)
        --steps N          measured steps after warm-up (default 20)
        --threads N        Ember worker threads (default: -Dember.threads / EMBER_NUM_THREADS / #cpus)
        --checkpoint       transformer only: checkpoint every encoder layer (Module.checkpoint)
        --alternate R      transformer only, after the rest: R rounds of --steps steps each without and with every
                           layer checkpointed, in alternating order (the host's swings fall on both), and their
                           median seconds per step (one more JSON line, metric s_per_step)
        --memory-budget S  transformer only: plan checkpointing from the second warm-up step (MemoryPlan) so that a
                           step's peak live bytes stay under S (300m, 2g; needs --warmup-steps >= 3)
      stdout: JSON lines (MB, lower is better); run it in a fresh JVM without -Xms / AlwaysPreTouch. The transformer
      also reports its step's peak live bytes (peak step, dev.ember.tensor.ScopeMemory) and the activations its
      graph keeps for backward (activations, MemoryProfile).""";

  private MemoryProbe() {}

  private static Map<String, String> caseMap() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("mlp_mnist", "train b=128");
    m.put("seed_small", "train b=128 adam");
    m.put("seed_medium", "train b=128 adam");
    m.put("seed_large", "train b=128 adam");
    m.put("lenet", "train b=64 adam");
    m.put("convnet", "train b=64 sgd-mom");
    m.put("transformer", "train b=16 T=128 adamw");
    return java.util.Collections.unmodifiableMap(m);
  }

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  /** Measures one workload; returns 0, or 2 on bad arguments (message on {@code err}). */
  static int run(String[] args, PrintStream out, PrintStream err) {
    String workload = null;
    int warmup = 5;
    int steps = 20;
    int threads = 0;
    boolean checkpoint = false;
    int alternate = 0;
    long budget = 0;
    String budgetText = null;
    try {
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "-h", "--help" -> {
            err.println(usage());
            return 0;
          }
          case "--warmup-steps" -> warmup = count(args, ++i, "--warmup-steps", 0);
          case "--steps" -> steps = count(args, ++i, "--steps", 1);
          case "--threads" -> threads = count(args, ++i, "--threads", 1);
          case "--checkpoint" -> checkpoint = true;
          case "--alternate" -> alternate = count(args, ++i, "--alternate", 1);
          case "--memory-budget" -> {
            if (++i >= args.length) throw new IllegalArgumentException("--memory-budget needs a value");
            budgetText = args[i];
            budget = MemoryPlan.parseSize("--memory-budget", args[i]);
          }
          default -> {
            if (args[i].startsWith("-")) throw new IllegalArgumentException("unknown option " + args[i]);
            if (workload != null) throw new IllegalArgumentException("more than one workload: " + workload + ", " + args[i]);
            workload = args[i];
          }
        }
      }
      if (workload == null) throw new IllegalArgumentException("missing WORKLOAD");
      if (!CASES.containsKey(workload)) {
        throw new IllegalArgumentException("unknown workload '" + workload + "' (expected one of "
            + String.join(", ", CASES.keySet()) + ")");
      }
      if ((checkpoint || budget > 0 || alternate > 0) && !workload.equals("transformer")) {
        throw new IllegalArgumentException("--checkpoint, --alternate and --memory-budget are for the transformer"
            + " workload, got " + workload);
      }
      if (checkpoint && budget > 0) throw new IllegalArgumentException("--checkpoint and --memory-budget exclude each other");
      if (budget > 0 && warmup < 3) {
        throw new IllegalArgumentException("--memory-budget plans from the second warm-up step: needs --warmup-steps >= 3");
      }
    } catch (IllegalArgumentException e) {
      err.println("MemoryProbe: " + e.getMessage());
      err.println(usage());
      return 2;
    }
    if (threads > 0) Device.CPU.backend().setThreads(threads);
    String baseCase = CASES.get(workload);
    String caseName = baseCase + (checkpoint ? " ckpt" : budget > 0 ? " budget=" + budgetText : "");
    final String w = workload;
    HeapPeak heap = HeapPeak.start();
    double startRss = statusMb("VmRSS");
    long t0;
    long t1;
    long t2;
    Scoped scoped = null;
    if (workload.equals("transformer")) {
      scoped = new Scoped(checkpoint, budget);
      t0 = System.nanoTime();
      try {
        scoped.warmUp(warmup);
      } catch (dev.ember.train.summary.MemoryBudgetException e) {
        err.println("MemoryProbe: " + e.getMessage());
        return 1;
      }
      t1 = System.nanoTime();
      scoped.measure(steps);
      t2 = System.nanoTime();
    } else {
      BenchCase c = TrainingCases.cases().stream().filter(x -> x.workload().equals(w) && x.name().equals(baseCase))
          .findFirst().orElseThrow(() -> new IllegalStateException("TrainingCases has no case " + w + "/" + baseCase));
      t0 = System.nanoTime();
      for (int i = 0; i < warmup; i++) c.call().run();
      t1 = System.nanoTime();
      for (int i = 0; i < steps; i++) c.call().run();
      t2 = System.nanoTime();
    }
    double peakHeap = heap.peakMb();
    double peakRss = statusMb("VmHWM");
    double liveHeap = heap.liveAfterFullGcMb();
    heap.stop();

    String kernels = Device.CPU.backend().name();
    out.println("{\"workload\":\"_env\",\"side\":\"ember\",\"kernels\":" + Compare.JsonText.str(kernels)
        + ",\"threads\":" + Device.CPU.backend().threads()
        + ",\"java\":" + Compare.JsonText.str(Runtime.version().toString())
        + ",\"max_heap_mb\":" + Compare.JsonText.num(Runtime.getRuntime().maxMemory() / 1048576.0) + "}");
    String extra = String.format(Locale.ROOT, ",\"warmup_steps\":%d,\"steps\":%d,\"warmup_s\":%s,\"s_per_step\":%s", warmup,
        steps, Compare.JsonText.num((t1 - t0) / 1e9), Compare.JsonText.num((t2 - t1) / 1e9 / steps));
    out.println(record(workload, "peak RSS, " + caseName, "peak_rss_mb", peakRss, extra));
    out.println(record(workload, "start RSS", "start_rss_mb", startRss, extra));
    out.println(record(workload, "peak heap, " + caseName, "peak_heap_mb", peakHeap, extra));
    out.println(record(workload, "live heap, " + caseName, "live_heap_mb", liveHeap, extra));
    if (scoped != null) {
      String more = extra + scoped.planJson();
      out.println(record(workload, "peak step, " + caseName, "peak_step_mb", scoped.peakStep / 1048576.0, more));
      out.println(record(workload, "activations, " + caseName, "activation_mb", scoped.activations / 1048576.0, more));
      err.printf(Locale.ROOT, "%-12s %-28s peak step %8.1f MB  activations %8.1f MB%s%n", workload, caseName,
          scoped.peakStep / 1048576.0, scoped.activations / 1048576.0,
          scoped.plan == null ? "" : "  (" + scoped.plan.describe() + ")");
      if (alternate > 0) {
        double[][] t = scoped.alternate(alternate, steps);
        double plain = BenchStats.median(t[0]);
        double ckpt = BenchStats.median(t[1]);
        out.println("{\"workload\":\"transformer\",\"case\":" + Compare.JsonText.str(baseCase + " alternate")
            + ",\"side\":\"ember\",\"threads\":" + Device.CPU.backend().threads()
            + ",\"metric\":\"s_per_step\",\"unit\":\"s\",\"rounds\":" + alternate + ",\"steps\":" + steps
            + ",\"plain\":" + Compare.JsonText.num(plain) + ",\"ckpt\":" + Compare.JsonText.num(ckpt)
            + ",\"plain_values\":" + array(t[0]) + ",\"ckpt_values\":" + array(t[1]) + "}");
        err.printf(Locale.ROOT, "%-12s alternating %d rounds of %d steps: %.3f s/step plain, %.3f s/step with every layer"
            + " checkpointed (%+.0f%%)%n", workload, alternate, steps, plain, ckpt, 100 * (ckpt / plain - 1));
      }
    }
    out.flush();
    err.printf(Locale.ROOT, "%-12s %-28s peak RSS %8.1f MB  start RSS %7.1f MB  peak heap %8.1f MB  live heap %8.1f MB"
        + "  (%d+%d steps, %.3f s/step)%n", workload, caseName, peakRss, startRss, peakHeap, liveHeap, warmup, steps,
        (t2 - t1) / 1e9 / steps);
    return 0;
  }

  /**
   * The transformer step with its model in reach: per-layer checkpointing or a memory budget's plan, the peak live
   * bytes of each measured step ({@link MemoryProfile.StepPeak}) and the activations of the last warm-up step.
   */
  static final class Scoped {
    private final MemoryProfile.Recorder[] recorder = {null};
    private final TrainingCases.TrainStep step;
    private final long budget;
    long peakStep = -1;
    long activations = -1;
    MemoryPlan plan;

    Scoped(boolean checkpoint, long budget) {
      this.step = TrainingCases.transformerStep(() -> { // the model's forward is over: stop recording
        if (recorder[0] != null) recorder[0].close();
      });
      this.budget = budget;
      if (checkpoint) checkpoint(MemoryPlan.segmentNames(step.model()));
    }

    private void checkpoint(List<String> names) {
      Map<String, Module> modules = step.model().namedModules();
      for (String n : names) modules.get(n).checkpoint(true);
    }

    /** Runs one step recording it; returns its profile with its peak. */
    private MemoryProfile recorded() {
      MemoryProfile.Recorder r = MemoryProfile.record(step.model());
      recorder[0] = r;
      MemoryProfile.StepPeak peak = MemoryProfile.StepPeak.start(step.model(), step.optimizer());
      try {
        step.step().run();
      } finally {
        r.close();
        recorder[0] = null;
      }
      return r.profile(step.optimizer(), peak.end());
    }

    void warmUp(int n) {
      for (int i = 0; i < n; i++) {
        if (i == 1 && budget > 0) { // the probe step (the optimizer's state made by the first): measured, then planned
          plan = MemoryPlan.plan(budget, step.model(), recorded());
          checkpoint(plan.checkpointed());
        } else if (i == n - 1) {
          activations = recorded().activationBytes();
        } else {
          step.step().run();
        }
      }
    }

    void measure(int n) {
      for (int i = 0; i < n; i++) {
        MemoryProfile.StepPeak peak = MemoryProfile.StepPeak.start(step.model(), step.optimizer());
        step.step().run();
        peakStep = Math.max(peakStep, peak.end());
      }
      if (plan != null) plan = plan.withMeasuredPeak(peakStep);
    }

    /**
     * {@code rounds} rounds of {@code steps} steps without and with every layer checkpointed, the order alternating
     * per round; seconds per step of each round, without (row 0) and with (row 1). The flags are restored after.
     */
    double[][] alternate(int rounds, int steps) {
      Map<String, Module> modules = step.model().namedModules();
      List<Module> segs = new java.util.ArrayList<>();
      for (String n : MemoryPlan.segmentNames(step.model())) segs.add(modules.get(n));
      boolean[] was = new boolean[segs.size()];
      for (int k = 0; k < was.length; k++) was[k] = segs.get(k).isCheckpointed();
      double[][] t = new double[2][rounds];
      for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < 2; j++) {
          int mode = (r + j) % 2;
          for (Module m : segs) m.checkpoint(mode == 1);
          long t0 = System.nanoTime();
          for (int i = 0; i < steps; i++) step.step().run();
          t[mode][r] = (System.nanoTime() - t0) / 1e9 / steps;
        }
      }
      for (int k = 0; k < was.length; k++) segs.get(k).checkpoint(was[k]);
      return t;
    }

    /** The plan's fields for the JSON records ("" without a budget). */
    String planJson() {
      if (plan == null) return "";
      return ",\"budget_mb\":" + Compare.JsonText.num(plan.budgetBytes() / 1048576.0) + ",\"probe_peak_mb\":"
          + Compare.JsonText.num(plan.probePeakBytes() / 1048576.0) + ",\"predicted_peak_mb\":"
          + Compare.JsonText.num(plan.predictedPeakBytes() / 1048576.0) + ",\"checkpointed\":"
          + Compare.JsonText.str(String.join(" ", plan.checkpointed()));
    }
  }

  private static String array(double[] v) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < v.length; i++) sb.append(i == 0 ? "" : ",").append(Compare.JsonText.num(v[i]));
    return sb.append(']').toString();
  }

  private static String usage() {
    return USAGE.formatted(String.join(", ", CASES.keySet()));
  }

  static String record(String workload, String caseName, String metric, double mb, String extra) {
    String v = Compare.JsonText.num(mb);
    return "{\"workload\":" + Compare.JsonText.str(workload) + ",\"case\":" + Compare.JsonText.str(caseName)
        + ",\"side\":\"ember\",\"threads\":" + Device.CPU.backend().threads()
        + ",\"metric\":" + Compare.JsonText.str(metric)
        + ",\"unit\":\"MB\",\"lower_is_better\":true,\"median\":" + v + ",\"min\":" + v + ",\"max\":" + v
        + ",\"repeats\":1" + extra + ",\"values\":[" + v + "]}";
  }

  private static int count(String[] args, int i, String opt, int min) {
    if (i >= args.length) throw new IllegalArgumentException(opt + " needs a value");
    try {
      int n = Integer.parseInt(args[i].trim());
      if (n >= min) return n;
    } catch (NumberFormatException ignored) {
      // reported below with the option name
    }
    throw new IllegalArgumentException(opt + " expects an integer >= " + min + ", got '" + args[i] + "'");
  }

  /** A field of /proc/self/status ("VmHWM", "VmRSS") in MB. */
  static double statusMb(String field) {
    String status;
    try {
      status = Files.readString(Path.of("/proc/self/status"));
    } catch (IOException e) {
      throw new IllegalStateException("memory: cannot read /proc/self/status (Linux only): " + e.getMessage(), e);
    }
    return parseStatusKb(status, field) / 1024.0;
  }

  /** The kB value of {@code field} in a /proc/PID/status text, e.g. "VmHWM:\t  123456 kB". */
  static long parseStatusKb(String status, String field) {
    for (String line : status.split("\n")) {
      if (!line.startsWith(field + ":")) continue;
      String[] f = line.substring(field.length() + 1).trim().split("\\s+");
      if (f.length == 2 && f[1].equals("kB")) {
        try {
          return Long.parseLong(f[0]);
        } catch (NumberFormatException ignored) {
          // reported below
        }
      }
      throw new IllegalStateException("memory: unexpected /proc/self/status line '" + line + "' (want '" + field + ": N kB')");
    }
    throw new IllegalStateException("memory: /proc/self/status has no " + field + " line");
  }

  /**
   * Tracks the heap in use at its fullest: every collection reports (via a JMX notification) the
   * usage of each heap pool just before it ran, which is when the heap is fullest.
   */
  static final class HeapPeak {
    private final Set<String> heapPools = ManagementFactory.getMemoryPoolMXBeans().stream()
        .filter(p -> p.getType() == MemoryType.HEAP).map(MemoryPoolMXBean::getName).collect(Collectors.toSet());
    private final AtomicLong maxBeforeGc = new AtomicLong();
    private final AtomicLong seen = new AtomicLong();
    private final List<GarbageCollectorMXBean> gcs = ManagementFactory.getGarbageCollectorMXBeans();
    private final long startCount;
    private final NotificationListener listener = (n, h) -> {
      if (!n.getType().equals(GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION)) return;
      var info = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
      long used = 0;
      for (Map.Entry<String, MemoryUsage> e : info.getGcInfo().getMemoryUsageBeforeGc().entrySet()) {
        if (heapPools.contains(e.getKey())) used += e.getValue().getUsed();
      }
      maxBeforeGc.accumulateAndGet(used, Math::max);
      seen.incrementAndGet();
    };

    private HeapPeak() {
      startCount = collections();
    }

    static HeapPeak start() {
      HeapPeak p = new HeapPeak();
      for (GarbageCollectorMXBean gc : p.gcs) {
        if (gc instanceof NotificationEmitter e) e.addNotificationListener(p.listener, null, null);
      }
      return p;
    }

    private long collections() {
      return gcs.stream().mapToLong(g -> Math.max(0, g.getCollectionCount())).sum();
    }

    /** The most heap in use so far, in MB; waits (up to 2 s) for the notifications of past collections. */
    double peakMb() {
      long now = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
      long want = collections() - startCount;
      long deadline = System.nanoTime() + 2_000_000_000L;
      while (seen.get() < want && System.nanoTime() < deadline) {
        try {
          Thread.sleep(5);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
      return Math.max(now, maxBeforeGc.get()) / 1048576.0;
    }

    /** Heap in use after a full collection, in MB. */
    double liveAfterFullGcMb() {
      ManagementFactory.getMemoryMXBean().gc();
      return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() / 1048576.0;
    }

    void stop() {
      for (GarbageCollectorMXBean gc : gcs) {
        if (gc instanceof NotificationEmitter e) {
          try {
            e.removeNotificationListener(listener);
          } catch (javax.management.ListenerNotFoundException ignored) {
            // not registered on this bean
          }
        }
      }
    }
  }
}
