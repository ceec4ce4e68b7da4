package dev.ember.cli;

import dev.ember.data.FashionLike;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import dev.ember.data.FashionMnist;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ember train} end to end on a small generated data set in Fashion-MNIST's IDX layout
 * (each class a brighter square in its own place, plus noise), so the test needs neither the
 * real data nor a network.
 */
class TrainCommandTest {
  @TempDir static Path data;

  @BeforeAll
  static void writeData() throws IOException {
    Random rnd = new Random(1);
    FashionLike.write(data, "train", 600, rnd);
    FashionLike.write(data, "t10k", 200, rnd);
  }

  /** What one in-process {@code ember} call gave. */
  record Result(int code, String out, String err) {}

  static Result call(FashionMnist.Sources sources, String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8), e = new PrintStream(err, true, StandardCharsets.UTF_8);
    int code;
    if (sources == null) {
      code = Main.run(args, o, e);
    } else {
      try {
        code = TrainCommand.run(java.util.Arrays.copyOfRange(args, 1, args.length), o, e, sources);
      } catch (IOException | IllegalArgumentException x) {
        e.println("ember train: " + x.getMessage()); // as Main reports them
        code = x instanceof IOException ? 1 : 2;
      }
    }
    return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void memoryBudgetIsPlannedOrFailsBeforeTraining(@TempDir Path tmp) {
    Result r = call(null, "train", "--data", data.toString(), "--model", "mlp", "--epochs", "1", "--batch-size", "32",
        "--memory-budget", "1k", "--out", tmp.resolve("small").toString(), "--quiet");
    assertEquals(1, r.code(), r.out() + r.err());
    assertTrue(r.err().startsWith("ember train: memory budget 0.0 MiB cannot be met: a training step peaks at "), r.err());
    assertTrue(r.err().contains("hint: raise the budget to at least "), r.err());
    Result ok = call(null, "train", "--data", data.toString(), "--model", "mlp", "--epochs", "1", "--batch-size", "32",
        "--memory-budget", "2g", "--out", tmp.resolve("big").toString(), "--quiet");
    assertEquals(0, ok.code(), ok.out() + ok.err());
    assertTrue(ok.out().contains("memory budget 2048.0 MiB: a step peaks at "), ok.out());
    assertTrue(ok.out().contains("; it fits, nothing checkpointed; measured peak "), ok.out());
  }

  private static String[] run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    String o = out.toString(StandardCharsets.UTF_8);
    String e = err.toString(StandardCharsets.UTF_8);
    assertEquals(0, code, "stdout:\n" + o + "\nstderr:\n" + e);
    return o.split("\n");
  }

  @Test
  void trainsLeavesARunFolderAndResumesToTheSameBytes(@TempDir Path tmp) throws IOException {
    Path full = tmp.resolve("full");
    String[] lines = run("train", "--data", data.toString(), "--model", "mlp", "--epochs", "3", "--batch-size", "32",
        "--checkpoint-every", "7", "--out", full.toString(), "--quiet");
    String last = lines[lines.length - 1];
    assertTrue(last.matches("test_accuracy=[01]\\.\\d{4}"), last);
    assertTrue(Double.parseDouble(last.substring("test_accuracy=".length())) > 0.9, last);
    for (String f : List.of("metrics.csv", "model.safetensors", "report.html", "confusion_matrix.json", "profile.json",
        "run.properties", "checkpoints")) {
      assertTrue(Files.exists(full.resolve(f)), f + " missing in " + full);
    }
    List<String> csv = Files.readAllLines(full.resolve("metrics.csv"));
    assertEquals(4, csv.size(), "header + 3 epochs: " + csv);
    assertTrue(csv.get(0).contains("val_accuracy"), csv.get(0));

    // the same run stopped after 1 epoch, then resumed up to 3
    Path part = tmp.resolve("part");
    String[] one = run("train", "--data", data.toString(), "--model", "mlp", "--epochs", "1", "--batch-size", "32",
        "--checkpoint-every", "7", "--out", part.toString(), "--quiet");
    assertTrue(one[0].contains(", batch 32, 1 epoch, seed 0, "), one[0]);
    assertTrue(one[one.length - 2].startsWith("ember train: 1 epoch, median "), one[one.length - 2]);
    String[] resumed = run("train", "--resume", part.toString(), "--epochs", "3", "--data", data.toString(), "--quiet");
    assertTrue(resumed[0].startsWith("ember train: resuming from "), resumed[0]);
    assertArrayEquals(Files.readAllBytes(full.resolve("model.safetensors")), Files.readAllBytes(part.resolve("model.safetensors")),
        "model.safetensors of the resumed run differs from the uninterrupted run's");
    assertEquals(lines[lines.length - 1], resumed[resumed.length - 1]);
  }

  @Test
  void badOptionsSayWhatIsWrong() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Main.run(new String[] {"train", "--model", "resnet"}, new PrintStream(new ByteArrayOutputStream()),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(2, code);
    assertEquals("ember train: --model must be one of mlp, lenet, convnet, got 'resnet'\n", err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void moreWorkersThanCoresIsWarnedAbout(@TempDir Path tmp) {
    int cores = Runtime.getRuntime().availableProcessors();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Main.run(new String[] {"train", "--workers", Integer.toString(cores + 1), "--data", tmp.resolve("none").toString()},
        new PrintStream(new ByteArrayOutputStream()), new PrintStream(err, true, StandardCharsets.UTF_8));
    String e = err.toString(StandardCharsets.UTF_8);
    assertEquals(2, code, e);
    assertTrue(e.startsWith("ember train: warning: --workers " + (cores + 1) + " is more than this machine's "), e);
    assertTrue(e.endsWith("--data " + tmp.resolve("none") + ": no such folder\n"), e);
  }

  private static String[] train(Path out, String... more) {
    List<String> args = new java.util.ArrayList<>(List.of("train", "--data", data.toString(), "--model", "mlp", "--epochs", "1",
        "--batch-size", "32", "--out", out.toString(), "--quiet"));
    args.addAll(List.of(more));
    return args.toArray(String[]::new);
  }

  private static List<String> names(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  /** Every file and folder under {@code dir} with its modification time. */
  private static Map<String, FileTime> mtimes(Path dir) throws IOException {
    Map<String, FileTime> m = new TreeMap<>();
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.toList()) if (Files.isRegularFile(p)) m.put(dir.relativize(p).toString(), Files.getLastModifiedTime(p));
    }
    return m;
  }

  @Test
  void anOutFolderHoldingARunIsRefusedAndOnlyOverwriteReplacesItsFiles(@TempDir Path tmp) throws IOException {
    Path x = tmp.resolve("x");
    assertEquals(0, call(null, train(x, "--checkpoint-every", "5")).code());
    Files.writeString(x.resolve("notes.txt"), "mine");
    Files.writeString(x.resolve(RunFolder.CHECKPOINTS).resolve("README"), "mine too");
    assertEquals(List.of("step-00000010.ckpt", "step-00000015.ckpt", "step-00000019.ckpt", "README").stream().sorted().toList(),
        names(x.resolve("checkpoints")));
    Map<String, FileTime> before = mtimes(x);

    Result again = call(null, train(x, "--batch-size", "64"));
    assertEquals(2, again.code());
    assertEquals("ember train: " + x + " already holds a run (1 epoch, last checkpoint step 19); use --resume " + x
        + " to continue it or choose another --out (or add --overwrite to delete it and start again)\n", again.err());
    assertEquals(before, mtimes(x), "a refused run touches nothing");

    Result over = call(null, train(x, "--batch-size", "64", "--overwrite"));
    assertEquals(0, over.code(), over.err());
    assertEquals(List.of("README", "step-00000010.ckpt"), names(x.resolve("checkpoints")), "only the new run's checkpoint (600/64 = 10 steps)");
    assertEquals("mine", Files.readString(x.resolve("notes.txt")), "files that are not the run's stay");
    assertEquals(2, Files.readAllLines(x.resolve("metrics.csv")).size(), "header + the new run's one epoch");
    assertTrue(Files.readString(x.resolve("run.properties")).contains("batch_size=64"));

    Path empty = Files.createDirectories(tmp.resolve("empty"));
    assertEquals(0, call(null, train(empty)).code(), "an existing empty folder is fine");
    assertEquals(2, call(null, "train", "--resume", x.toString(), "--overwrite").code());
  }

  @Test
  void aFolderInUseByAnotherRunIsRefused(@TempDir Path tmp) throws IOException {
    Path x = tmp.resolve("x");
    assertEquals(0, call(null, train(x)).code());
    Map<String, FileTime> before = mtimes(x);
    try (RunFolder running = RunFolder.resume(x)) { // holds the folder's lock, as a running ./ember train --resume does
      String refused = "ember train: " + x + " is in use by another ./ember train; wait for it to end or choose another folder\n";
      Result r = call(null, "train", "--resume", x.toString(), "--epochs", "2", "--data", data.toString(), "--quiet");
      assertEquals(2, r.code());
      assertEquals(refused, r.err());
      r = call(null, train(x, "--overwrite"));
      assertEquals(refused, r.err(), "--overwrite must not delete the files of a run in progress");
    }
    assertEquals(before, mtimes(x));
    assertFalse(Files.exists(x.resolve(RunFolder.LOCK)), "the lock file goes when the run ends");
  }

  @Test
  void staleTemporaryFilesAreRemovedOnStartAndOnResume(@TempDir Path tmp) throws IOException {
    Path x = tmp.resolve("x");
    Files.createDirectories(x.resolve("checkpoints"));
    Files.writeString(x.resolve(".run.properties.5d1e2a0f3c.tmp"), "half");
    Files.writeString(x.resolve("checkpoints/.step-00000007.ckpt.7fffab12.tmp"), "half");
    Files.writeString(x.resolve(".keep.me"), "not a temporary file of ours");
    assertEquals(0, call(null, train(x)).code());
    assertEquals(List.of(".keep.me", "checkpoints", "confusion_matrix.json", "metrics.csv", "model.safetensors", "profile.json",
        "report.html", "run.properties"), names(x));
    assertEquals(List.of("step-00000019.ckpt"), names(x.resolve("checkpoints")));

    Files.writeString(x.resolve("checkpoints/.step-00000019.ckpt.a1b2c3.tmp"), "half");
    Files.writeString(x.resolve(".metrics.csv.0123abcd.tmp"), "half");
    Result r = call(null, "train", "--resume", x.toString(), "--epochs", "2", "--data", data.toString(), "--quiet");
    assertEquals(0, r.code(), r.err());
    assertFalse(names(x).contains(".metrics.csv.0123abcd.tmp"), names(x).toString());
    assertEquals(List.of("step-00000019.ckpt", "step-00000038.ckpt"), names(x.resolve("checkpoints")));
  }

  @Test
  void aDataFolderNamedIsUsedOrTheRunFailsWithoutFallingBack(@TempDir Path tmp) throws IOException {
    Path missing = tmp.resolve("nope"), out = tmp.resolve("run");
    Result r = call(null, "train", "--data", missing.toString(), "--out", out.toString(), "--quiet");
    assertEquals(2, r.code());
    assertEquals("ember train: --data " + missing + ": no such folder\n", r.err());
    Path partial = Files.createDirectories(tmp.resolve("partial"));
    Files.copy(data.resolve("train-labels-idx1-ubyte.gz"), partial.resolve("train-labels-idx1-ubyte.gz"));
    Files.copy(data.resolve("t10k-images-idx3-ubyte.gz"), partial.resolve("t10k-images-idx3-ubyte"));
    r = call(null, "train", "--data", partial.toString(), "--out", out.toString(), "--quiet");
    assertEquals(2, r.code());
    assertEquals("ember train: --data " + partial + ": no train-images-idx3-ubyte(.gz), t10k-labels-idx1-ubyte(.gz) there\n", r.err());
    assertFalse(Files.exists(out), "no run folder for a run that cannot start");
  }

  /** Sources that find nothing on disk and download from a closed port of 127.0.0.1. */
  private static FashionMnist.Sources offline(Path tmp) throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort(); // closed again: nothing listens there
    }
    return new FashionMnist.Sources(Map.of(), tmp.resolve("home"), tmp.resolve("no-system-data"),
        URI.create("http://127.0.0.1:" + port + "/"), FashionMnist.SHA256);
  }

  @Test
  void anOutThatCannotBeCreatedSaysWhyBeforeTheDataIsLoaded(@TempDir Path tmp) throws IOException {
    FashionMnist.Sources offline = offline(tmp); // the data step would fail differently: the folder is checked first
    Path file = Files.writeString(tmp.resolve("a-file"), "x");
    Result r = call(offline, "train", "--out", file.toString(), "--quiet");
    assertEquals(1, r.code());
    assertEquals("ember train: cannot create run folder " + file + ": it is a file\n", r.err());
    r = call(offline, "train", "--out", file.resolve("x").toString(), "--quiet");
    assertEquals("ember train: cannot create run folder " + file.resolve("x") + ": " + file + " is a file\n", r.err());
    r = call(offline, "train", "--out", "/proc/x", "--quiet");
    assertEquals("ember train: cannot create run folder /proc/x: /proc does not take new folders (no such file or directory)\n",
        r.err());
    Path p = Path.of("/mnt/ro/x");
    assertEquals("read-only file system", RunFolder.why(p, new java.nio.file.FileSystemException(p.toString(), null,
        "Read-only file system")));
    assertEquals("permission denied", RunFolder.why(p, new java.nio.file.AccessDeniedException(p.toString())));
    assertFalse(Files.exists(tmp.resolve("home")));
  }

  @Test
  void aFailedDownloadSaysWhyAndLeavesNoEmptyFolders(@TempDir Path tmp) throws IOException {
    FashionMnist.Sources offline = offline(tmp);
    Path out = tmp.resolve("runs/first");
    Result r = call(offline, "train", "--out", out.toString(), "--quiet");
    assertEquals(1, r.code());
    assertEquals("ember train: could not download Fashion-MNIST from " + offline.baseUrl().getAuthority()
        + ": connection refused; install dataset-fashion-mnist or pass --data DIR\n", r.err());
    assertFalse(Files.exists(tmp.resolve("home")), "no empty cache folder");
    assertFalse(Files.exists(tmp.resolve("runs")), "no empty run folder, nor the runs/ made for it");

    Path existing = Files.createDirectories(tmp.resolve("existing"));
    assertEquals(1, call(offline, "train", "--out", existing.toString(), "--quiet").code());
    assertEquals(List.of(), names(existing), "a folder that existed stays, emptied of what the failed run wrote");

    Path done = tmp.resolve("done");
    assertEquals(0, call(null, train(done)).code());
    Map<String, FileTime> before = mtimes(done);
    assertEquals(1, call(offline, "train", "--resume", done.toString(), "--epochs", "2", "--quiet").code());
    assertEquals(before, mtimes(done), "a resumed run's folder is never removed or changed by a failure to start");
  }

  @Test
  void resumingToEpochsAlreadyDoneSaysSoAndRewritesNothing(@TempDir Path tmp) throws IOException {
    Path x = tmp.resolve("x");
    Result first = call(null, train(x, "--epochs", "2"));
    assertEquals(0, first.code(), first.err());
    assertTrue(first.out().contains(", batch 32, 2 epochs, seed 0,"), first.out());
    Map<String, FileTime> before = mtimes(x);
    for (String epochs : List.of("1", "2")) {
      Result r = call(null, "train", "--resume", x.toString(), "--epochs", epochs, "--data", data.toString());
      assertEquals(0, r.code(), r.err());
      assertEquals("ember train: " + x + " already has 2 epochs; nothing to do\n", r.out());
    }
    Result r = call(null, "train", "--resume", x.toString(), "--data", data.toString());
    assertEquals("ember train: " + x + " already has 2 epochs; nothing to do\n", r.out());
    assertEquals(before, mtimes(x), "nothing rewritten");
  }

  @Test
  void progressWithoutATerminalIsOneLinePerEpochAndOneEpochIsSingular(@TempDir Path tmp) {
    Result r = call(null, "train", "--data", data.toString(), "--model", "mlp", "--epochs", "2", "--batch-size", "32",
        "--out", tmp.resolve("x").toString());
    assertEquals(0, r.code(), r.err());
    List<String> progress = r.out().lines().filter(l -> l.startsWith("epoch ")).toList();
    assertEquals(2, progress.size(), r.out()); // the test takes far less than 30 s per epoch
    assertTrue(progress.get(1).startsWith("epoch 2/2 19/19 "), progress.get(1));
    Result one = call(null, train(tmp.resolve("y")));
    assertTrue(one.out().contains(", batch 32, 1 epoch, seed 0,"), one.out());
    assertTrue(one.out().contains("\nember train: 1 epoch, median "), one.out());
  }
}
