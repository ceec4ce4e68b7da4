package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ember train}'s options: {@link TrainCommand#parse}, and through {@link Main#run} the one-line errors. */
class TrainOptionsTest {
  @TempDir Path tmp;

  private static String error(String... args) {
    return assertThrows(IllegalArgumentException.class, () -> TrainCommand.parse(args)).getMessage();
  }

  /** A run folder whose run.properties holds these lines. */
  private Path run(String... lines) throws IOException {
    Path dir = Files.createDirectories(tmp.resolve("runs/x"));
    Files.writeString(dir.resolve("run.properties"), "#ember train settings (read by --resume)\n" + String.join("\n", lines) + "\n");
    return dir;
  }

  private Path savedRun() throws IOException {
    return run("model=mlp", "epochs=3", "batch_size=32", "optimizer=sgd", "lr=0.001", "scheduler=cosine", "seed=7",
        "checkpoint_every=5");
  }

  private static String[] resume(Path dir, String... more) {
    List<String> args = new ArrayList<>(List.of("--resume", dir.toString()));
    args.addAll(Arrays.asList(more));
    return args.toArray(String[]::new);
  }

  @Test
  void optionsTakeSpaceOrEqualsValues() {
    TrainCommand.Settings s = TrainCommand.parse(new String[] {"--model", "mlp", "--epochs=2", "--lr", "1e-2", "--seed", "-3",
        "--quiet", "--out=runs/a"});
    assertEquals("mlp", s.model);
    assertEquals(2, s.epochs());
    assertEquals(0.01, s.lr);
    assertEquals(-3, s.seed);
    assertEquals(true, s.quiet);
    assertEquals(Path.of("runs/a"), s.out);
  }

  @Test
  void theLoaderGetsAThreadOnlyWhenTheKernelsLeaveACoreFree() {
    TrainCommand.Settings auto = TrainCommand.parse(new String[0]);
    assertEquals(0, auto.loaderThreads(2, 2), "2 kernel threads on 2 cores: batches on the training thread");
    assertEquals(0, auto.loaderThreads(4, 2));
    assertEquals(1, auto.loaderThreads(1, 2), "a core left free");
    assertEquals(1, auto.loaderThreads(0, 8), "training on another device");
    assertEquals(2, TrainCommand.parse(new String[] {"--workers", "2"}).loaderThreads(2, 2), "--workers wins");
    assertEquals(0, TrainCommand.parse(new String[] {"--workers", "0"}).loaderThreads(1, 8));
  }

  @Test
  void memoryBudgetTakesASizeWithASuffix() {
    assertEquals(300L << 20, TrainCommand.parse(new String[] {"--memory-budget", "300m"}).memoryBudget);
    assertEquals(2L << 30, TrainCommand.parse(new String[] {"--memory-budget=2G"}).memoryBudget);
    assertEquals(512L << 10, TrainCommand.parse(new String[] {"--memory-budget", "512k"}).memoryBudget);
    assertEquals(0, TrainCommand.parse(new String[] {}).memoryBudget);
    assertEquals("--memory-budget: expected a size such as 300m, 2g, 512k or 1048576 (bytes; k/m/g = KiB/MiB/GiB), got"
        + " 'lots'", error("--memory-budget", "lots"));
    assertEquals("--memory-budget: the size must be at least 1 byte and finite, got '0m'", error("--memory-budget", "0m"));
  }

  @Test
  void unknownOptionsAndStrayWordsSaySo() {
    assertEquals("unknown option --foo (see ./ember train --help)", error("--foo"));
    assertEquals("unknown option --foo (see ./ember train --help)", error("--foo", "3"));
    assertEquals("unknown option --foo (see ./ember train --help)", error("--epochs", "2", "--foo=3"));
    assertEquals("unknown option -x (see ./ember train --help)", error("-x"));
    assertEquals("unexpected argument 'mlp' (see ./ember train --help)", error("--epochs", "2", "mlp"));
    assertEquals("unexpected argument 'lenet' (see ./ember train --help)", error("lenet"));
    assertEquals("option --epochs needs a value (see ./ember train --help)", error("--epochs"));
    assertEquals("option --out needs a value (see ./ember train --help)", error("--out", "--quiet"));
    assertEquals("option --quiet takes no value, got 'yes'", error("--quiet=yes"));
    assertEquals("--epochs must be a positive integer, got 4294967297", error("--epochs", "4294967297"));
    assertEquals("--lr must be a positive number, got 'fast'", error("--lr", "fast"));
  }

  @Test
  void errorsAreOneLineWithStatus2() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status = Main.run(new String[] {"train", "--model", "mlp", "stray"}, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(2, status);
    assertEquals("ember train: unexpected argument 'stray' (see ./ember train --help)\n", err.toString(StandardCharsets.UTF_8));
    assertEquals("", out.toString(StandardCharsets.UTF_8));
  }

  @Test
  void resumeTakesTheRunsSettings() throws IOException {
    Path dir = savedRun();
    TrainCommand.Settings s = TrainCommand.parse(resume(dir));
    assertEquals("mlp", s.model);
    assertEquals(3, s.epochs());
    assertEquals(32, s.batchSize);
    assertEquals("sgd", s.optimizer);
    assertEquals(0.001, s.lr);
    assertEquals("cosine", s.scheduler);
    assertEquals(7, s.seed);
    assertEquals(5, s.checkpointEvery);
    assertEquals(dir, s.out);
    TrainCommand.Settings more = TrainCommand.parse(resume(dir, "--epochs", "6", "--checkpoint-every", "0", "--out", dir + "/"));
    assertEquals(6, more.epochs());
    assertEquals(0, more.checkpointEvery);
  }

  @Test
  void resumeAcceptsTheSameValuesAgain() throws IOException {
    Path dir = savedRun();
    // the command that started the run, with --resume added; 1e-3 and 0.0010 are 0.001
    for (String lr : List.of("0.001", "1e-3", "0.0010", "1.0E-3")) {
      TrainCommand.Settings s = TrainCommand.parse(resume(dir, "--model", "mlp", "--epochs", "3", "--batch-size", "32",
          "--optimizer", "sgd", "--lr", lr, "--scheduler", "cosine", "--seed", "7", "--quiet"));
      assertEquals(0.001, s.lr);
      assertEquals("mlp", s.model);
    }
    TrainCommand.parse(resume(dir, "--seed", "07", "--batch-size=32"));
  }

  @Test
  void resumeRefusesConflictingValuesNamingBoth() throws IOException {
    Path dir = savedRun();
    String at = "--resume " + dir + ": the run was trained with ";
    assertEquals(at + "--lr 0.001, not 0.01; drop --lr or start a new run", error(resume(dir, "--lr", "0.01")));
    assertEquals(at + "--model mlp, not lenet; drop --model or start a new run", error(resume(dir, "--model", "lenet")));
    assertEquals(at + "--batch-size 32, not 64; drop --batch-size or start a new run", error(resume(dir, "--batch-size", "64")));
    assertEquals(at + "--optimizer sgd, not adam; drop --optimizer or start a new run", error(resume(dir, "--optimizer", "adam")));
    assertEquals(at + "--scheduler cosine, not none; drop --scheduler or start a new run",
        error(resume(dir, "--scheduler", "none")));
    assertEquals(at + "--seed 7, not 8; drop --seed or start a new run", error(resume(dir, "--model", "mlp", "--seed", "8")));
    assertEquals("--resume continues the run in its own folder; drop --out or make it the same folder",
        error(resume(dir, "--out", tmp.resolve("elsewhere").toString())));
  }

  @Test
  void resumeOfAMissingOrForeignFolderSaysWhich() throws IOException {
    Path missing = tmp.resolve("runs/nope");
    assertEquals("--resume " + missing + ": no such folder", error("--resume", missing.toString()));
    Path file = Files.writeString(tmp.resolve("notes.txt"), "x");
    assertEquals("--resume " + file + ": not a folder", error("--resume", file.toString()));
    Path empty = Files.createDirectories(tmp.resolve("empty"));
    assertEquals("--resume " + empty + ": not a run folder (it has no run.properties); give a folder that ./ember train wrote",
        error("--resume", empty.toString()));
  }

  @Test
  void runPropertiesWithMissingOrBadKeysNameTheKeyAndTheFile() throws IOException {
    String keys = " (a run's run.properties holds model, epochs, batch_size, optimizer, lr, scheduler, seed); "
        + "restore it or start a new run";
    Path dir = run("model=mlp", "epochs=3", "optimizer=sgd", "lr=0.001", "scheduler=none", "seed=0");
    Path file = dir.resolve("run.properties");
    assertEquals(file + " has no 'batch_size'" + keys, error(resume(dir)));
    // a key's absence is reported even when the same option is given on the command line
    assertEquals(file + " has no 'batch_size'" + keys, error(resume(dir, "--batch-size", "32")));

    run("model=mlp", "epochs=3", "batch_size=32", "optimizer=sgd", "lr=", "scheduler=none", "seed=0");
    assertEquals(file + ": 'lr' must be a positive number, got ''", error(resume(dir)));
    run("model=resnet", "epochs=3", "batch_size=32", "optimizer=sgd", "lr=0.1", "scheduler=none", "seed=0");
    assertEquals(file + ": 'model' must be one of mlp, lenet, convnet, got 'resnet'", error(resume(dir)));
    run("model=mlp", "epochs=three", "batch_size=32", "optimizer=sgd", "lr=0.1", "scheduler=none", "seed=0");
    assertEquals(file + ": 'epochs' must be an integer, got 'three'", error(resume(dir)));
    run("model=mlp", "epochs=3", "batch_size=32", "optimizer=sgd", "lr=0.1", "scheduler=none", "seed=0", "checkpoint_every=-1");
    assertEquals(file + ": 'checkpoint_every' must be >= 0, got -1", error(resume(dir)));
    // checkpoint_every may be absent; trailing blanks do not matter
    run("model=mlp ", "epochs=3", "batch_size=32", "optimizer=sgd", "lr=0.1", "scheduler=none", "seed=0");
    assertEquals(0, TrainCommand.parse(resume(dir)).checkpointEvery);
  }

  @Test
  void countsAreSingularForOne() {
    assertEquals("1 epoch", Main.count(1, "epoch"));
    assertEquals("0 epochs", Main.count(0, "epoch"));
    assertEquals("2 threads", Main.count(2, "thread"));
  }
}
