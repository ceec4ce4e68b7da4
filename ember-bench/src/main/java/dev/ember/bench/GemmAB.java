package dev.ember.bench;

import java.io.File;
import java.io.PrintStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * sgemm of two builds of ember-core, alternated inside one JVM on the same arrays: the A/B that this
 * machine's noise leaves usable. Fresh-JVM rounds of one build against another swing by 20-30% when a
 * neighbour on the host takes memory bandwidth or a core for a few seconds; alternating the two builds'
 * {@code VectorGemm} every few milliseconds for many rounds puts both under the same phases, and the
 * medians then separate changes of a few percent. Each build is loaded by its own class loader (own
 * statics, own worker pool; only one pool works at a time).
 *
 * <pre>
 * GemmAB [--seconds S] OLD NEW SHAPE...   OLD, NEW: ember-core class folders or jars
 * SHAPE = MxKxN[:nn|tn|nt]                 tn: C = A^T B, nt: C = A B^T (as the backward of Linear)
 * </pre>
 *
 * stdout: one JSON object per shape {@code {"category":"gemm-ab","case","unit":"GFLOP/s","old","new","ratio",
 * "old_cpu","new_cpu","ratio_cpu","rounds","same_bits"}}, ratio = new / old (> 1: the new build is faster);
 * {@code same_bits} says whether the two builds gave bitwise the same C. The {@code _cpu} figures are GFLOP/s
 * per CPU-second of all the JVM's threads (thread CPU time: a thread's time off the core is not counted, its
 * spin-waits are): on a host busy with other work (load far above its cores) wall time measures the scheduler,
 * while these still compare the builds' work (one thread: that thread's rate; two: per core, cache sharing
 * with the neighbours included). stderr: one readable line per shape.
 */
public final class GemmAB {
  private static final String GEMM = "dev.ember.backend.cpu.vector.VectorGemm";
  private static final int WARMUP_ROUNDS = 3;

  private GemmAB() {}

  /** One product to time: C[m, n] = op(A) op(B) with op(A) [m, k]. */
  record Shape(String text, int m, int k, int n, boolean transA, boolean transB) {
    static Shape parse(String text) {
      String[] modeSplit = text.split(":", -1);
      String mode = modeSplit.length == 2 ? modeSplit[1] : "nn";
      String[] dims = modeSplit[0].split("x", -1);
      if (modeSplit.length > 2 || dims.length != 3 || !List.of("nn", "tn", "nt").contains(mode)) {
        throw new BenchArgs.BadOption("GemmAB: bad shape '" + text + "': expected MxKxN or MxKxN:nn|tn|nt");
      }
      int[] d = new int[3];
      for (int i = 0; i < 3; i++) {
        try {
          d[i] = Integer.parseInt(dims[i]);
        } catch (NumberFormatException e) {
          d[i] = -1;
        }
        if (d[i] < 1) {
          throw new BenchArgs.BadOption("GemmAB: bad shape '" + text + "': dimension '" + dims[i]
              + "' is not a positive integer");
        }
      }
      return new Shape(text, d[0], d[1], d[2], mode.equals("tn"), mode.equals("nt"));
    }

    double flops() {
      return 2.0 * m * k * n;
    }
  }

  /** The result for one shape: medians of GFLOP/s over the timed rounds. */
  record Result(Shape shape, double oldGflops, double newGflops, double oldCpuGflops, double newCpuGflops, int rounds,
      boolean sameBits) {
    String json() {
      return String.format(Locale.ROOT,
          "{\"category\":\"gemm-ab\",\"case\":\"%s\",\"unit\":\"GFLOP/s\",\"old\":%.2f,\"new\":%.2f,\"ratio\":%.4f,"
              + "\"old_cpu\":%.2f,\"new_cpu\":%.2f,\"ratio_cpu\":%.4f,\"rounds\":%d,\"same_bits\":%b}", shape.text(),
          oldGflops, newGflops, newGflops / oldGflops, oldCpuGflops, newCpuGflops, newCpuGflops / oldCpuGflops, rounds,
          sameBits);
    }
  }

  public static void main(String[] args) throws Throwable {
    BenchArgs.main(args, GemmAB::runMain);
  }

  private static void runMain(String[] args) throws Throwable {
    double seconds = 8;
    List<String> rest = new ArrayList<>(Arrays.asList(args));
    if (!rest.isEmpty() && rest.get(0).equals("--seconds")) {
      seconds = BenchArgs.positive("GemmAB", "--seconds", BenchArgs.value("GemmAB", args, 0));
      rest = rest.subList(2, rest.size());
    }
    if (rest.size() < 3) {
      System.err.println("usage: GemmAB [--seconds S] OLD_CORE NEW_CORE MxKxN[:nn|tn|nt]...");
      System.exit(2);
    }
    List<Shape> shapes = rest.subList(2, rest.size()).stream().map(Shape::parse).toList();
    run(new File(rest.get(0)), new File(rest.get(1)), shapes, seconds, System.out, System.err);
  }

  /** Times every shape for {@code seconds} of alternating rounds, printing as {@link GemmAB} says. */
  static List<Result> run(File oldCore, File newCore, List<Shape> shapes, double seconds, PrintStream out,
      PrintStream log) throws Throwable {
    MethodHandle[] gemm = {load(oldCore), load(newCore)};
    List<Result> results = new ArrayList<>();
    for (Shape s : shapes) {
      Result r = time(gemm, s, seconds);
      results.add(r);
      out.println(r.json());
      log.printf(Locale.ROOT, "%-22s old %7.1f  new %7.1f GFLOP/s  new/old %.3f  (per CPU-s: %.1f %.1f, %.3f)  %d rounds  %s%n",
          s.text(), r.oldGflops(), r.newGflops(), r.newGflops() / r.oldGflops(), r.oldCpuGflops(), r.newCpuGflops(),
          r.newCpuGflops() / r.oldCpuGflops(), r.rounds(), r.sameBits() ? "same bits" : "DIFFERENT BITS");
    }
    return results;
  }

  private static MethodHandle load(File core) throws ReflectiveOperationException {
    if (!core.exists()) {
      throw new BenchArgs.BadOption("GemmAB: " + core + " does not exist (an ember-core target/classes or jar)");
    }
    URL url;
    try {
      url = core.toURI().toURL();
    } catch (MalformedURLException e) {
      throw new IllegalArgumentException("GemmAB: bad path " + core, e);
    }
    // Parent: the platform loader, so this build's classes come from the URL and not from our class path.
    ClassLoader loader = new URLClassLoader(new URL[] {url}, ClassLoader.getPlatformClassLoader());
    Class<?> c;
    try {
      c = loader.loadClass(GEMM);
    } catch (ClassNotFoundException e) {
      throw new IllegalArgumentException("GemmAB: " + core + " holds no " + GEMM, e);
    }
    MethodType type = MethodType.methodType(void.class, boolean.class, boolean.class, int.class, int.class, int.class,
        float.class, float[].class, int.class, int.class, float[].class, int.class, int.class, float.class,
        float[].class, int.class, int.class);
    return MethodHandles.publicLookup().findStatic(c, "sgemm", type);
  }

  private static void call(MethodHandle g, Shape s, float[] a, float[] b, float[] c) throws Throwable {
    int lda = s.transA() ? s.m() : s.k();
    int ldb = s.transB() ? s.k() : s.n();
    g.invokeExact(s.transA(), s.transB(), s.m(), s.n(), s.k(), 1f, a, 0, lda, b, 0, ldb, 0f, c, 0, s.n());
  }

  private static Result time(MethodHandle[] gemm, Shape s, double seconds) throws Throwable {
    SplittableRandom rnd = new SplittableRandom(1);
    float[] a = new float[s.m() * s.k()];
    float[] b = new float[s.k() * s.n()];
    for (int i = 0; i < a.length; i++) a[i] = (float) rnd.nextDouble(-1, 1);
    for (int i = 0; i < b.length; i++) b[i] = (float) rnd.nextDouble(-1, 1);
    float[][] c = {new float[s.m() * s.n()], new float[s.m() * s.n()]};
    call(gemm[0], s, a, b, c[0]);
    call(gemm[1], s, a, b, c[1]);
    boolean sameBits = Arrays.equals(c[0], c[1]);
    // Calls per timing: about 2 ms of work at 100 GFLOP/s, so the clock and the call cost vanish.
    int reps = (int) Math.max(1, Math.min(10_000, 2e-3 * 100e9 / s.flops()));
    List<List<Double>> rates = List.of(new ArrayList<>(), new ArrayList<>());
    List<List<Double>> cpuRates = List.of(new ArrayList<>(), new ArrayList<>());
    long end = System.nanoTime() + (long) (seconds * 1e9);
    int round = 0;
    do {
      for (int turn = 0; turn < 2; turn++) {
        int side = (round + turn) % 2; // which build goes first alternates too
        call(gemm[side], s, a, b, c[side]);
        long cpu0 = cpuNanos();
        long t0 = System.nanoTime();
        for (int r = 0; r < reps; r++) call(gemm[side], s, a, b, c[side]);
        long dt = System.nanoTime() - t0;
        long dcpu = cpuNanos() - cpu0;
        if (round >= WARMUP_ROUNDS) {
          rates.get(side).add(s.flops() * reps / dt);
          cpuRates.get(side).add(s.flops() * reps / Math.max(1, dcpu));
        }
      }
      round++;
    } while (System.nanoTime() < end || round <= WARMUP_ROUNDS);
    return new Result(s, median(rates.get(0)), median(rates.get(1)), median(cpuRates.get(0)), median(cpuRates.get(1)),
        rates.get(0).size(), sameBits);
  }

  /** CPU time of all the JVM's live threads, in ns (threads whose time cannot be read count 0). */
  private static long cpuNanos() {
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (long id : threads.getAllThreadIds()) sum += Math.max(0, threads.getThreadCpuTime(id));
    return sum;
  }

  private static double median(List<Double> xs) {
    double[] v = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }
}
