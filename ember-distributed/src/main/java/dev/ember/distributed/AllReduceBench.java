package dev.ember.distributed;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Allreduce bandwidth over loopback between local processes, reported as nccl-tests do: algorithm bandwidth
 * {@code bytes / time} and bus bandwidth {@code bytes * 2 (W-1) / W / time} (what each link carries in a ring,
 * comparable across world sizes).
 *
 * <pre>
 * java --add-modules jdk.incubator.vector -cp ... dev.ember.distributed.AllReduceBench [--repeats R] [--sizes B,B,...]
 *     [--json] [NPROC [MIN_BYTES [MAX_BYTES]]]
 * </pre>
 * starts {@code NPROC - 1} more JVMs on the same class path and -Xmx (default 2 processes, 1 KiB .. 64 MiB,
 * doubling, or the listed sizes), runs float32 MEAN allreduces of each size {@code R} times (default 1) and prints
 * one line per size and repeat, or with {@code --json} one JSON line per size with the bus bandwidth of each repeat
 * in GB/s (the {@code distributed} category of bench/compare.py; its peer is {@code bench/allreduce_gloo.py} of this
 * module).
 */
public final class AllReduceBench {
  private AllReduceBench() {}

  /** One buffer size's result: seconds per allreduce (on rank 0) and the two bandwidths in bytes per second. */
  public record Row(long bytes, int iterations, double seconds, double algBandwidth, double busBandwidth) {
    @Override
    public String toString() {
      return String.format(Locale.ROOT, "%12d B %6d iters %10.1f us %9.3f GB/s alg %9.3f GB/s bus", bytes, iterations,
          seconds * 1e6, algBandwidth / 1e9, busBandwidth / 1e9);
    }
  }

  /**
   * Times float32 MEAN allreduces of each size (bytes, a multiple of 4) on {@code group}; every rank must call it
   * with the same sizes. The iteration count depends only on the size (about 256 MiB moved per size, 5 to 1000
   * iterations), after 2 warm-up calls.
   */
  public static List<Row> measure(ProcessGroup group, long[] sizes) {
    List<Row> rows = new ArrayList<>();
    int w = group.worldSize();
    for (long bytes : sizes) {
      if (bytes < 4 || bytes % 4 != 0 || bytes / 4 > Integer.MAX_VALUE) {
        throw new IllegalArgumentException("AllReduceBench: sizes must be positive multiples of 4 bytes, got " + bytes);
      }
      float[] buf = new float[(int) (bytes / 4)];
      for (int i = 0; i < buf.length; i++) buf[i] = (i % 7) * 0.25f;
      int iterations = Math.clamp((256L << 20) / bytes, 5, 1000);
      for (int i = 0; i < 2; i++) group.allReduce(buf, AllReduceOp.MEAN);
      group.barrier();
      long t0 = System.nanoTime();
      for (int i = 0; i < iterations; i++) group.allReduce(buf, AllReduceOp.MEAN);
      double seconds = (System.nanoTime() - t0) / 1e9 / iterations;
      group.barrier();
      rows.add(new Row(bytes, iterations, seconds, bytes / seconds, bytes * 2.0 * (w - 1) / w / seconds));
    }
    return rows;
  }

  /** The sizes from {@code min} to {@code max} bytes, doubling. */
  static long[] sizes(long min, long max) {
    List<Long> out = new ArrayList<>();
    for (long b = min; b <= max; b *= 2) out.add(b);
    return out.stream().mapToLong(Long::longValue).toArray();
  }

  /** "1 KiB", "64 MiB": a size as the result rows name it. */
  static String label(long bytes) {
    String[] units = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    long v = bytes;
    while (u < units.length - 1 && v >= 1024 && v % 1024 == 0) {
      v /= 1024;
      u++;
    }
    return v + " " + units[u];
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("--worker")) {
      int rank = Integer.parseInt(args[1]);
      int world = Integer.parseInt(args[2]);
      int port = Integer.parseInt(args[3]);
      int repeats = Integer.parseInt(args[4]);
      long[] sizes = java.util.Arrays.stream(args[5].split(",")).mapToLong(Long::parseLong).toArray();
      try (ProcessGroup g = ProcessGroup.connect(rank, world, new InetSocketAddress("127.0.0.1", port), Duration.ofMinutes(5))) {
        for (int r = 0; r < repeats; r++) measure(g, sizes);
      }
      return;
    }
    boolean json = false;
    int repeats = 1;
    long[] sizes = null;
    List<String> positional = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--json" -> json = true;
        case "--repeats" -> repeats = Integer.parseInt(args[++i]);
        case "--sizes" -> sizes = java.util.Arrays.stream(args[++i].split(",")).mapToLong(Long::parseLong).toArray();
        default -> positional.add(args[i]);
      }
    }
    int nproc = positional.size() > 0 ? Integer.parseInt(positional.get(0)) : 2;
    long min = positional.size() > 1 ? Long.parseLong(positional.get(1)) : 1024;
    long max = positional.size() > 2 ? Long.parseLong(positional.get(2)) : 64L << 20;
    if (sizes == null) sizes = sizes(min, max);
    StringBuilder csv = new StringBuilder();
    for (long s : sizes) csv.append(csv.isEmpty() ? "" : ",").append(s);
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    List<Process> workers = new ArrayList<>();
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    try {
      for (int r = 1; r < nproc; r++) {
        workers.add(new ProcessBuilder(java, "--add-modules", "jdk.incubator.vector",
            "-Xmx" + Runtime.getRuntime().maxMemory() / (1 << 20) + "m", "-cp", System.getProperty("java.class.path"),
            AllReduceBench.class.getName(), "--worker", "" + r, "" + nproc, "" + port, "" + repeats, csv.toString())
            .inheritIO().start());
      }
      List<List<Row>> runs = new ArrayList<>();
      try (ProcessGroup g = ProcessGroup.connect(0, nproc, new InetSocketAddress("127.0.0.1", port), Duration.ofMinutes(5))) {
        for (int r = 0; r < repeats; r++) runs.add(measure(g, sizes));
      }
      if (json) {
        for (int i = 0; i < sizes.length; i++) {
          StringBuilder v = new StringBuilder();
          for (List<Row> run : runs) {
            v.append(v.isEmpty() ? "" : ", ").append(String.format(Locale.ROOT, "%.6g", run.get(i).busBandwidth() / 1e9));
          }
          System.out.println(String.format(Locale.ROOT, "{\"workload\": \"allreduce\", \"case\": \"np=%d %s\","
              + " \"unit\": \"GB/s bus\", \"values\": [%s], \"lower_is_better\": false, \"iterations\": %d}",
              nproc, label(sizes[i]), v, runs.get(0).get(i).iterations()));
        }
      } else {
        System.out.println("allreduce float32 MEAN, " + nproc + " processes over loopback (" + Runtime.getRuntime()
            .availableProcessors() + " cores)");
        for (List<Row> run : runs) for (Row r : run) System.out.println(r);
      }
      for (Process p : workers) {
        if (!p.waitFor(60, TimeUnit.SECONDS)) throw new IOException("AllReduceBench: a worker did not exit");
      }
    } finally {
      for (Process p : workers) p.destroyForcibly();
    }
  }
}
