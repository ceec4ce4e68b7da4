package dev.ember.bench;

import dev.ember.tensor.Device;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Ember's side of bench/compare.sh: runs one category with the PyTorch peer's method (see
 * {@link Measure}) and prints one JSON object per case on stdout, in the peer's field names
 * (workload, case, threads, metric, unit, median, min, max, values...), plus a readable line per
 * case on stderr. The first line is {@code {"workload":"_env",...}}, as the peer's.
 *
 * <p>{@link #run(String[])} is the library entry point ({@code ./ember bench} calls it); {@link
 * #main(String[])} only turns its result into the exit status.
 */
public final class Compare {
  static final String USAGE = """
      usage: Compare CATEGORY [options]       (CATEGORY: gemm | ops | nn | optim | training | losses | schedulers | metrics | callbacks | precision | compression | compile)
        --threads N        Ember worker threads (default: -Dember.threads / EMBER_NUM_THREADS / #cpus)
        --repeats N        timed repeats per case (default 5)
        --warmup S         warm-up seconds per case, at least 2 calls (default 2.0: lets C2 compile the Vector API code);
                           a case on its peer's schedule (the seed MLPs) spends them on a throwaway instance, then
                           measures a fresh one with the peer's warm-up and target (JSON: "schedule":"peer")
        --target S         seconds per timed repeat, calls per repeat calibrated to it (default 0.4)
        --sizes A,B,...    gemm: square sizes (default 128,256,512,1024,2048); ops: element counts (default 1048576,65536)
        --only P,Q,...     run only workloads or "workload/case" names starting with one of these
        --foreign-max C    discard a repeat during which other processes used more than C CPUs (default 0.1)
        --max-wait S       total seconds to wait for a quiet machine per case (default 60)
        --list             print the cases and exit
      stdout: one JSON object per case; stderr: a table.""";

  private Compare() {}

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs the comparison's Ember side; returns 0, or 2 on bad arguments (with a message on stderr). */
  public static int run(String[] args) {
    return run(args, System.out, System.err);
  }

  static int run(String[] args, PrintStream out, PrintStream err) {
    Args a;
    try {
      a = Args.parse(args);
    } catch (IllegalArgumentException e) {
      err.println("Compare: " + e.getMessage());
      err.println(USAGE);
      return 2;
    }
    if (a.help) {
      err.println(USAGE);
      return 0;
    }
    if (a.threads > 0) Device.CPU.backend().setThreads(a.threads);
    List<BenchCase> cases = new ArrayList<>(switch (a.category) {
      case "gemm" -> GemmCases.cases(a.sizes != null ? a.sizes : GemmCases.DEFAULT_SIZES);
      case "ops" -> OpsCases.cases(a.sizes != null ? a.sizes : OpsCases.DEFAULT_SIZES);
      case "nn" -> NnCases.cases();
      case "optim" -> OptimCases.cases();
      case "training" -> TrainingCases.cases();
      case "losses" -> LossCases.cases();
      case "schedulers" -> ScheduleCases.cases();
      case "metrics" -> MetricCases.cases();
      case "callbacks" -> CallbackCases.cases();
      case "precision" -> PrecisionCases.cases();
      case "compression" -> CompressionCases.cases();
      case "compile" -> CompileCases.cases();
      default -> throw new IllegalStateException(a.category);
    });
    cases.removeIf(c -> !a.selected(c));
    if (cases.isEmpty()) {
      err.println("Compare: no case of category '" + a.category + "' matches --only " + String.join(",", a.only));
      return 2;
    }
    if (a.list) {
      for (BenchCase c : cases) out.println(c.workload() + "/" + c.name());
      return 0;
    }
    String kernels = Device.CPU.backend().name();
    out.println("{\"workload\":\"_env\",\"side\":\"ember\",\"kernels\":" + JsonText.str(kernels)
        + ",\"threads\":" + Device.CPU.backend().threads() + ",\"java\":" + JsonText.str(Runtime.version().toString())
        + ",\"vm\":" + JsonText.str(System.getProperty("java.vm.name")) + ",\"cpus\":" + Runtime.getRuntime().availableProcessors() + "}");
    out.flush();
    err.printf(Locale.ROOT, "# ember kernels=%s threads=%d java=%s%n", kernels, Device.CPU.backend().threads(),
        Runtime.version());
    Measure m = new Measure(new Measure.Options(a.warmup, a.target, a.repeats, a.foreignMax, 4, a.maxWait));
    for (int i = 0; i < cases.size(); i++) {
      BenchCase c = cases.get(i);
      Measure.Result r = c.probe() != null ? probe(c, a.repeats)
          : c.schedule() != null ? scheduled(m, c, a.warmup, a.target) : m.run(c.call(), c.unitsPerCall());
      // drop the case so its operands (up to 180 MB for the 6656-wide GEMM) can be collected
      cases.set(i, null);
      double[] v = Arrays.stream(r.values()).map(c.toReported()).toArray();
      Measure.Result rep = new Measure.Result(v, r.callsPerRepeat(), r.discarded(), r.contaminated(), r.quietWaitS());
      out.println(json(c, rep, kernels, a));
      out.flush();
      err.printf(Locale.ROOT, "%-10s %-40s thr=%d median=%12.3f  min=%12.3f  max=%12.3f  %s%s%n", c.workload(), c.name(),
          Device.CPU.backend().threads(), rep.median(), rep.min(), rep.max(), c.unit(),
          r.discarded() > 0 ? "  [discarded " + r.discarded() + " busy repeats]" : "");
    }
    return 0;
  }

  /**
   * A case on its peer's schedule ({@link BenchCase.PeerSchedule}): the JIT is warmed up for {@code jitWarmupS} on a
   * throwaway instance (at least 2 calls), which is then dropped, and a fresh instance is measured with the peer's
   * warm-up and target, so that the timed steps are the same steps of the run as the peer's. The throwaway is
   * collected before the fresh instance is built (seed_large's is 1.5 GB of parameters and Adam state, whose
   * collection would otherwise fall into the timed repeats; the peers free theirs at once).
   */
  static Measure.Result scheduled(Measure m, BenchCase c, double jitWarmupS, double targetS) {
    BenchCase.PeerSchedule s = c.schedule();
    Measure.warmUp(s.make().get(), jitWarmupS);
    System.gc();
    return m.run(s.make().get(), c.unitsPerCall(), s.warmupS(), peerTarget(s, targetS));
  }

  private static double peerTarget(BenchCase.PeerSchedule s, double targetS) {
    return Double.isNaN(s.targetS()) ? targetS : s.targetS();
  }

  private static Measure.Result probe(BenchCase c, int repeats) {
    double[] v = new double[repeats];
    for (int i = 0; i < repeats; i++) v[i] = c.probe().getAsDouble();
    return new Measure.Result(v, 1, 0, false, 0);
  }

  private static String json(BenchCase c, Measure.Result r, String kernels, Args a) {
    StringBuilder sb = new StringBuilder("{");
    sb.append("\"workload\":").append(JsonText.str(c.workload()));
    sb.append(",\"case\":").append(JsonText.str(c.name()));
    sb.append(",\"side\":\"ember\",\"kernels\":").append(JsonText.str(kernels));
    sb.append(",\"threads\":").append(Device.CPU.backend().threads());
    sb.append(",\"metric\":").append(JsonText.str(c.metric()));
    sb.append(",\"unit\":").append(JsonText.str(c.unit()));
    sb.append(",\"lower_is_better\":").append(c.lowerIsBetter());
    long params = "samples/s".equals(c.unit()) ? TrainingCases.mlpParams(c.workload()) : -1;
    if (params > 0) sb.append(",\"params\":").append(params); // for compare.py's model-FLOPs utilisation
    sb.append(",\"median\":").append(JsonText.num(r.median()));
    sb.append(",\"min\":").append(JsonText.num(r.min()));
    sb.append(",\"max\":").append(JsonText.num(r.max()));
    sb.append(",\"repeats\":").append(r.values().length);
    sb.append(",\"calls_per_repeat\":").append(r.callsPerRepeat());
    if (c.schedule() != null) { // the peer's schedule on a fresh instance, after the JIT warm-up on another
      sb.append(",\"schedule\":\"peer\",\"jit_warmup_s\":").append(JsonText.num(a.warmup));
      sb.append(",\"warmup_s\":").append(JsonText.num(c.schedule().warmupS()));
      sb.append(",\"target_s\":").append(JsonText.num(peerTarget(c.schedule(), a.target)));
    }
    sb.append(",\"discarded_repeats\":").append(r.discarded());
    if (r.contaminated()) sb.append(",\"contaminated\":true");
    sb.append(",\"quiet_wait_s\":").append(JsonText.num(r.quietWaitS()));
    sb.append(",\"values\":[");
    for (int i = 0; i < r.values().length; i++) sb.append(i > 0 ? "," : "").append(JsonText.num(r.values()[i]));
    return sb.append("]}").toString();
  }

  /**
   * JSON for the flat records above: strings through Ember's JSON writer, numbers as Java prints
   * them (null when not finite).
   */
  static final class JsonText {
    private JsonText() {}

    static String str(String s) {
      StringBuilder sb = new StringBuilder();
      dev.ember.nn.io.Json.string(sb, s);
      return sb.toString();
    }

    static String num(double v) {
      return Double.isFinite(v) ? Double.toString(v) : "null";
    }
  }

  private static final class Args {
    String category;
    int threads;
    int repeats = 5;
    double warmup = 2.0;
    double target = 0.4;
    double foreignMax = 0.1;
    double maxWait = 60;
    int[] sizes;
    List<String> only = List.of();
    boolean list;
    boolean help;

    static Args parse(String[] argv) {
      Args a = new Args();
      for (int i = 0; i < argv.length; i++) {
        String s = argv[i];
        switch (s) {
          case "-h", "--help" -> a.help = true;
          case "--list" -> a.list = true;
          case "--threads" -> a.threads = positiveInt(s, value(argv, ++i, s));
          case "--repeats" -> a.repeats = positiveInt(s, value(argv, ++i, s));
          case "--warmup" -> a.warmup = nonNegative(s, value(argv, ++i, s));
          case "--target" -> a.target = nonNegative(s, value(argv, ++i, s));
          case "--foreign-max" -> a.foreignMax = nonNegative(s, value(argv, ++i, s));
          case "--max-wait" -> a.maxWait = nonNegative(s, value(argv, ++i, s));
          case "--only" -> a.only = Arrays.stream(value(argv, ++i, s).split(",")).filter(x -> !x.isBlank()).toList();
          case "--sizes" -> a.sizes = Arrays.stream(value(argv, ++i, s).split(",")).filter(x -> !x.isBlank())
              .mapToInt(x -> positiveInt(s, x)).toArray();
          default -> {
            if (s.startsWith("-")) throw new IllegalArgumentException("unknown option " + s);
            if (a.category != null) throw new IllegalArgumentException("more than one category: " + a.category + ", " + s);
            a.category = s;
          }
        }
      }
      if (a.help) return a;
      if (a.category == null) throw new IllegalArgumentException("missing CATEGORY (gemm, ops, nn, optim, training, losses, schedulers, metrics, callbacks, precision, compression or compile)");
      if (!List.of("gemm", "ops", "nn", "optim", "training", "losses", "schedulers", "metrics", "callbacks", "precision", "compression", "compile")
          .contains(a.category)) {
        throw new IllegalArgumentException("unknown category '" + a.category + "' (expected gemm, ops, nn, optim, training, losses, schedulers, metrics, callbacks, precision, compression or compile)");
      }
      return a;
    }

    boolean selected(BenchCase c) {
      if (only.isEmpty()) return true;
      String full = c.workload() + "/" + c.name();
      return only.stream().anyMatch(p -> c.workload().startsWith(p) || full.startsWith(p));
    }

    private static String value(String[] argv, int i, String opt) {
      if (i >= argv.length) throw new IllegalArgumentException(opt + " needs a value");
      return argv[i];
    }

    private static int positiveInt(String opt, String v) {
      try {
        int n = Integer.parseInt(v.trim());
        if (n >= 1) return n;
      } catch (NumberFormatException ignored) {
        // reported below with the option name
      }
      throw new IllegalArgumentException(opt + " expects a positive integer, got '" + v + "'");
    }

    private static double nonNegative(String opt, String v) {
      try {
        double d = Double.parseDouble(v.trim());
        if (d >= 0 && Double.isFinite(d)) return d;
      } catch (NumberFormatException ignored) {
        // reported below with the option name
      }
      throw new IllegalArgumentException(opt + " expects a non-negative number, got '" + v + "'");
    }
  }
}
