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
 * java --add-modules jdk.incubator.vector -cp ... dev.ember.distributed.AllReduceBench [NPROC [MIN_BYTES [MAX_BYTES]]]
 * </pre>
 * starts {@code NPROC - 1} more JVMs on the same class path (default 2 processes, 1 KiB .. 64 MiB, doubling),
 * runs float32 MEAN allreduces of each size and prints one line per size.
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

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("--worker")) {
      int rank = Integer.parseInt(args[1]);
      int world = Integer.parseInt(args[2]);
      int port = Integer.parseInt(args[3]);
      try (ProcessGroup g = ProcessGroup.connect(rank, world, new InetSocketAddress("127.0.0.1", port), Duration.ofMinutes(2))) {
        measure(g, sizes(Long.parseLong(args[4]), Long.parseLong(args[5])));
      }
      return;
    }
    int nproc = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    long min = args.length > 1 ? Long.parseLong(args[1]) : 1024;
    long max = args.length > 2 ? Long.parseLong(args[2]) : 64L << 20;
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    List<Process> workers = new ArrayList<>();
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    try {
      for (int r = 1; r < nproc; r++) {
        workers.add(new ProcessBuilder(java, "--add-modules", "jdk.incubator.vector", "-cp",
            System.getProperty("java.class.path"), AllReduceBench.class.getName(), "--worker", "" + r, "" + nproc,
            "" + port, "" + min, "" + max).inheritIO().start());
      }
      List<Row> rows;
      try (ProcessGroup g = ProcessGroup.connect(0, nproc, new InetSocketAddress("127.0.0.1", port), Duration.ofMinutes(2))) {
        rows = measure(g, sizes(min, max));
      }
      System.out.println("allreduce float32 MEAN, " + nproc + " processes over loopback (" + Runtime.getRuntime()
          .availableProcessors() + " cores)");
      for (Row r : rows) System.out.println(r);
      for (Process p : workers) {
        if (!p.waitFor(60, TimeUnit.SECONDS)) throw new IOException("AllReduceBench: a worker did not exit");
      }
    } finally {
      for (Process p : workers) p.destroyForcibly();
    }
  }
}
