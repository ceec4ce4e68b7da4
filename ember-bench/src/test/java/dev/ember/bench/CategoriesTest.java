package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.train.Callback;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The per-call categories (ops, losses, schedulers, metrics, callbacks): every case builds and
 * runs, and the Java names are the committed names of the PyTorch side (peer_cases.tsv, made by
 * peer_cases.sh from bench/peers/pytorch_ops.py --list), apart from the declared Ember-only
 * workloads. No timing is asserted.
 */
class CategoriesTest {
  private static final Map<String, Set<String>> EMBER_ONLY = Map.of(
      "ops", Set.of(), "losses", LossCases.EMBER_ONLY, "schedulers", Set.of(), "metrics", MetricCases.EMBER_ONLY);

  private static CommandRun run(String... args) {
    return CommandRun.of(Compare::run, args);
  }

  private static Set<String> committed(String suite) throws IOException {
    try (InputStream in = CategoriesTest.class.getResourceAsStream("peer_cases.tsv")) {
      assertNotNull(in, "peer_cases.tsv is missing from the test resources");
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines()
          .filter(l -> !l.isBlank() && !l.startsWith("#"))
          .map(l -> l.split("\t", 2))
          .filter(f -> f[0].equals(suite))
          .map(f -> f[1])
          .collect(Collectors.toCollection(TreeSet::new));
    }
  }

  @Test
  void javaNamesAreThePeersNamesPlusTheEmberOnlyWorkloads() throws IOException {
    for (var e : EMBER_ONLY.entrySet()) {
      String category = e.getKey();
      CommandRun r = run(category, "--list");
      assertEquals(0, r.status(), r.err());
      List<String> java = r.out().lines().toList();
      assertEquals(java.size(), new TreeSet<>(java).size(), category + ": duplicate case names " + java);
      Set<String> workloads = java.stream().map(n -> n.substring(0, n.indexOf('/'))).collect(Collectors.toSet());
      assertTrue(workloads.containsAll(e.getValue()), category + ": Ember-only workloads " + e.getValue()
          + " are not all cases any more: " + workloads);
      Set<String> shared = java.stream().filter(n -> !e.getValue().contains(n.substring(0, n.indexOf('/'))))
          .collect(Collectors.toCollection(TreeSet::new));
      Set<String> peer = committed(category);
      assertFalse(peer.isEmpty(), category + ": no committed peer names");
      Set<String> onlyJava = new TreeSet<>(shared);
      onlyJava.removeAll(peer);
      Set<String> onlyPeer = new TreeSet<>(peer);
      onlyPeer.removeAll(shared);
      assertTrue(onlyJava.isEmpty() && onlyPeer.isEmpty(),
          category + ": names differ; only in Java " + onlyJava + ", only in pytorch_ops.py " + onlyPeer);
    }
  }

  @Test
  void gradientOpsCoverTheThreeSizes() {
    List<String> ops = run("ops", "--list").out().lines().toList();
    for (int n : OpsCases.GRAD_SIZES) {
      String shape = "[" + n + "x" + n + "]";
      for (String w : List.of("relu", "sigmoid", "tanh", "softmax", "sum", "mean", "add", "mul")) {
        assertTrue(ops.contains(w + "/fwd+bwd " + shape), w + " " + shape + " missing: " + ops);
      }
      assertTrue(ops.contains("max/fwd+bwd dim=1 " + shape), ops.toString());
      assertTrue(ops.contains("matmul/fwd+bwd (" + n + "x" + n + ")@(" + n + "x" + n + ")"), ops.toString());
    }
    // the names the earlier runs (BENCHMARKS.md) used stay
    assertTrue(ops.contains("relu/fwd+bwd [256x256]") && ops.contains("tape/add chain x100 [4] fwd+bwd per op"));
  }

  @Test
  void everyLossScheduleAndMetricCaseRunsOnce() {
    for (List<BenchCase> cases : List.of(LossCases.cases(), ScheduleCases.cases(), MetricCases.cases())) {
      assertFalse(cases.isEmpty());
      for (BenchCase c : cases) {
        assertEquals("us/call", c.unit(), c.workload());
        assertTrue(c.lowerIsBetter(), c.workload());
        c.call().run();
      }
    }
  }

  @Test
  void everyGradientOpCaseRunsOnce() {
    for (BenchCase c : OpsCases.cases(new int[] {1 << 12})) {
      if (c.name().startsWith("fwd+bwd") || c.workload().equals("tape")) c.call().run();
    }
  }

  @Test
  void everyCallbackSetTrainsOneEpoch(@TempDir Path dir) throws IOException {
    Map<String, java.util.function.Function<Path, List<Callback>>> sets = CallbackCases.sets();
    assertTrue(sets.keySet().containsAll(Set.of("progress_bar", "csv_logger", "json_lines_logger",
        "gradient_monitor", "terminate_on_nan", "early_stopping", "histogram_logger", "profiling",
        "model_checkpoint", "default_set")), sets.keySet().toString());
    for (var e : sets.entrySet()) {
      Path d = Files.createDirectories(dir.resolve(e.getKey()));
      double s = CallbackCases.fitOnce(e.getValue().apply(d));
      assertTrue(s > 0, e.getKey());
    }
    assertTrue(Files.size(dir.resolve("csv_logger/metrics.csv")) > 0);
    assertTrue(Files.size(dir.resolve("histogram_logger/histograms.jsonl")) > 0);
    try (var files = Files.list(dir.resolve("model_checkpoint/ckpt"))) {
      assertEquals(2, files.count(), "every 50 steps of a 100-step epoch, keep 2");
    }
  }

  @Test
  void callbackCasesReportAddedMicrosecondsAndPercentFromOneMeasurement() {
    CommandRun r = run("callbacks", "--only", "terminate_on_nan", "--repeats", "1");
    assertEquals(0, r.status(), r.err());
    List<String> lines = r.out().lines().filter(l -> l.contains("\"terminate_on_nan\"")).toList();
    assertEquals(2, lines.size(), r.out());
    assertTrue(lines.get(0).contains("\"case\":\"added per step\"") && lines.get(0).contains("\"unit\":\"us/step\""),
        lines.get(0));
    assertTrue(lines.get(1).contains("\"case\":\"added per step, %\"") && lines.get(1).contains("\"unit\":\"%\""),
        lines.get(1));
    for (String l : lines) {
      String median = l.replaceAll(".*\"median\":([^,]+),.*", "$1");
      assertTrue(Double.isFinite(Double.parseDouble(median)), l);
    }
  }

  @Test
  void compareScriptsKnowTheNewCategories() throws IOException {
    Path root = Path.of("..").toAbsolutePath().normalize();
    Set<String> driver = quoted(Files.readString(root.resolve("bench/compare.py")),
        "p.add_argument(\"category\", choices=[");
    Set<String> peer = quoted(Files.readString(root.resolve("bench/peers/pytorch_ops.py")),
        "p.add_argument(\"--suite\", choices=[");
    for (String c : List.of("ops", "losses", "schedulers", "metrics", "callbacks")) {
      assertTrue(driver.contains(c), "bench/compare.py choices lack " + c + ": " + driver);
      assertEquals(0, run(c, "--list").status(), c);
    }
    assertTrue(peer.containsAll(Set.of("ops", "losses", "schedulers", "metrics")), peer.toString());
  }

  /** The quoted strings of the bracketed list that follows {@code prefix} in {@code source}. */
  private static Set<String> quoted(String source, String prefix) {
    int at = source.indexOf(prefix);
    assertTrue(at >= 0, "not found: " + prefix);
    String list = source.substring(at + prefix.length(), source.indexOf(']', at));
    Set<String> out = new TreeSet<>();
    Matcher m = Pattern.compile("\"([^\"]+)\"").matcher(list);
    while (m.find()) out.add(m.group(1));
    return out;
  }
}
