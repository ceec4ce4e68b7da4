package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@code ./ember} launcher of this checkout, run as a user runs it, in a temporary folder.
 * It runs the CLI from this test's class path ({@code EMBER_CLASSPATH}), since the tests run before
 * Maven's package phase builds what the launcher would otherwise use; the launcher's own mechanics
 * (JVM options, the stderr filter, exit status, signals) are checked with a stand-in {@code Main}
 * compiled here that reports what it was given.
 */
@DisabledOnOs(OS.WINDOWS)
class LauncherTest {
  static final String INCUBATOR_WARNING = "WARNING: Using incubator modules: jdk.incubator.vector";

  @TempDir static Path work;
  static Path root;
  static Path fakeClasses;
  /** The stand-in in a jar: the ahead-of-time cache records jars only. */
  static Path fakeJar;

  record Result(int status, String out, String err) {
    List<String> errLines() {
      return err.lines().toList();
    }

    @Override
    public String toString() {
      return "exit status " + status + "\nstdout:\n" + out + "\nstderr:\n" + err;
    }
  }

  @BeforeAll
  static void setUp() throws IOException {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !(Files.isRegularFile(dir.resolve("ember")) && Files.isDirectory(dir.resolve("ember-cli")))) {
      dir = dir.getParent();
    }
    assertTrue(dir != null, "no Ember checkout above " + Path.of("").toAbsolutePath());
    root = dir;

    // a stand-in for dev.ember.cli.Main: prints its JVM options and arguments on stdout, a line and an
    // unterminated line on stderr, then exits with the status in args[0] (or sleeps for "sleep")
    Path src = work.resolve("fake/src/dev/ember/cli/Main.java");
    Files.createDirectories(src.getParent());
    Files.writeString(src, """
        package dev.ember.cli;
        public final class Main {
          public static void main(String[] args) throws Exception {
            System.out.println("jvm: " + String.join(" ", java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()));
            System.out.println("args: " + String.join("|", args));
            System.out.print("no newline at the end");
            System.out.flush();
            System.err.println("a line on stderr");
            System.err.println("not the JVM's: WARNING: Using incubator modules: jdk.incubator.vector");
            if (args[0].equals("int")) { // counts the SIGINTs that reach it
              java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
              sun.misc.Signal.handle(new sun.misc.Signal("INT"), sig -> n.incrementAndGet());
              System.err.println("waiting for SIGINT");
              for (int i = 0; i < 600 && n.get() == 0; i++) Thread.sleep(100);
              Thread.sleep(1000); // time for a second one
              System.err.println("SIGINT received " + n.get() + " time(s)");
              System.exit(n.get() == 0 ? 0 : 130);
            }
            if (args[0].equals("sleep")) {
              Runtime.getRuntime().addShutdownHook(new Thread(() -> System.err.println("shutdown hook ran")));
              System.err.println("sleeping");
              Thread.sleep(60_000);
            }
            System.err.print("a last line without newline");
            System.exit(Integer.parseInt(args[args.length - 1]));
          }
        }
        """);
    fakeClasses = work.resolve("fake/classes");
    java.io.ByteArrayOutputStream log = new java.io.ByteArrayOutputStream(); // sun.misc.Signal's warnings
    int rc = ToolProvider.getSystemJavaCompiler().run(null, log, log, "-d", fakeClasses.toString(), src.toString());
    assertEquals(0, rc, "compiling the stand-in Main: " + log);
    fakeJar = work.resolve("fake/fake.jar");
    rc = java.util.spi.ToolProvider.findFirst("jar").orElseThrow().run(new java.io.PrintStream(log), new java.io.PrintStream(log),
        "--create", "--file", fakeJar.toString(), "-C", fakeClasses.toString(), ".");
    assertEquals(0, rc, "jar of the stand-in Main: " + log);
  }

  /** The class path this test runs with, which has the CLI's classes and their dependencies. */
  static String classPath() {
    String cp = System.getProperty("surefire.test.class.path");
    return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
  }

  static Process start(String classPath, Map<String, String> env, String... args) throws IOException {
    Path dir = work.resolve("cwd");
    Files.createDirectories(dir);
    List<String> cmd = new ArrayList<>(List.of(root.resolve("ember").toString()));
    cmd.addAll(Arrays.asList(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile());
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    pb.environment().put("EMBER_CLASSPATH", classPath);
    pb.environment().remove("EMBER_JAVA_OPTS");
    pb.environment().remove("JAVA_TOOL_OPTIONS");
    pb.environment().putAll(env);
    return pb.start();
  }

  static Result finish(Process p) throws Exception {
    p.getOutputStream().close();
    CompletableFuture<byte[]> out = read(p.getInputStream());
    CompletableFuture<byte[]> err = read(p.getErrorStream());
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "./ember did not finish in 120 s");
    return new Result(p.exitValue(), new String(out.get(), StandardCharsets.UTF_8), new String(err.get(), StandardCharsets.UTF_8));
  }

  private static CompletableFuture<byte[]> read(InputStream in) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return in.readAllBytes();
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
  }

  static Result ember(String... args) throws Exception {
    return finish(start(classPath(), Map.of(), args));
  }

  static Result fake(Map<String, String> env, String... args) throws Exception {
    return finish(start(fakeClasses.toString(), env, args));
  }

  @Test
  void helpOfEachCommandGoesToStdoutWithStatus0() throws Exception {
    for (String[] args : List.of(new String[] {"train", "--help"}, new String[] {"train", "-h"},
        new String[] {"summary", "--help"}, new String[] {"inspect", "--help"}, new String[] {"info", "-h"},
        new String[] {"help", "train"})) {
      Result r = ember(args);
      String what = String.join(" ", args) + ": " + r;
      assertEquals(0, r.status(), what);
      assertEquals("", r.err(), what);
      String cmd = args[0].equals("help") ? args[1] : args[0];
      assertTrue(r.out().startsWith("usage: ./ember " + cmd), what);
    }
    Result train = ember("train", "--help");
    for (String option : List.of("--model", "--epochs", "--batch-size", "--optimizer", "--lr", "--scheduler", "--seed",
        "--threads", "--workers", "--out", "--resume", "--checkpoint-every", "--data", "--quiet")) {
      assertTrue(train.out().contains("\n  " + option + " "), option + " missing in\n" + train.out());
    }
    Result bench = ember("bench", "--help"); // the benchmark runner's own, complete help
    assertEquals(0, bench.status(), bench.toString());
    assertTrue(bench.out().startsWith("usage: bench/run_benchmarks.sh [options]"), bench.toString());

    Result all = ember("help");
    assertEquals(0, all.status(), all.toString());
    for (String c : List.of("train", "summary", "bench", "inspect", "info", "version", "help")) {
      assertTrue(all.out().contains("\n./ember " + c), c + " missing in\n" + all.out());
    }
  }

  @Test
  void versionPrintsVersionJdkAndBackend() throws Exception {
    for (String v : List.of("--version", "-V", "version")) {
      Result r = ember(v);
      assertEquals(0, r.status(), r.toString());
      assertEquals("", r.err(), r.toString());
      List<String> lines = r.out().lines().toList();
      assertEquals("ember " + Main.VERSION, lines.get(0));
      assertTrue(lines.get(1).startsWith("java:    " + Runtime.version().feature()), r.out());
      assertTrue(lines.get(2).matches("backend: cpu-(vector|scalar)"), r.out());
    }
    // the version in Main is the project's
    Matcher m = Pattern.compile("<artifactId>ember-parent</artifactId>\\s*<version>([^<]+)</version>")
        .matcher(Files.readString(root.resolve("pom.xml")));
    assertTrue(m.find(), "no version in pom.xml");
    assertEquals(m.group(1).replace("-SNAPSHOT", ""), Main.VERSION);
  }

  @Test
  void mistakesAreOneLineOnStderrWithStatus2() throws Exception {
    // train's start is slower (its pre-touched heap): its other cases run in-process in TrainOptionsTest
    Map<List<String>, String> cases = Map.of(
        List.of("train", "--foo", "3"), "ember train: unknown option --foo (see ./ember train --help)",
        List.of("summary", "--foo"), "ember summary: unknown option --foo (see ./ember summary --help)",
        List.of("summary", "--model", "mlp", "--foo", "3"), "ember summary: unknown option --foo (see ./ember summary --help)",
        List.of("summary", "--model", "lenet", "extra"), "ember summary: unexpected argument 'extra' (see ./ember summary --help)",
        List.of("summary", "--model"), "ember summary: option --model needs a value (see ./ember summary --help)",
        List.of("version", "--foo"), "ember version: unknown option --foo (see ./ember version --help)",
        List.of("frobnicate"),
        "ember: unknown command 'frobnicate' (commands: train, summary, bench, inspect, export, info, version, help; see ./ember help)");
    for (var c : cases.entrySet()) {
      Result r = ember(c.getKey().toArray(String[]::new));
      assertEquals(2, r.status(), c.getKey() + ": " + r);
      assertEquals(List.of(c.getValue()), r.errLines(), c.getKey() + ": " + r);
      assertEquals("", r.out(), c.getKey() + ": " + r);
    }
  }

  @Test
  void smallHeapInEmberJavaOptsStartsEveryCommand() throws Exception {
    // a JVM that is really started with them
    // -Xms1g with -Xmx256m stopped the JVM before Ember started
    Process p = start(classPath(), Map.of("EMBER_JAVA_OPTS", "-Xmx256m"), "inspect", "missing.safetensors");
    Result r = finish(p);
    assertEquals(2, r.status(), r.toString());
    assertEquals(List.of("ember inspect: missing.safetensors: no such file"), r.errLines(), r.toString());
    Result train = finish(start(classPath(), Map.of("EMBER_JAVA_OPTS", "-Xmx256m"), "train", "--model", "resnet"));
    assertEquals(2, train.status(), train.toString());
    assertEquals(List.of("ember train: --model must be one of mlp, lenet, convnet, got 'resnet'"), train.errLines());
  }

  /**
   * The JVM options the launcher gives java between its fixed ones (the module option, native access, which the
   * CUDA bindings need, and protobuf's Unsafe access without a warning) and -Dember.home (EMBER_DRY_RUN).
   */
  private static String jvmOptions(String emberJavaOpts, String... args) throws Exception {
    Map<String, String> env = new java.util.HashMap<>(Map.of("EMBER_DRY_RUN", "1"));
    if (emberJavaOpts != null) env.put("EMBER_JAVA_OPTS", emberJavaOpts);
    Result r = fake(env, args);
    assertEquals(0, r.status(), r.toString());
    List<String> cmd = r.out().lines().toList();
    assertTrue(cmd.get(0).endsWith("/bin/java") && cmd.get(1).equals("--add-modules") && cmd.get(2).equals("jdk.incubator.vector")
        && cmd.get(3).equals("--enable-native-access=ALL-UNNAMED")
        && cmd.get(4).equals("--sun-misc-unsafe-memory-access=allow"), r.toString());
    int home = cmd.indexOf(cmd.stream().filter(a -> a.startsWith("-Dember.home=")).findFirst().orElseThrow());
    assertEquals(List.of("-cp", fakeClasses.toString(), "dev.ember.cli.Main"), cmd.subList(home + 1, home + 4), r.toString());
    assertEquals(Arrays.asList(args), cmd.subList(home + 4, cmd.size()), r.toString());
    return String.join(" ", cmd.subList(5, home));
  }

  @Test
  void emberJavaOptsReplaceTheLaunchersHeapDefaults() throws Exception {
    // the pre-touched 1 GiB heap is train's alone
    assertEquals("-Xms1g -XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000", jvmOptions(null, "train", "--epochs", "2"));
    assertEquals("", jvmOptions(null, "train", "--help"));
    assertEquals("", jvmOptions(null, "inspect", "a file *.npy"));
    assertEquals("", jvmOptions(null, "bench", "-c", "ops"));
    assertEquals("", jvmOptions(null));
    assertEquals("-Xmx256m", jvmOptions("-Xmx256m", "inspect", "f"));
    assertEquals("-XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000 -Xmx256m", jvmOptions("-Xmx256m", "train"));
    assertEquals("-XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000 -XX:MaxHeapSize=512m", jvmOptions("-XX:MaxHeapSize=512m", "train"));
    assertEquals("-Xms1g -XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000 -Xmx8g", jvmOptions("-Xmx8g", "train"));
    assertEquals("-Xms1g -XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000 -Xmx1024m", jvmOptions("-Xmx1024m", "train"));
    assertEquals("-XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000 -Xmx1023m", jvmOptions("-Xmx1023m", "train"));
    assertEquals("-XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000 -Xmx1048575K", jvmOptions("-Xmx1048575K", "train"));
    assertEquals("-XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000 -Xms64m", jvmOptions("-Xms64m", "train"));
    assertEquals("-XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000 -XX:InitialHeapSize=2g", jvmOptions("-XX:InitialHeapSize=2g", "train"));
    assertEquals("-Xms1g -XX:Tier4BackEdgeThreshold=400000 -XX:-AlwaysPreTouch -Dember.threads=1", jvmOptions("  -XX:-AlwaysPreTouch  -Dember.threads=1 ", "train"));
    assertEquals("-Xms1g -XX:Tier4BackEdgeThreshold=400000 -XX:+UseSerialGC -Xmn64m -XX:+AlwaysPreTouch", jvmOptions("-XX:+UseSerialGC -Xmn64m -XX:+AlwaysPreTouch", "train"));
    assertEquals("-Xms1g -XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000 -Dx=*", jvmOptions("-Dx=*", "train")); // no file-name expansion
    assertEquals("-XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000 -Xmxlots", jvmOptions("-Xmxlots", "train")); // the JVM says what is wrong
  }

  @Test
  void trainCompilesHotLoopsOnceUnlessTheUserSetsTheThreshold() throws Exception {
    // train alone raises C2's on-stack-replacement threshold (each kernel compiled once, as a whole method)
    assertEquals("-Xms1g -XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000", jvmOptions(null, "train", "--model", "lenet"));
    assertEquals("", jvmOptions(null, "train", "-h"));
    assertEquals("", jvmOptions(null, "summary", "--model", "lenet"));
    // a user's own threshold replaces it (whatever its value), and the user's other JIT options pass through
    assertEquals("-Xms1g -XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=40000", jvmOptions("-XX:Tier4BackEdgeThreshold=40000", "train"));
    assertEquals("-Xms1g -XX:+AlwaysPreTouch -XX:Tier4BackEdgeThreshold=400000 -XX:-TieredCompilation", jvmOptions("-XX:-TieredCompilation", "train"));
  }

  /** The java command of a dry run of the stand-in jar with the cache in {@code aotDir}, one argument a line. */
  private static List<String> aotDryRun(Path aotDir, String classPath, Map<String, String> env, String... args) throws Exception {
    Map<String, String> all = new java.util.HashMap<>(env);
    all.put("EMBER_DRY_RUN", "1");
    all.put("EMBER_AOT_DIR", aotDir.toString());
    Result r = finish(start(classPath, all, args));
    assertEquals(0, r.status(), r.toString());
    return r.out().lines().toList();
  }

  private static boolean records(List<String> cmd, Path aotDir) {
    return cmd.contains("-XX:AOTMode=record")
        && cmd.stream().anyMatch(a -> a.startsWith("-XX:AOTConfiguration=" + aotDir.resolve("ember.aotconf.")))
        && cmd.stream().noneMatch(a -> a.startsWith("-XX:AOTCache="));
  }

  private static boolean uses(List<String> cmd, Path aotDir) {
    return cmd.contains("-XX:AOTCache=" + aotDir.resolve("ember.aot")) && !cmd.contains("-XX:AOTMode=record");
  }

  private static boolean noAot(List<String> cmd) {
    return cmd.stream().noneMatch(a -> a.startsWith("-XX:AOTMode") || a.startsWith("-XX:AOTConfiguration") || a.contains("ember.aot"));
  }

  @Test
  void trainRecordsTheAheadOfTimeCacheOnceThenUsesItUntilItIsStale() throws Exception {
    Path aot = work.resolve("aot-cache");
    String jar = fakeJar.toString();
    // only train records one, not its help, and only from jars, unless turned off or the user chose a mode
    assertTrue(records(aotDryRun(aot, jar, Map.of(), "train", "--epochs", "2"), aot));
    assertTrue(noAot(aotDryRun(aot, jar, Map.of(), "train", "--help")));
    assertTrue(noAot(aotDryRun(aot, jar, Map.of(), "inspect", "f")));
    assertTrue(noAot(aotDryRun(aot, jar, Map.of("EMBER_AOT", "0"), "train")));
    assertTrue(noAot(aotDryRun(aot, fakeClasses.toString(), Map.of(), "train")));
    assertTrue(noAot(aotDryRun(aot, jar, Map.of("EMBER_JAVA_OPTS", "-Xshare:off"), "train")));
    assertTrue(noAot(aotDryRun(aot, jar, Map.of("EMBER_JAVA_OPTS", "-XX:AOTCache=mine.aot"), "train")));
    assertFalse(Files.exists(aot.resolve("ember.aot")), "a dry run wrote a cache");

    Map<String, String> env = Map.of("EMBER_AOT_DIR", aot.toString());
    // a failed run writes no cache
    Result failed = finish(start(jar, env, "train", "3"));
    assertEquals(3, failed.status(), failed.toString());
    assertFalse(Files.exists(aot.resolve("ember.aot")), failed.toString());

    // the first run records and writes it; its output is the program's, plus one line of the launcher's
    Result first = finish(start(jar, env, "train", "0"));
    assertEquals(0, first.status(), first.toString());
    assertTrue(first.out().contains("-XX:AOTMode=record") && first.out().endsWith("\nargs: train|0\nno newline at the end"),
        first.toString());
    assertEquals(List.of("a line on stderr", "not the JVM's: " + INCUBATOR_WARNING, "a last line without newline",
        "ember: writing the JVM's ahead-of-time cache for faster starts (once; EMBER_AOT=0 turns it off)..."),
        first.errLines(), first.toString());
    assertTrue(Files.size(aot.resolve("ember.aot")) > 0, first.toString());
    try (var left = Files.list(aot)) {
      assertEquals(List.of("create.log", "ember.aot", "ember.aot.key"), left.map(f -> f.getFileName().toString()).sorted().toList());
    }

    // later runs use it, and say nothing more than the program; so do the other commands but bench
    assertTrue(uses(aotDryRun(aot, jar, Map.of(), "train"), aot));
    assertTrue(uses(aotDryRun(aot, jar, Map.of(), "train", "--help"), aot));
    assertTrue(uses(aotDryRun(aot, jar, Map.of(), "inspect", "f"), aot));
    assertTrue(noAot(aotDryRun(aot, jar, Map.of(), "bench", "-c", "ops")));
    assertTrue(noAot(aotDryRun(aot, jar, Map.of("EMBER_AOT", "0"), "train")));
    Result second = finish(start(jar, env, "train", "0"));
    assertEquals(0, second.status(), second.toString());
    assertTrue(second.out().contains("-XX:AOTCache=" + aot.resolve("ember.aot")), second.toString());
    assertEquals("a line on stderr\nnot the JVM's: " + INCUBATOR_WARNING + "\na last line without newline", second.err());

    // other JVM options, another jar or another key make it stale: the next run records a new one
    assertTrue(records(aotDryRun(aot, jar, Map.of("EMBER_JAVA_OPTS", "-Dx=1"), "train"), aot));
    Path otherJar = work.resolve("fake/other.jar");
    Files.copy(fakeJar, otherJar);
    assertTrue(records(aotDryRun(aot, otherJar.toString(), Map.of(), "train"), aot));
    String key = Files.readString(aot.resolve("ember.aot.key"));
    Files.writeString(aot.resolve("ember.aot.key"), key.replace("option:", "opt:"));
    assertTrue(records(aotDryRun(aot, jar, Map.of(), "train"), aot));
    Files.writeString(aot.resolve("ember.aot.key"), key);

    // a damaged cache with the right key: the JVM runs without it, silently
    Files.write(aot.resolve("ember.aot"), new byte[] {1, 2, 3});
    Result damaged = finish(start(jar, env, "train", "0"));
    assertEquals(0, damaged.status(), damaged.toString());
    assertEquals("a line on stderr\nnot the JVM's: " + INCUBATOR_WARNING + "\na last line without newline", damaged.err());

    // a cache that could not be written for this key is not tried again
    Files.delete(aot.resolve("ember.aot"));
    Files.writeString(aot.resolve("ember.aot.failed"), key);
    assertTrue(noAot(aotDryRun(aot, jar, Map.of(), "train")));
    assertTrue(records(aotDryRun(aot, jar, Map.of("EMBER_JAVA_OPTS", "-Dx=1"), "train"), aot));
  }

  @Test
  void sigintWhileTheCacheIsWrittenStopsItAndLeavesNoFiles() throws Exception {
    assumeTrue(have("setsid"), "needs setsid(1) (util-linux) for a launcher without a terminal");
    Path aot = work.resolve("aot-interrupted");
    ProcessBuilder pb = new ProcessBuilder("setsid", root.resolve("ember").toString(), "train", "0")
        .directory(Files.createDirectories(work.resolve("cwd")).toFile());
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    pb.environment().put("EMBER_CLASSPATH", fakeJar.toString());
    pb.environment().put("EMBER_AOT_DIR", aot.toString());
    pb.environment().remove("EMBER_JAVA_OPTS");
    Process p = pb.start();
    p.getOutputStream().close();
    CompletableFuture<byte[]> out = read(p.getInputStream());
    // the launcher sets its traps before this line, so a signal sent once it is read always stops the writing
    readUntil(p.getErrorStream(), "ember: writing the JVM's ahead-of-time cache for faster starts (once; EMBER_AOT=0 turns it off)...");
    assertEquals(0, new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).start().waitFor());
    String rest = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    out.get();
    assertEquals(130, p.exitValue(), rest);
    // no cache, key or configuration left; the writer's log may or may not exist (a signal that comes before
    // the writing JVM's shell has opened it kills that shell first)
    try (var left = Files.list(aot)) {
      assertEquals(List.of(), left.map(f -> f.getFileName().toString()).filter(f -> !f.equals("create.log")).toList(),
          rest);
    }
    try (var left = Files.list(work.resolve("cwd"))) {
      assertTrue(left.noneMatch(f -> f.getFileName().toString().startsWith("hs_err")), "a JVM crashed");
    }
  }

  @Test
  void stderrLosesOnlyTheIncubatorWarningAndExitStatusAndStdoutSurvive() throws Exception {
    for (int status : new int[] {0, 1, 2, 3}) {
      Result r = fake(Map.of(), Integer.toString(status));
      assertEquals(status, r.status(), r.toString());
      assertTrue(r.out().startsWith("jvm: "), r.toString());
      assertTrue(r.out().endsWith("\nargs: " + status + "\nno newline at the end"), r.toString());
      assertEquals("a line on stderr\nnot the JVM's: " + INCUBATOR_WARNING + "\na last line without newline", r.err());
    }
    // the real CLI: one line, no warning before it
    Result real = ember("inspect", "nope.npy");
    assertEquals(List.of("ember inspect: nope.npy: no such file"), real.errLines(), real.toString());
  }

  @Test
  void sigtermToTheLauncherReachesJavaAndLeavesNoProcessBehind() throws Exception {
    Process p = start(fakeClasses.toString(), Map.of(), "sleep");
    // wait until java sleeps: its "sleeping" line has come through the filter
    InputStream err = p.getErrorStream();
    String seen = readUntil(err, "sleeping");
    List<ProcessHandle> children = p.descendants().toList();
    assertTrue(children.stream().anyMatch(h -> h.info().command().orElse("").endsWith("java")), children.toString());
    p.toHandle().destroy(); // SIGTERM to the launcher only (Process.destroy would close the streams too)
    assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the launcher did not end on SIGTERM");
    String rest = new String(err.readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(143, p.exitValue(), rest);
    assertTrue(rest.contains("shutdown hook ran"), "java did not get SIGTERM: " + seen + rest);
    for (ProcessHandle h : children) {
      h.onExit().get(30, TimeUnit.SECONDS);
      assertFalse(h.isAlive(), h + " outlived the launcher");
    }
  }

  /** Reads {@code in} up to and including {@code line}, within 60 s; what was read. */
  private static String readUntil(InputStream in, String line) throws IOException {
    StringBuilder seen = new StringBuilder();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!seen.toString().contains(line + "\n") && System.nanoTime() < deadline) {
      int b = in.read();
      if (b < 0) break;
      seen.append((char) b);
    }
    assertTrue(seen.toString().contains(line + "\n"), "no '" + line + "' in: " + seen);
    return seen.toString();
  }

  private static boolean have(String tool) {
    return Arrays.stream(System.getenv().getOrDefault("PATH", "").split(":")).anyMatch(d -> Files.isExecutable(Path.of(d, tool)));
  }

  @Test
  void ctrlCOnATerminalReachesJavaOnce() throws Exception {
    assumeTrue(have("script"), "needs script(1) (util-linux) for a pseudo-terminal");
    // script runs the launcher on a pseudo-terminal of its own; a ^C typed there is the terminal's SIGINT
    // to the whole foreground process group: the launcher, java and the stderr filter
    ProcessBuilder pb = new ProcessBuilder("script", "-qefc", root.resolve("ember") + " int", "/dev/null")
        .directory(Files.createDirectories(work.resolve("cwd")).toFile()).redirectErrorStream(true);
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    pb.environment().put("EMBER_CLASSPATH", fakeClasses.toString());
    pb.environment().remove("EMBER_JAVA_OPTS");
    Process p = pb.start();
    readUntil(p.getInputStream(), "waiting for SIGINT\r");
    p.getOutputStream().write(3); // ^C
    p.getOutputStream().flush();
    String rest = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertTrue(rest.contains("SIGINT received 1 time(s)"), rest);
    assertEquals(130, p.exitValue(), rest);
  }

  @Test
  void sigintToTheLauncherAloneReachesJava() throws Exception {
    assumeTrue(have("setsid"), "needs setsid(1) (util-linux) for a launcher without a terminal");
    ProcessBuilder pb = new ProcessBuilder("setsid", root.resolve("ember").toString(), "int")
        .directory(Files.createDirectories(work.resolve("cwd")).toFile());
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    pb.environment().put("EMBER_CLASSPATH", fakeClasses.toString());
    pb.environment().remove("EMBER_JAVA_OPTS");
    Process p = pb.start();
    readUntil(p.getErrorStream(), "waiting for SIGINT");
    assertEquals(0, new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).start().waitFor());
    String rest = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertEquals("SIGINT received 1 time(s)\n", rest);
    assertEquals(130, p.exitValue(), rest);
  }

  @Test
  void scriptsMvnWritesNoAnsiCodesWhenNotOnATerminal() throws Exception {
    // Maven 3.8 wrote ESC[0m to stdout and stderr even in batch mode (as it does for a build)
    ProcessBuilder pb = new ProcessBuilder(root.resolve("scripts/mvn").toString(), "--version").directory(work.toFile());
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    pb.environment().remove("MAVEN_OPTS");
    Process p = pb.start();
    Result r = finish(p);
    assertEquals(0, r.status(), r.toString());
    assertTrue(r.out().startsWith("Apache Maven "), r.toString());
    assertFalse(r.out().contains("\u001b") || r.err().contains("\u001b"), r.toString());
  }
}
