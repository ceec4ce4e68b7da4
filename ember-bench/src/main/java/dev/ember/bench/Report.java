package dev.ember.bench;

import dev.ember.nn.io.Json;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The non-plumbing half of {@code bench/run_benchmarks.sh}: reads the JSON lines that
 * {@code bench/compare.py} writes (one record per workload x case x threads), renders them as a
 * Markdown table or summary, and compares a run with a saved baseline, flagging every case whose
 * Ember median is more than a threshold (default 10%) worse: lower throughput, or higher latency
 * or memory.
 *
 * <pre>
 * Report table RESULTS [-o FILE]                      Markdown table
 * Report check FILE...                                validate result files (exit 2 naming file and line)
 * Report compare BASELINE RESULTS [--threshold PCT]   regressions; exit 1 if any, 3 if nothing in common
 * Report summary RESULTS -o FILE [--baseline FILE] [--threshold PCT] [--meta KEY=VALUE]...
 * </pre>
 */
public final class Report {
  static final String USAGE = """
      usage: Report table RESULTS [-o FILE]
             Report check FILE...
             Report compare BASELINE RESULTS [--threshold PCT]
             Report summary RESULTS -o FILE [--baseline FILE] [--threshold PCT] [--meta KEY=VALUE]...
        RESULTS / BASELINE: JSON lines as bench/compare.py and bench/run_benchmarks.sh write them
        --threshold PCT: a case is a regression when its Ember median is more than PCT percent worse
                         than the baseline's (default 10): lower throughput, higher latency or memory
      exit status: 0 ok; 1 regressions found (compare); 2 bad arguments or a malformed file;
                   3 no case of RESULTS is in BASELINE (compare)""";

  /** Default regression threshold: more than 10% worse. */
  static final double DEFAULT_THRESHOLD = 0.10;

  private Report() {}

  /** Join key of a result: the same case measured with the same thread count. */
  record Key(String category, String workload, String caseName, int threads) {
    @Override
    public String toString() {
      return category + "/" + workload + "/" + caseName + " threads=" + threads;
    }
  }

  /**
   * One record of a results file. {@code pytorch}, {@code ratio} and the MFU figures are null where
   * the run had no PyTorch side or the case has none; {@code line} is the 1-based line it came from.
   * With two PyTorch peers ({@code bench/compare.sh --peer torch113,torch210}) {@code pytorch} and
   * {@code ratio} are the faster peer's, {@code pytorchPeer} names it and {@code peers} holds each
   * peer's figures in the record's order. A record without a {@code "peers"} field comes from a run
   * with the torch 1.13 peer alone (the only one before there were two): its PyTorch figures are
   * {@link #SOLE_PEER}'s. Both are null / empty where no peer measured the case.
   */
  record Row(String category, String workload, String caseName, String unit, int threads, boolean lowerIsBetter,
      double ember, double emberMin, double emberMax, Double pytorch, Double pytorchMin, Double pytorchMax,
      Double ratio, Double emberMfu, Double pytorchMfu, String pytorchPeer, Map<String, PeerResult> peers,
      boolean contaminated, Path file, int line) {
    Key key() {
      return new Key(category, workload, caseName, threads);
    }
  }

  /** One peer's figures of a case: median, range and Ember's ratio against it (null when not given). */
  record PeerResult(double median, double min, double max, Double ratio) {}

  /** The peer of records that name none: the suite compared against torch 1.13 only until torch210 joined. */
  static final String SOLE_PEER = "torch113";

  /** A case more than the threshold worse than its baseline; {@code worse} is the fraction (0.18 = 18% worse). */
  record Regression(Row baseline, Row current, double worse) {}

  /**
   * Outcome of {@link #compare}: the regressions (worst first), the baseline cases this run did not
   * measure although it ran their category at their thread count, the cases the baseline lacks,
   * and how many cases were compared.
   */
  record Comparison(List<Regression> regressions, List<Row> missing, List<Row> added, int compared) {}

  /** A results file line that is not a well-formed record; names the file and the 1-based line. */
  static final class MalformedResultsException extends IllegalArgumentException {
    private final transient Path file;
    private final int line;

    MalformedResultsException(Path file, int line, String what) {
      super("read results: " + what + ": " + file + " line " + line);
      this.file = file;
      this.line = line;
    }

    /** The file that holds the bad line. */
    Path file() {
      return file;
    }

    /** The 1-based line number. */
    int line() {
      return line;
    }
  }

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  /** Runs one subcommand (see the class comment); returns the exit status. */
  static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length == 0 || args[0].equals("-h") || args[0].equals("--help")) {
      (args.length == 0 ? err : out).println(USAGE);
      return args.length == 0 ? 2 : 0;
    }
    try {
      Opts o = Opts.parse(args);
      return switch (args[0]) {
        case "table" -> {
          o.expectFiles(1, 1);
          String md = markdownTable(read(o.files.getFirst()));
          if (o.out != null) writeAtomically(o.out, md);
          else out.print(md);
          yield 0;
        }
        case "check" -> {
          o.expectFiles(1, Integer.MAX_VALUE);
          for (Path f : o.files) out.println(f + ": " + read(f).size() + " records");
          yield 0;
        }
        case "compare" -> {
          o.expectFiles(2, 2);
          Comparison c = compare(read(o.files.get(0)), read(o.files.get(1)), o.threshold);
          out.print(describe(c, o.files.get(0), o.threshold));
          yield c.compared() == 0 ? 3 : c.regressions().isEmpty() ? 0 : 1;
        }
        case "summary" -> {
          o.expectFiles(1, 1);
          if (o.out == null) throw new IllegalArgumentException("summary needs -o FILE");
          List<Row> rows = read(o.files.getFirst());
          Comparison c = o.baseline == null ? null : compare(read(o.baseline), rows, o.threshold);
          writeAtomically(o.out, summary(rows, o.meta, c, o.baseline, o.threshold));
          yield 0;
        }
        default -> throw new IllegalArgumentException("unknown subcommand '" + args[0]
            + "' (expected table, check, compare or summary)");
      };
    } catch (MalformedResultsException e) {
      err.println("Report: " + e.getMessage());
      return 2;
    } catch (IllegalArgumentException e) {
      err.println("Report: " + e.getMessage());
      err.println(USAGE);
      return 2;
    } catch (IOException e) {
      err.println("Report: cannot read or write " + e.getMessage() + " (" + e.getClass().getSimpleName() + ")");
      return 2;
    }
  }

  // ------------------------------------------------------------------ reading

  /** Reads a results file: one JSON object per non-blank line, duplicates of a {@link Key} rejected. */
  static List<Row> read(Path file) throws IOException {
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    List<Row> rows = new ArrayList<>();
    Map<Key, Integer> seen = new HashMap<>();
    for (int n = 1; n <= lines.size(); n++) {
      String text = lines.get(n - 1).strip();
      if (text.isEmpty()) continue;
      Row r = parseRow(file, n, text);
      Integer first = seen.putIfAbsent(r.key(), n);
      if (first != null) {
        throw new MalformedResultsException(file, n, "duplicate record for " + r.key() + " (first at line " + first + ")");
      }
      rows.add(r);
    }
    return rows;
  }

  /**
   * One result line as plain values ({@link Json#parsePlain}), Python's {@code NaN} and
   * {@code Infinity} accepted as Python's reader accepts them.
   *
   * @throws IllegalArgumentException naming the column of a syntax error
   */
  static Object parseJson(String text) {
    try {
      return Json.parsePlain(text, Json.NonFinite.LITERALS);
    } catch (Json.SyntaxError e) {
      throw new IllegalArgumentException("invalid JSON: " + e.getMessage() + " at column " + (e.pos + 1));
    }
  }

  static Row parseRow(Path file, int line, String text) {
    Object parsed;
    try {
      parsed = parseJson(text);
    } catch (IllegalArgumentException e) {
      throw new MalformedResultsException(file, line, e.getMessage());
    }
    if (!(parsed instanceof Map<?, ?> m)) {
      throw new MalformedResultsException(file, line, "expected a JSON object per line (got " + shorten(text) + ")");
    }
    Fields f = new Fields(file, line, m);
    String category = f.string("category");
    String workload = f.string("workload");
    String caseName = f.string("case");
    String unit = f.string("unit");
    double ember = f.number("ember");
    double threadsD = f.number("threads");
    if (threadsD < 1 || threadsD != Math.rint(threadsD)) {
      throw new MalformedResultsException(file, line, "field 'threads' must be a positive integer (got " + threadsD + ")");
    }
    Boolean lowerField = f.optBoolean("lower_is_better");
    boolean lower = lowerField != null ? lowerField : lowerIsBetter(unit);
    Double pytorch = f.optNumber("pytorch");
    Double pytorchMin = pytorch == null ? null : orElse(f.optNumber("pytorch_min"), pytorch);
    Double pytorchMax = pytorch == null ? null : orElse(f.optNumber("pytorch_max"), pytorch);
    Double ratio = f.optNumber("ratio");
    Map<String, PeerResult> peers = f.optPeers("peers");
    String peer = f.optString("pytorch_peer");
    if (peers == null) {
      peers = pytorch == null ? Map.of() : Map.of(SOLE_PEER, new PeerResult(pytorch, pytorchMin, pytorchMax, ratio));
      if (peer == null && pytorch != null) peer = SOLE_PEER;
    } else if (peer == null) {
      peer = fasterPeer(peers, lower);
    }
    if (peer != null && !peers.containsKey(peer)) {
      throw new MalformedResultsException(file, line, "field 'pytorch_peer' names \"" + peer + "\", which is not in 'peers' "
          + peers.keySet());
    }
    return new Row(category, workload, caseName, unit, (int) threadsD, lower, ember, orElse(f.optNumber("ember_min"), ember),
        orElse(f.optNumber("ember_max"), ember), pytorch, pytorchMin, pytorchMax, ratio,
        f.optNumber("ember_mfu"), f.optNumber("pytorch_mfu"), peer, peers, Boolean.TRUE.equals(f.optBoolean("contaminated")),
        file, line);
  }

  /**
   * The peer with the best median: the highest for a throughput, the lowest for a latency or memory
   * ({@code lower}); the first in order wins a tie, as in {@code bench/compare.py}. Null when empty.
   */
  static String fasterPeer(Map<String, PeerResult> peers, boolean lower) {
    String best = null;
    double bestMedian = 0;
    for (Map.Entry<String, PeerResult> e : peers.entrySet()) {
      double m = e.getValue().median();
      if (best == null || (lower ? m < bestMedian : m > bestMedian)) {
        best = e.getKey();
        bestMedian = m;
      }
    }
    return best;
  }

  /**
   * Direction of a unit for records that do not say ({@code lower_is_better} absent, as in older
   * baselines): rates (ending in "/s") are better higher; latencies (us/call, ms/call, ns/op) and
   * sizes (MB) are better lower.
   */
  static boolean lowerIsBetter(String unit) {
    String u = unit.strip();
    if (u.contains("lower is better")) return true;
    int sp = u.indexOf(' ');
    String head = sp < 0 ? u : u.substring(0, sp);
    return !head.endsWith("/s");
  }

  private static double orElse(Double v, double dflt) {
    return v != null ? v : dflt;
  }

  private static String shorten(String s) {
    return s.length() <= 40 ? "'" + s + "'" : "'" + s.substring(0, 40) + "...'";
  }

  /** Typed access to one parsed line's fields, failing with the file and line. */
  private record Fields(Path file, int line, Map<?, ?> m) {
    String string(String k) {
      Object v = m.get(k);
      if (v instanceof String s && !s.isEmpty()) return s;
      throw bad(k, v == null && !m.containsKey(k) ? "is missing" : "must be a non-empty string", v);
    }

    double number(String k) {
      Object v = m.get(k);
      if (v instanceof Number n && Double.isFinite(n.doubleValue())) return n.doubleValue();
      throw bad(k, v == null && !m.containsKey(k) ? "is missing" : "must be a finite number", v);
    }

    Double optNumber(String k) {
      Object v = m.get(k);
      if (v == null) return null;
      if (v instanceof Number n && Double.isFinite(n.doubleValue())) return n.doubleValue();
      throw bad(k, "must be a finite number or null", v);
    }

    String optString(String k) {
      Object v = m.get(k);
      if (v == null) return null;
      if (v instanceof String s && !s.isEmpty()) return s;
      throw bad(k, "must be a non-empty string or null", v);
    }

    /** {"name": {"median": x, "min": x, "max": x, "ratio": x}, ...} in the record's order; min, max and ratio optional. */
    Map<String, PeerResult> optPeers(String k) {
      Object v = m.get(k);
      if (v == null) return null;
      if (!(v instanceof Map<?, ?> peers)) throw bad(k, "must be an object of peers", v);
      Map<String, PeerResult> out = new LinkedHashMap<>();
      for (Map.Entry<?, ?> e : peers.entrySet()) {
        String name = String.valueOf(e.getKey());
        if (!(e.getValue() instanceof Map<?, ?> pm)) throw bad(k, "must map each peer to an object (" + name + " does not)", v);
        Fields pf = new Fields(file, line, pm);
        double median;
        try {
          median = pf.number("median");
        } catch (MalformedResultsException ex) {
          throw bad(k, "must give each peer a finite 'median' (" + name + " does not)", v);
        }
        out.put(name, new PeerResult(median, orElse(pf.optNumber("min"), median), orElse(pf.optNumber("max"), median),
            pf.optNumber("ratio")));
      }
      return Collections.unmodifiableMap(out);
    }

    Boolean optBoolean(String k) {
      Object v = m.get(k);
      if (v == null) return null;
      if (v instanceof Boolean b) return b;
      throw bad(k, "must be true or false", v);
    }

    private MalformedResultsException bad(String k, String what, Object v) {
      String got = !m.containsKey(k) ? "" : " (got " + (v instanceof String s ? "\"" + s + "\"" : String.valueOf(v)) + ")";
      return new MalformedResultsException(file, line, "field '" + k + "' " + what + got);
    }
  }

  // ------------------------------------------------------------------ baseline comparison

  /**
   * Compares each case of {@code current} with the same case (same category, workload, case and
   * thread count) of {@code baseline}. A case regresses when its Ember median is worse by more than
   * {@code threshold} (a fraction: 0.10 = 10%) of the baseline's: for a throughput {@code (base -
   * cur) / base > threshold}, for a latency or memory {@code (cur - base) / base > threshold}.
   * Exactly at the threshold is not a regression. Baseline cases whose category and thread count
   * this run covered but which it did not measure are listed as missing (a renamed or dropped
   * workload, or one left out with --only); categories not run at all are not.
   */
  static Comparison compare(List<Row> baseline, List<Row> current, double threshold) {
    if (!(threshold >= 0) || !Double.isFinite(threshold)) {
      throw new IllegalArgumentException("compare: threshold must be a non-negative fraction (got " + threshold + ")");
    }
    Map<Key, Row> base = new LinkedHashMap<>();
    for (Row r : baseline) base.put(r.key(), r);
    Map<Key, Row> cur = new LinkedHashMap<>();
    for (Row r : current) cur.put(r.key(), r);
    List<Regression> regressions = new ArrayList<>();
    List<Row> added = new ArrayList<>();
    int compared = 0;
    for (Row c : current) {
      Row b = base.get(c.key());
      if (b == null) {
        added.add(c);
        continue;
      }
      compared++;
      if (b.ember() <= 0) continue; // no relative change from zero
      double worse = c.lowerIsBetter() ? (c.ember() - b.ember()) / b.ember() : (b.ember() - c.ember()) / b.ember();
      if (worse > threshold) regressions.add(new Regression(b, c, worse));
    }
    regressions.sort(Comparator.comparingDouble(Regression::worse).reversed());
    Set<String> groups = new LinkedHashSet<>();
    for (Row c : current) groups.add(c.category() + "\u0000" + c.threads());
    List<Row> missing = new ArrayList<>();
    for (Row b : baseline) {
      if (!cur.containsKey(b.key()) && groups.contains(b.category() + "\u0000" + b.threads())) missing.add(b);
    }
    return new Comparison(List.copyOf(regressions), List.copyOf(missing), List.copyOf(added), compared);
  }

  /** Plain-text account of a comparison (what {@code Report compare} prints). */
  static String describe(Comparison c, Path baseline, double threshold) {
    StringBuilder sb = new StringBuilder();
    double p = threshold * 100;
    String pct = (p == Math.rint(p) ? String.valueOf((long) p) : fmt(p)) + "%";
    if (c.compared() == 0) {
      sb.append("no case of this run is in the baseline ").append(baseline)
          .append(" (different categories or thread counts?): nothing compared\n");
    } else if (c.regressions().isEmpty()) {
      sb.append("no regression: ").append(c.compared()).append(" cases within ").append(pct).append(" of ")
          .append(baseline).append('\n');
    } else {
      sb.append(c.regressions().size()).append(" regression").append(c.regressions().size() == 1 ? "" : "s")
          .append(" (more than ").append(pct).append(" worse than ").append(baseline).append(", ")
          .append(c.compared()).append(c.compared() == 1 ? " case" : " cases").append(" compared):\n");
      for (Regression r : c.regressions()) sb.append("  ").append(regressionLine(r)).append('\n');
    }
    if (!c.missing().isEmpty()) {
      sb.append(c.missing().size()).append(" baseline case").append(c.missing().size() == 1 ? "" : "s")
          .append(" not measured in this run:\n");
      for (Row m : c.missing()) sb.append("  ").append(m.key()).append('\n');
    }
    if (!c.added().isEmpty()) {
      sb.append(c.added().size()).append(" case").append(c.added().size() == 1 ? "" : "s").append(" with no baseline\n");
    }
    return sb.toString();
  }

  static String regressionLine(Regression r) {
    Row c = r.current();
    return String.format(Locale.ROOT, "%s: %s -> %s %s (%s%s%%, %s is better)%s", c.key(), fmt(r.baseline().ember()),
        fmt(c.ember()), c.unit().replace(" (lower is better)", ""), c.lowerIsBetter() ? "+" : "-", fmt(r.worse() * 100),
        c.lowerIsBetter() ? "lower" : "higher", c.contaminated() || r.baseline().contaminated() ? " [busy machine]" : "");
  }

  // ------------------------------------------------------------------ Markdown

  /**
   * The results as one Markdown table: category, workload, case, threads, unit, Ember median
   * [min-max], PyTorch median [min-max], ratio (&gt; 1: Ember better) and model-FLOPs utilisation
   * (Ember / PyTorch) where measured. Rows measured on a busy machine are marked with {@code *}.
   * When the rows name more than one PyTorch peer, each peer gets its own median [min-max] column,
   * the ratio is against the faster peer of the row and a column names it.
   */
  static String markdownTable(List<Row> rows) {
    Set<String> peerNames = new LinkedHashSet<>();
    for (Row r : rows) peerNames.addAll(r.peers().keySet());
    boolean multi = peerNames.size() > 1;
    StringBuilder sb = new StringBuilder();
    sb.append("| category | workload | case | threads | unit | ember median [min-max] | ");
    if (multi) {
      for (String p : peerNames) sb.append(cell(p)).append(" median [min-max] | ");
      sb.append("ratio (vs faster) | faster | mfu (ember / faster) |\n");
    } else {
      sb.append("pytorch median [min-max] | ratio | mfu (ember / pytorch) |\n");
    }
    sb.append("|---|---|---|---:|---|---:|").append("---:|".repeat(multi ? peerNames.size() : 1))
        .append(multi ? "---:|---|---:|\n" : "---:|---:|\n");
    boolean busy = false;
    for (Row r : rows) {
      busy |= r.contaminated();
      sb.append("| ").append(cell(r.category())).append(" | ").append(cell(r.workload())).append(" | ")
          .append(cell(r.caseName())).append(r.contaminated() ? " *" : "").append(" | ").append(r.threads())
          .append(" | ").append(cell(r.unit())).append(" | ")
          .append(fmt(r.ember())).append(" [").append(fmt(r.emberMin())).append('-').append(fmt(r.emberMax())).append("] | ");
      if (multi) {
        for (String p : peerNames) {
          PeerResult pr = r.peers().get(p);
          sb.append(pr == null ? "-" : fmt(pr.median()) + " [" + fmt(pr.min()) + "-" + fmt(pr.max()) + "]").append(" | ");
        }
      } else {
        sb.append(r.pytorch() == null ? "-" : fmt(r.pytorch()) + " [" + fmt(r.pytorchMin()) + "-" + fmt(r.pytorchMax()) + "]")
            .append(" | ");
      }
      sb.append(r.ratio() == null ? "-" : fmt(r.ratio()) + "x").append(" | ");
      if (multi) sb.append(r.pytorchPeer() == null ? "-" : cell(r.pytorchPeer())).append(" | ");
      sb.append(r.emberMfu() == null && r.pytorchMfu() == null ? "-" : percent(r.emberMfu()) + " / " + percent(r.pytorchMfu()))
          .append(" |\n");
    }
    sb.append(multi
        ? "\nratio > 1: Ember better than the faster PyTorch peer of the row, named under faster (throughput "
            + "ember/peer; latency and memory peer/ember); a peer without a figure has no such workload. "
        : "\nratio > 1: Ember better (throughput ember/pytorch; latency and memory pytorch/ember). ");
    sb.append("mfu: 6 x parameters x samples/s over that side's best sgemm GFLOP/s at N=1024 in the same run.\n");
    if (busy) sb.append("`*`: too few repeats ran on a quiet machine; the figures include disturbed repeats.\n");
    return sb.toString();
  }

  /**
   * A run summary: the {@code meta} lines (date, commit, machine, options), the geometric mean of the
   * ratios per category and thread count, the regressions against a baseline when one was given,
   * and the full table.
   */
  static String summary(List<Row> rows, Map<String, String> meta, Comparison c, Path baseline, double threshold) {
    StringBuilder sb = new StringBuilder("# Ember benchmark run\n\n");
    for (Map.Entry<String, String> e : meta.entrySet()) {
      sb.append("- ").append(e.getKey()).append(": ").append(e.getValue()).append('\n');
    }
    if (!meta.isEmpty()) sb.append('\n');
    sb.append("## Ember vs PyTorch by category\n\n");
    Map<String, List<Row>> groups = new LinkedHashMap<>();
    for (Row r : rows) groups.computeIfAbsent(r.category() + " | " + r.threads(), k -> new ArrayList<>()).add(r);
    sb.append("| category | threads | cases | with PyTorch | geomean ratio | lowest ratio | highest ratio |\n");
    sb.append("|---|---:|---:|---:|---:|---|---|\n");
    for (Map.Entry<String, List<Row>> g : groups.entrySet()) {
      List<Row> withRatio = g.getValue().stream().filter(r -> r.ratio() != null && r.ratio() > 0).toList();
      sb.append("| ").append(g.getKey()).append(" | ").append(g.getValue().size()).append(" | ").append(withRatio.size());
      if (withRatio.isEmpty()) {
        sb.append(" | - | - | - |\n");
        continue;
      }
      double logSum = 0;
      Row lo = withRatio.getFirst();
      Row hi = lo;
      for (Row r : withRatio) {
        logSum += Math.log(r.ratio());
        if (r.ratio() < lo.ratio()) lo = r;
        if (r.ratio() > hi.ratio()) hi = r;
      }
      sb.append(" | ").append(fmt(Math.exp(logSum / withRatio.size()))).append("x | ")
          .append(fmt(lo.ratio())).append("x ").append(cell(lo.workload() + "/" + lo.caseName())).append(" | ")
          .append(fmt(hi.ratio())).append("x ").append(cell(hi.workload() + "/" + hi.caseName())).append(" |\n");
    }
    sb.append("\nratio > 1: Ember better.\n\n");
    if (c != null) {
      sb.append("## Against the baseline\n\n```\n").append(describe(c, baseline, threshold)).append("```\n\n");
    }
    sb.append("## Results\n\n").append(markdownTable(rows));
    return sb.toString();
  }

  private static String cell(String s) {
    return s.replace("|", "\\|");
  }

  private static String percent(Double v) {
    return v == null ? "-" : fmt(100 * v) + "%";
  }

  /** About three significant digits, no exponent for ordinary magnitudes. */
  static String fmt(double v) {
    if (!Double.isFinite(v)) return "-";
    double a = Math.abs(v);
    if (a >= 100) return String.format(Locale.ROOT, "%.0f", v);
    if (a >= 10) return String.format(Locale.ROOT, "%.1f", v);
    if (a >= 1 || a == 0) return String.format(Locale.ROOT, "%.2f", v);
    return String.format(Locale.ROOT, "%.3g", v);
  }

  /** Writes {@code text} to a sibling temporary file and renames it, so no half-written file is left. */
  static void writeAtomically(Path file, String text) throws IOException {
    Path dir = file.toAbsolutePath().getParent();
    Path tmp = Files.createTempFile(dir, "." + file.getFileName(), ".tmp");
    try {
      Files.writeString(tmp, text, StandardCharsets.UTF_8);
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  // ------------------------------------------------------------------ arguments

  private static final class Opts {
    final List<Path> files = new ArrayList<>();
    Path out;
    Path baseline;
    double threshold = DEFAULT_THRESHOLD;
    final Map<String, String> meta = new LinkedHashMap<>();
    String sub;

    static Opts parse(String[] args) {
      Opts o = new Opts();
      o.sub = args[0];
      for (int i = 1; i < args.length; i++) {
        String a = args[i];
        switch (a) {
          case "-o", "--out" -> o.out = Path.of(value(args, ++i, a));
          case "--baseline" -> o.baseline = Path.of(value(args, ++i, a));
          case "--threshold" -> {
            String v = value(args, ++i, a);
            double pct;
            try {
              pct = Double.parseDouble(v);
            } catch (NumberFormatException e) {
              pct = Double.NaN;
            }
            if (!(pct >= 0) || !Double.isFinite(pct)) {
              throw new IllegalArgumentException("--threshold expects a non-negative percentage, got '" + v + "'");
            }
            o.threshold = pct / 100;
          }
          case "--meta" -> {
            String v = value(args, ++i, a);
            int eq = v.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("--meta expects KEY=VALUE, got '" + v + "'");
            o.meta.put(v.substring(0, eq), v.substring(eq + 1));
          }
          default -> {
            if (a.startsWith("-") && a.length() > 1) throw new IllegalArgumentException("unknown option " + a);
            o.files.add(Path.of(a));
          }
        }
      }
      return o;
    }

    void expectFiles(int min, int max) {
      if (files.size() < min || files.size() > max) {
        String want = min == max ? String.valueOf(min) : max == Integer.MAX_VALUE ? "at least " + min : min + " to " + max;
        throw new IllegalArgumentException(sub + " expects " + want + " file argument" + (max == 1 ? "" : "s")
            + " (got " + files.size() + ")");
      }
    }

    private static String value(String[] args, int i, String opt) {
      if (i >= args.length) throw new IllegalArgumentException(opt + " needs a value");
      return args[i];
    }
  }
}
