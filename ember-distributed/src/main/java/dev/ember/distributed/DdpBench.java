package dev.ember.distributed;

import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.optim.SGD;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What data parallelism costs on one machine: the training step of the bench's {@code seed_medium} MLP
 * (1024-h-h-h-10 ReLU, h = 2048 by default, SGD lr 0.01 momentum 0.9, 8 pre-made random batches cycled, as
 * {@code dev.ember.bench.TrainingCases}) at one global batch, either in one process ({@code single}: the threads
 * the JVM was given, {@code -Dember.threads}) or as {@link DistributedDataParallel} over {@code N} processes on
 * loopback ({@code ddp}: each rank a 1/N shard of every global batch, workers started with this JVM's class path
 * and {@code -Dember.threads}).
 *
 * <pre>
 * java -Dember.threads=2 ... dev.ember.distributed.DdpBench single [OPTIONS]
 * java -Dember.threads=1 ... dev.ember.distributed.DdpBench ddp --procs 2 [OPTIONS]
 * OPTIONS: --hidden H (2048) --batch B (128, global) --warmup-steps W (20) --steps S (10, per repeat) --repeats R (3)
 *          --json (one JSON line per result on stdout, as bench/compare.py reads them)
 * </pre>
 *
 * <p>Per repeat it reports samples per second (global batch x steps / seconds on rank 0, between barriers) and, for
 * {@code ddp}, the {@link DistributedDataParallel#commStats() allreduce time} per step, the time the end of backward
 * waited for it per step, and the fraction of the allreduce time hidden under backward.
 */
public final class DdpBench {
  private DdpBench() {}

  /** One timed repeat: samples/s and, for DDP, the per-step allreduce and wait milliseconds. */
  public record Repeat(double samplesPerSecond, double allreduceMs, double waitMs, double hidden) {}

  /** The seed MLP 1024-h-h-h-10 with ReLU, initialised from {@code g}, as the training bench's. */
  static Sequential seedModel(int h, Generator g) {
    return new Sequential(new Linear(1024, h, true, g), new ReLU(), new Linear(h, h, true, g), new ReLU(),
        new Linear(h, h, true, g), new ReLU(), new Linear(h, 10, true, g));
  }

  /**
   * Times training steps of the seed MLP at global batch {@code batch}: on {@code group}'s ranks under DDP (each
   * its shard), or alone when {@code group} is null. Every rank must call it with the same arguments.
   */
  public static List<Repeat> measure(ProcessGroup group, int hidden, int batch, int warmupSteps, int steps, int repeats) {
    int world = group == null ? 1 : group.worldSize();
    if (batch % world != 0) {
      throw new IllegalArgumentException("DdpBench: global batch " + batch + " is not a multiple of " + world + " ranks");
    }
    int shard = batch / world;
    int rank = group == null ? 0 : group.rank();
    Generator g = new Generator(0);
    Sequential model = seedModel(hidden, g);
    Tensor[][] data = new Tensor[8][];
    for (int i = 0; i < data.length; i++) {
      Tensor x = Tensor.randn(g, batch, 1024);
      Tensor y = Tensor.randint(g, 0, 10, batch);
      data[i] = new Tensor[] {x.narrow(0, rank * shard, shard).contiguous(), y.narrow(0, rank * shard, shard).contiguous()};
    }
    DistributedDataParallel ddp = group == null ? null : new DistributedDataParallel(model, group);
    Module net = ddp == null ? model : ddp;
    SGD opt = new SGD(net.parameters(), Map.of("lr", 0.01, "momentum", 0.9));
    int[] at = {0};
    Runnable step = () -> {
      Tensor[] d = data[at[0]++ % data.length];
      try (MemoryScope scope = MemoryScope.open()) { // the step's tensors back to the pool, as the Trainer does
        opt.zeroGrad();
        F.crossEntropy(net.forward(d[0]), d[1]).backward();
        opt.step();
      }
    };
    for (int i = 0; i < warmupSteps; i++) step.run();
    List<Repeat> out = new ArrayList<>();
    for (int r = 0; r < repeats; r++) {
      if (group != null) group.barrier();
      if (ddp != null) ddp.resetCommStats();
      long t0 = System.nanoTime();
      for (int i = 0; i < steps; i++) step.run();
      if (group != null) group.barrier();
      double seconds = (System.nanoTime() - t0) / 1e9;
      double rate = (double) batch * steps / seconds;
      if (ddp == null) {
        out.add(new Repeat(rate, 0, 0, 0));
      } else {
        DistributedDataParallel.CommStats s = ddp.commStats();
        out.add(new Repeat(rate, s.allreduceNanos() / 1e6 / steps, s.waitNanos() / 1e6 / steps, s.hiddenFraction()));
      }
    }
    return out;
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 0 || !(args[0].equals("single") || args[0].equals("ddp") || args[0].equals("--worker"))) {
      System.err.println("usage: DdpBench single|ddp [--procs N] [--hidden H] [--batch B] [--warmup-steps W]"
          + " [--steps S] [--repeats R] [--json]");
      System.exit(2);
    }
    String mode = args[0];
    int procs = 2;
    int hidden = 2048;
    int batch = 128;
    int warmup = 20;
    int steps = 10;
    int repeats = 3;
    boolean json = false;
    int rank = 0;
    int port = 0;
    int i = 1;
    if (mode.equals("--worker")) {
      rank = Integer.parseInt(args[1]);
      port = Integer.parseInt(args[2]);
      i = 3;
    }
    for (; i < args.length; i++) {
      switch (args[i]) {
        case "--procs" -> procs = Integer.parseInt(args[++i]);
        case "--hidden" -> hidden = Integer.parseInt(args[++i]);
        case "--batch" -> batch = Integer.parseInt(args[++i]);
        case "--warmup-steps" -> warmup = Integer.parseInt(args[++i]);
        case "--steps" -> steps = Integer.parseInt(args[++i]);
        case "--repeats" -> repeats = Integer.parseInt(args[++i]);
        case "--json" -> json = true;
        default -> throw new IllegalArgumentException("DdpBench: unknown option " + args[i]);
      }
    }
    if (mode.equals("--worker")) {
      try (ProcessGroup g = ProcessGroup.connect(rank, procs, new InetSocketAddress("127.0.0.1", port),
          Duration.ofMinutes(5))) {
        measure(g, hidden, batch, warmup, steps, repeats);
      }
      return;
    }
    String threads = System.getProperty("ember.threads", "" + Runtime.getRuntime().availableProcessors());
    String workload = "ddp_seed_" + (hidden == 2048 ? "medium" : "h" + hidden);
    List<Repeat> rows;
    String layout;
    if (mode.equals("single")) {
      layout = "1 proc x " + threads + " threads";
      rows = measure(null, hidden, batch, warmup, steps, repeats);
    } else {
      layout = procs + " proc x " + threads + " thread" + (threads.equals("1") ? "" : "s");
      int h = hidden, b = batch, w = warmup, s = steps, r = repeats;
      rows = launch(procs, args, g -> measure(g, h, b, w, s, r));
    }
    String base = "train b=" + batch + " " + layout;
    if (json) {
      System.out.println(jsonLine(workload, base, "samples/s", false, rows.stream().mapToDouble(Repeat::samplesPerSecond)));
      if (!mode.equals("single")) {
        System.out.println(jsonLine(workload, base + " allreduce", "ms/step", true, rows.stream().mapToDouble(Repeat::allreduceMs)));
        System.out.println(jsonLine(workload, base + " allreduce wait", "ms/step", true, rows.stream().mapToDouble(Repeat::waitMs)));
        System.out.println(jsonLine(workload, base + " allreduce hidden", "%", false,
            rows.stream().mapToDouble(r -> 100 * r.hidden())));
      }
    } else {
      System.out.println(workload + " " + base);
      for (Repeat r : rows) {
        System.out.println(String.format(Locale.ROOT, "%10.1f samples/s  allreduce %8.2f ms/step  waited %8.2f ms/step"
            + "  hidden %5.1f%%", r.samplesPerSecond(), r.allreduceMs(), r.waitMs(), 100 * r.hidden()));
      }
    }
  }

  interface RankTask {
    List<Repeat> run(ProcessGroup g);
  }

  /** Starts {@code procs - 1} worker JVMs (this one's class path, -Dember.threads and -Xmx) and runs rank 0 here. */
  private static List<Repeat> launch(int procs, String[] args, RankTask task) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<Process> workers = new ArrayList<>();
    try {
      for (int r = 1; r < procs; r++) {
        List<String> cmd = new ArrayList<>(List.of(java, "--add-modules", "jdk.incubator.vector",
            "-Dember.threads=" + System.getProperty("ember.threads", "1"),
            "-Xmx" + Runtime.getRuntime().maxMemory() / (1 << 20) + "m", "-cp", System.getProperty("java.class.path"),
            DdpBench.class.getName(), "--worker", "" + r, "" + port));
        for (int i = 1; i < args.length; i++) if (!args[i].equals("--json")) cmd.add(args[i]);
        workers.add(new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .redirectError(ProcessBuilder.Redirect.INHERIT).start());
      }
      List<Repeat> rows;
      try (ProcessGroup g = ProcessGroup.connect(0, procs, new InetSocketAddress("127.0.0.1", port),
          Duration.ofMinutes(5))) {
        rows = task.run(g);
      }
      for (Process p : workers) {
        if (!p.waitFor(60, TimeUnit.SECONDS)) throw new IOException("DdpBench: a worker did not exit");
      }
      return rows;
    } finally {
      for (Process p : workers) p.destroyForcibly();
    }
  }

  /** A result line as bench/compare.py pools them: one value per repeat. */
  static String jsonLine(String workload, String name, String unit, boolean lowerIsBetter,
      java.util.stream.DoubleStream values) {
    StringBuilder v = new StringBuilder();
    for (double d : values.toArray()) v.append(v.isEmpty() ? "" : ", ").append(String.format(Locale.ROOT, "%.6g", d));
    return String.format(Locale.ROOT, "{\"workload\": \"%s\", \"case\": \"%s\", \"unit\": \"%s\", \"values\": [%s],"
        + " \"lower_is_better\": %b}", workload, name, unit, v, lowerIsBetter);
  }
}
