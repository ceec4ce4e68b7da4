package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reading result lines, the baseline regression check and the Markdown rendering of bench/run_benchmarks.sh. */
class ReportTest {
  @TempDir
  Path dir;

  private static String rec(String category, String workload, String unit, double ember, String extra) {
    return "{\"category\": \"" + category + "\", \"workload\": \"" + workload + "\", \"case\": \"c\", \"unit\": \"" + unit
        + "\", \"ember\": " + ember + ", \"threads\": 2" + (extra.isEmpty() ? "" : ", " + extra) + "}";
  }

  private Path file(String name, String... lines) throws IOException {
    Path p = dir.resolve(name);
    Files.writeString(p, String.join("\n", lines) + "\n");
    return p;
  }

  private static CommandRun run(String... args) {
    return CommandRun.of(Report::run, args);
  }

  @Test
  void readsCompareRecordsWithOptionalPeerFields() throws IOException {
    Path f = file("r.jsonl",
        "{\"category\": \"optim\", \"workload\": \"sgd\", \"case\": \"step n=1M f32\", \"unit\": \"GB/s\", \"ember\": 99.2, "
            + "\"pytorch\": 94.8, \"ratio\": 1.046, \"threads\": 2, \"ember_min\": 91.9, \"ember_max\": 99.8, "
            + "\"pytorch_min\": 83.0, \"pytorch_max\": 103.2, \"repeats\": [3, 3], \"ember_java\": \"25.0.3+9-LTS\"}",
        "",
        "{\"category\": \"optim\", \"workload\": \"lion\", \"case\": \"step n=1M f32\", \"unit\": \"GB/s\", \"ember\": 80, "
            + "\"pytorch\": null, \"ratio\": null, \"threads\": 2, \"contaminated\": true}");
    List<Report.Row> rows = Report.read(f);
    assertEquals(2, rows.size());
    Report.Row sgd = rows.get(0);
    assertEquals(new Report.Key("optim", "sgd", "step n=1M f32", 2), sgd.key());
    assertEquals(94.8, sgd.pytorch());
    assertEquals(91.9, sgd.emberMin());
    assertFalse(sgd.lowerIsBetter());
    assertEquals(1, sgd.line());
    Report.Row lion = rows.get(1);
    assertNull(lion.pytorch());
    assertNull(lion.ratio());
    assertEquals(80, lion.emberMax());
    assertTrue(lion.contaminated());
    assertEquals(3, lion.line());
  }

  @Test
  void directionComesFromTheRecordOrElseTheUnit() throws IOException {
    assertFalse(Report.lowerIsBetter("GFLOP/s"));
    assertFalse(Report.lowerIsBetter("samples/s"));
    assertTrue(Report.lowerIsBetter("us/call (lower is better)"));
    assertTrue(Report.lowerIsBetter("ms/call"));
    assertTrue(Report.lowerIsBetter("ns/op"));
    assertTrue(Report.lowerIsBetter("MB"));
    Path f = file("d.jsonl", rec("x", "a", "MB", 1, "\"lower_is_better\": false"));
    assertFalse(Report.read(f).getFirst().lowerIsBetter());
  }

  @Test
  void throughputMoreThanTenPercentLowerIsARegressionAndExactlyTenIsNot() throws IOException {
    List<Report.Row> base = Report.read(file("b.jsonl",
        rec("training", "a", "samples/s", 100, ""), rec("training", "b", "samples/s", 100, ""),
        rec("training", "c", "samples/s", 100, "")));
    List<Report.Row> cur = Report.read(file("c.jsonl",
        rec("training", "a", "samples/s", 90, ""),      // exactly 10% lower: within the threshold
        rec("training", "b", "samples/s", 89.99, ""),   // just over
        rec("training", "c", "samples/s", 150, "")));   // faster
    Report.Comparison c = Report.compare(base, cur, 0.10);
    assertEquals(3, c.compared());
    assertEquals(1, c.regressions().size(), c.regressions().toString());
    Report.Regression r = c.regressions().getFirst();
    assertEquals("b", r.current().workload());
    assertEquals(0.1001, r.worse(), 1e-9);
  }

  @Test
  void latencyAndMemoryRegressWhenHigher() throws IOException {
    List<Report.Row> base = Report.read(file("b.jsonl",
        rec("ops", "lat", "us/call", 100, ""), rec("memory", "rss", "MB", 200, ""),
        rec("ops", "edge", "us/call (lower is better)", 100, ""), rec("nn", "fast", "ms/call", 10, "")));
    List<Report.Row> cur = Report.read(file("c.jsonl",
        rec("ops", "lat", "us/call", 125, ""),          // 25% slower
        rec("memory", "rss", "MB", 230, ""),            // 15% more memory
        rec("ops", "edge", "us/call (lower is better)", 110, ""), // exactly 10%: not flagged
        rec("nn", "fast", "ms/call", 5, "")));          // twice as fast: an improvement, not a regression
    Report.Comparison c = Report.compare(base, cur, 0.10);
    assertEquals(List.of("lat", "rss"), c.regressions().stream().map(r -> r.current().workload()).toList());
    assertEquals(0.25, c.regressions().get(0).worse(), 1e-12);
    Report.Row edge = cur.get(2);
    assertTrue(Report.regressionLine(new Report.Regression(base.get(2), edge, 0.1)).contains("100 -> 110 us/call (+10.0%, lower"),
        "the unit's own '(lower is better)' is not repeated");
    assertEquals(0.15, c.regressions().get(1).worse(), 1e-12);
    assertTrue(Report.regressionLine(c.regressions().getFirst()).contains("100 -> 125 us/call (+25.0%, lower is better)"),
        Report.regressionLine(c.regressions().getFirst()));
  }

  @Test
  void missingCasesAreThoseOfCoveredCategoriesAndThreadCounts() throws IOException {
    List<Report.Row> base = Report.read(file("b.jsonl",
        rec("training", "kept", "samples/s", 100, ""), rec("training", "dropped", "samples/s", 100, ""),
        rec("gemm", "sgemm", "GFLOP/s", 250, ""),     // category not run: not missing
        rec("training", "kept", "samples/s", 60, "\"threads\": 1").replace("\"threads\": 2, ", "")));
    List<Report.Row> cur = Report.read(file("c.jsonl",
        rec("training", "kept", "samples/s", 100, ""), rec("training", "new", "samples/s", 5, "")));
    Report.Comparison c = Report.compare(base, cur, 0.10);
    assertEquals(1, c.compared());
    assertEquals(List.of("dropped"), c.missing().stream().map(Report.Row::workload).toList());
    assertEquals(List.of("new"), c.added().stream().map(Report.Row::workload).toList());
    assertTrue(c.regressions().isEmpty());
  }

  @Test
  void threadCountIsPartOfTheKey() throws IOException {
    List<Report.Row> base = Report.read(file("b.jsonl", rec("gemm", "sgemm", "GFLOP/s", 250, "")));
    List<Report.Row> cur = Report.read(file("c.jsonl",
        rec("gemm", "sgemm", "GFLOP/s", 130, "\"threads\": 1").replace("\"threads\": 2, ", "")));
    Report.Comparison c = Report.compare(base, cur, 0.10);
    assertEquals(0, c.compared());
    assertTrue(c.regressions().isEmpty());
  }

  @Test
  void malformedLinesAreRejectedNamingFileAndLine() throws IOException {
    Path notJson = file("a.jsonl", rec("x", "a", "GB/s", 1, ""), "{\"category\": \"x\", ");
    var e = assertThrows(Report.MalformedResultsException.class, () -> Report.read(notJson));
    assertEquals(2, e.line());
    assertTrue(e.getMessage().startsWith(
        "read results: invalid JSON: expected a '\"' to start a member name, found the end of the text at column 18"),
        e.getMessage());
    assertTrue(e.getMessage().endsWith(": " + notJson + " line 2"), e.getMessage());

    Path missing = file("b.jsonl", "{\"side\": \"ember\", \"model\": \"mlp\", \"threads\": 2}");
    e = assertThrows(Report.MalformedResultsException.class, () -> Report.read(missing));
    assertEquals("read results: field 'category' is missing: " + missing + " line 1", e.getMessage());

    Path badNumber = file("c.jsonl", rec("x", "a", "GB/s", 1, "").replace("\"ember\": 1.0", "\"ember\": \"fast\""));
    e = assertThrows(Report.MalformedResultsException.class, () -> Report.read(badNumber));
    assertEquals("read results: field 'ember' must be a finite number (got \"fast\"): " + badNumber + " line 1", e.getMessage());

    Path nan = file("d.jsonl", rec("x", "a", "GB/s", 1, "").replace("\"ember\": 1.0", "\"ember\": NaN"));
    e = assertThrows(Report.MalformedResultsException.class, () -> Report.read(nan));
    assertTrue(e.getMessage().contains("field 'ember' must be a finite number (got NaN)"), e.getMessage());

    Path array = file("e.jsonl", "[1, 2]");
    e = assertThrows(Report.MalformedResultsException.class, () -> Report.read(array));
    assertEquals("read results: expected a JSON object per line (got '[1, 2]'): " + array + " line 1", e.getMessage());

    Path dup = file("f.jsonl", rec("x", "a", "GB/s", 1, ""), rec("x", "b", "GB/s", 1, ""), rec("x", "a", "GB/s", 2, ""));
    e = assertThrows(Report.MalformedResultsException.class, () -> Report.read(dup));
    assertEquals("read results: duplicate record for x/a/c threads=2 (first at line 1): " + dup + " line 3", e.getMessage());

    Path threads = file("g.jsonl", rec("x", "a", "GB/s", 1, "").replace("\"threads\": 2", "\"threads\": 1.5"));
    e = assertThrows(Report.MalformedResultsException.class, () -> Report.read(threads));
    assertTrue(e.getMessage().contains("field 'threads' must be a positive integer (got 1.5)"), e.getMessage());
  }

  @Test
  void compareCommandExitsNonZeroOnRegressionAndOnNothingInCommon() throws IOException {
    Path base = file("base.jsonl", rec("training", "a", "samples/s", 100, ""), rec("memory", "m", "MB", 100, ""));
    Path same = file("same.jsonl", rec("training", "a", "samples/s", 95, ""), rec("memory", "m", "MB", 105, ""));
    CommandRun ok = run("compare", base.toString(), same.toString());
    assertEquals(0, ok.status(), ok.err());
    assertTrue(ok.out().startsWith("no regression: 2 cases within 10%"), ok.out());

    Path worse = file("worse.jsonl", rec("training", "a", "samples/s", 50, ""), rec("memory", "m", "MB", 300, ""));
    CommandRun bad = run("compare", base.toString(), worse.toString());
    assertEquals(1, bad.status(), bad.err());
    assertTrue(bad.out().startsWith("2 regressions (more than 10% worse than " + base + ", 2 cases compared):"), bad.out());
    assertTrue(bad.out().contains("memory/m/c threads=2: 100 -> 300 MB (+200%, lower is better)"), bad.out());
    assertTrue(bad.out().contains("training/a/c threads=2: 100 -> 50.0 samples/s (-50.0%, higher is better)"), bad.out());

    CommandRun loose = run("compare", base.toString(), worse.toString(), "--threshold", "250");
    assertEquals(0, loose.status(), loose.out());

    Path other = file("other.jsonl", rec("gemm", "sgemm", "GFLOP/s", 1, ""));
    CommandRun none = run("compare", base.toString(), other.toString());
    assertEquals(3, none.status());
    assertTrue(none.out().startsWith("no case of this run is in the baseline"), none.out());

    Path broken = file("broken.jsonl", rec("training", "a", "samples/s", 100, ""), "not json");
    CommandRun malformed = run("compare", broken.toString(), same.toString());
    assertEquals(2, malformed.status());
    assertTrue(malformed.err().startsWith("Report: read results: invalid JSON: expected a value, found 'n' at column 1: "
        + broken + " line 2"), malformed.err());
  }

  @Test
  void markdownTableHasMedianRangeRatioAndMfu() throws IOException {
    Path f = file("r.jsonl",
        "{\"category\": \"training\", \"workload\": \"seed_small\", \"case\": \"train b=32 sgd\", \"unit\": \"samples/s\", "
            + "\"ember\": 12345.6, \"ember_min\": 12000, \"ember_max\": 12500, \"pytorch\": 10000, \"pytorch_min\": 9500, "
            + "\"pytorch_max\": 10100, \"ratio\": 1.23456, \"threads\": 2, \"ember_mfu\": 0.1234, \"pytorch_mfu\": 0.0567}",
        "{\"category\": \"memory\", \"workload\": \"lenet\", \"case\": \"peak heap | b=64\", \"unit\": \"MB\", "
            + "\"ember\": 85.25, \"pytorch\": null, \"ratio\": null, \"threads\": 1, \"contaminated\": true}");
    String md = Report.markdownTable(Report.read(f));
    List<String> lines = md.lines().toList();
    assertEquals("| category | workload | case | threads | unit | ember median [min-max] | pytorch median [min-max] "
        + "| ratio | mfu (ember / pytorch) |", lines.get(0));
    assertEquals("| training | seed_small | train b=32 sgd | 2 | samples/s | 12346 [12000-12500] | 10000 [9500-10100] "
        + "| 1.23x | 12.3% / 5.67% |", lines.get(2));
    assertEquals("| memory | lenet | peak heap \\| b=64 * | 1 | MB | 85.3 [85.3-85.3] | - | - | - |", lines.get(3));
    assertTrue(md.contains("`*`: too few repeats ran on a quiet machine"), md);
  }

  private static final String TWO_PEERS = "{\"category\": \"training\", \"workload\": \"lenet\", \"case\": \"train b=64 adam\", "
      + "\"unit\": \"samples/s\", \"ember\": 15000, \"ember_min\": 14000, \"ember_max\": 16000, \"pytorch\": 12000, "
      + "\"pytorch_min\": 11000, \"pytorch_max\": 13000, \"ratio\": 1.25, \"threads\": 2, \"lower_is_better\": false, "
      + "\"repeats\": [3, 3], \"pytorch_peer\": \"torch210\", \"peers\": {\"torch113\": {\"median\": 10000, \"min\": 9000, "
      + "\"max\": 10500, \"ratio\": 1.5, \"repeats\": 3}, \"torch210\": {\"median\": 12000, \"min\": 11000, \"max\": 13000, "
      + "\"ratio\": 1.25, \"repeats\": 3}}, \"torch\": \"1.13.0a0\", \"torch210\": \"2.10.0\"}";

  @Test
  void readsARecordWithTwoPeers() throws IOException {
    Report.Row r = Report.read(file("two.jsonl", TWO_PEERS)).getFirst();
    assertEquals("torch210", r.pytorchPeer());
    assertEquals(List.of("torch113", "torch210"), List.copyOf(r.peers().keySet()));
    assertEquals(new Report.PeerResult(10000, 9000, 10500, 1.5), r.peers().get("torch113"));
    assertEquals(12000, r.pytorch());
    assertEquals(1.25, r.ratio());
    // the baseline check still compares Ember's medians only
    Report.Comparison c = Report.compare(List.of(r), Report.read(file("cur.jsonl", rec("training", "lenet", "samples/s", 13000,
        "").replace("\"case\": \"c\"", "\"case\": \"train b=64 adam\""))), 0.10);
    assertEquals(1, c.compared());
    assertEquals(1, c.regressions().size());
  }

  @Test
  void withoutANamedPeerTheFasterIsTheHigherThroughputOrTheLowerLatency() throws IOException {
    String peers = "\"peers\": {\"torch113\": {\"median\": 20}, \"torch210\": {\"median\": 14}}";
    List<Report.Row> rows = Report.read(file("p.jsonl", rec("training", "tput", "samples/s", 10, peers),
        rec("training", "lat", "us/call (lower is better)", 10, peers),
        rec("training", "flag", "samples/s", 10, peers + ", \"lower_is_better\": true"),
        rec("training", "tie", "samples/s", 10, "\"peers\": {\"torch210\": {\"median\": 5}, \"torch113\": {\"median\": 5}}")));
    assertEquals(List.of("torch113", "torch210", "torch210", "torch210"), rows.stream().map(Report.Row::pytorchPeer).toList());
    Report.PeerResult only = rows.get(0).peers().get("torch210");
    assertEquals(new Report.PeerResult(14, 14, 14, null), only, "min and max default to the median");
    assertNull(Report.fasterPeer(java.util.Map.of(), false));
  }

  @Test
  void recordsWithoutPeersAreTheTorch113PeerAlone() throws IOException {
    List<Report.Row> rows = Report.read(file("old.jsonl",
        rec("training", "a", "samples/s", 10, "\"pytorch\": 8, \"pytorch_min\": 7, \"ratio\": 1.25"),
        rec("optim", "lion", "GB/s", 10, "\"pytorch\": null, \"ratio\": null")));
    assertEquals("torch113", rows.get(0).pytorchPeer());
    assertEquals(java.util.Map.of("torch113", new Report.PeerResult(8, 7, 8, 1.25)), rows.get(0).peers());
    assertNull(rows.get(1).pytorchPeer());
    assertTrue(rows.get(1).peers().isEmpty());
  }

  @Test
  void malformedPeersAreRejected() throws IOException {
    Path notListed = file("a.jsonl", rec("x", "a", "GB/s", 1, "\"pytorch_peer\": \"torch300\", \"peers\": {\"torch113\": {\"median\": 2}}"));
    var e = assertThrows(Report.MalformedResultsException.class, () -> Report.read(notListed));
    assertEquals("read results: field 'pytorch_peer' names \"torch300\", which is not in 'peers' [torch113]: " + notListed
        + " line 1", e.getMessage());
    Path noMedian = file("b.jsonl", rec("x", "a", "GB/s", 1, "\"peers\": {\"torch113\": {\"min\": 2}}"));
    e = assertThrows(Report.MalformedResultsException.class, () -> Report.read(noMedian));
    assertTrue(e.getMessage().contains("field 'peers' must give each peer a finite 'median' (torch113 does not)"), e.getMessage());
    Path notObject = file("c.jsonl", rec("x", "a", "GB/s", 1, "\"peers\": [1]"));
    e = assertThrows(Report.MalformedResultsException.class, () -> Report.read(notObject));
    assertTrue(e.getMessage().contains("field 'peers' must be an object of peers"), e.getMessage());
  }

  @Test
  void markdownTableWithTwoPeersHasAColumnEachAndNamesTheFaster() throws IOException {
    Path f = file("r.jsonl", TWO_PEERS,
        rec("training", "old", "samples/s", 10, "\"pytorch\": 8, \"ratio\": 1.25"),
        rec("training", "lat", "us/call", 10, "\"pytorch\": 12, \"ratio\": 1.2, \"pytorch_peer\": \"torch210\", "
            + "\"peers\": {\"torch113\": {\"median\": 16, \"min\": 15, \"max\": 17}, \"torch210\": {\"median\": 12}}"));
    List<String> lines = Report.markdownTable(Report.read(f)).lines().toList();
    assertEquals("| category | workload | case | threads | unit | ember median [min-max] | torch113 median [min-max] "
        + "| torch210 median [min-max] | ratio (vs faster) | faster | mfu (ember / faster) |", lines.get(0));
    assertEquals("|---|---|---|---:|---|---:|---:|---:|---:|---|---:|", lines.get(1));
    assertEquals("| training | lenet | train b=64 adam | 2 | samples/s | 15000 [14000-16000] | 10000 [9000-10500] "
        + "| 12000 [11000-13000] | 1.25x | torch210 | - |", lines.get(2));
    assertEquals("| training | old | c | 2 | samples/s | 10.0 [10.0-10.0] | 8.00 [8.00-8.00] | - | 1.25x | torch113 | - |",
        lines.get(3));
    assertEquals("| training | lat | c | 2 | us/call | 10.0 [10.0-10.0] | 16.0 [15.0-17.0] | 12.0 [12.0-12.0] | 1.20x "
        + "| torch210 | - |", lines.get(4));
    assertTrue(lines.get(6).startsWith("ratio > 1: Ember better than the faster PyTorch peer of the row"), lines.get(6));
  }

  @Test
  void summaryHasMetaGeomeanBaselineAndTable() throws IOException {
    Path f = file("r.jsonl",
        rec("training", "a", "samples/s", 200, "\"pytorch\": 100, \"ratio\": 2.0"),
        rec("training", "b", "samples/s", 50, "\"pytorch\": 100, \"ratio\": 0.5"),
        rec("training", "d", "samples/s", 50, "\"pytorch\": 100, \"ratio\": 8.0"),
        rec("memory", "m", "MB", 50, ""));
    Path base = file("base.jsonl", rec("training", "b", "samples/s", 100, ""));
    Path out = dir.resolve("summary.md");
    CommandRun r = run("summary", f.toString(), "-o", out.toString(), "--baseline", base.toString(),
        "--meta", "commit=abc123", "--meta", "options=-c training");
    assertEquals(0, r.status(), r.err());
    String md = Files.readString(out);
    assertTrue(md.startsWith("# Ember benchmark run\n\n- commit: abc123\n- options: -c training\n"), md);
    assertTrue(md.contains("| training | 2 | 3 | 3 | 2.00x | 0.500x b/c | 8.00x d/c |"), md);
    assertTrue(md.contains("| memory | 2 | 1 | 0 | - | - | - |"), md);
    assertTrue(md.contains("1 regression (more than 10% worse than " + base + ", 1 case compared)"), md);
    assertTrue(md.contains("## Results\n\n| category |"), md);
    try (var s = Files.list(dir)) {
      assertFalse(s.anyMatch(p -> p.getFileName().toString().endsWith(".tmp")), "temporary file left behind");
    }
  }

  @Test
  void badArgumentsAreRejected() throws IOException {
    CommandRun r = run("compare", "only-one.jsonl");
    assertEquals(2, r.status());
    assertTrue(r.err().startsWith("Report: compare expects 2 file arguments (got 1)"), r.err());
    r = run("frobnicate");
    assertEquals(2, r.status());
    assertTrue(r.err().startsWith("Report: unknown subcommand 'frobnicate'"), r.err());
    r = run("compare", "a", "b", "--threshold", "-5");
    assertEquals(2, r.status());
    assertTrue(r.err().startsWith("Report: --threshold expects a non-negative percentage, got '-5'"), r.err());
    r = run("check", dir.resolve("absent.jsonl").toString());
    assertEquals(2, r.status());
    assertTrue(r.err().startsWith("Report: cannot read or write " + dir.resolve("absent.jsonl")), r.err());
    Path ok = file("ok.jsonl", rec("x", "a", "GB/s", 1, ""));
    r = run("check", ok.toString());
    assertEquals(0, r.status(), r.err());
    assertEquals(ok + ": 1 records\n", r.out());
  }

  @Test
  void baselineFilesInTheRepositoryAreWellFormed() throws IOException {
    // one current record per category of bench/run_benchmarks.sh, named after it (BENCHMARKS.md renders each)
    Path baseline = Path.of("..", "bench", "baseline");
    for (String category : List.of("training", "ops", "losses", "metrics", "schedulers", "callbacks", "memory", "gemm",
        "nn", "optim", "precision", "compression", "compile", "distributed")) {
      Path f = baseline.resolve(category + ".jsonl");
      List<Report.Row> rows = Report.read(f);
      assertFalse(rows.isEmpty(), f.toString());
      for (Report.Row r : rows) assertEquals(category, r.category(), f + ": " + r.key());
    }
    // the training category against both peers (a separate record: its Ember medians come from a loaded host and
    // must not become the regression baseline of training.jsonl, whose keys it shares)
    Path twoPeers = baseline.resolve("training-peers.jsonl");
    List<Report.Row> rows = Report.read(twoPeers);
    assertFalse(rows.isEmpty(), twoPeers.toString());
    for (Report.Row r : rows) {
      assertEquals("training", r.category(), twoPeers + ": " + r.key());
      assertEquals(java.util.Set.of("torch113", "torch210"), r.peers().keySet(), twoPeers + ": " + r.key());
      assertEquals(Report.fasterPeer(r.peers(), r.lowerIsBetter()), r.pytorchPeer(), twoPeers + ": " + r.key());
      assertEquals(r.peers().get(r.pytorchPeer()).median(), r.pytorch(), twoPeers + ": " + r.key());
    }
  }
}
