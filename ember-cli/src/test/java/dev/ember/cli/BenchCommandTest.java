package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchCommandTest {
  @Test
  void runsTheCheckoutsRunnerWithTheArgumentsAndItsExitStatus(@TempDir Path home) throws Exception {
    Files.createDirectories(home.resolve("bench"));
    Path log = home.resolve("args.txt");
    Files.writeString(home.resolve("bench/run_benchmarks.sh"), "echo \"$@\" > '" + log + "'\nexit 3\n");
    String old = System.getProperty("ember.home");
    System.setProperty("ember.home", home.toString());
    try {
      assertEquals(3, BenchCommand.run(new String[] {"-c", "training,memory", "--threads", "1,2", "--peer"},
          new PrintStream(PrintStream.nullOutputStream())));
      assertEquals("-c training,memory --threads 1,2 --peer\n", Files.readString(log));
      Files.delete(home.resolve("bench/run_benchmarks.sh"));
      var missing = assertThrows(IllegalArgumentException.class, () -> BenchCommand.run(new String[0], System.err));
      assertEquals("no benchmark runner at " + home.resolve("bench/run_benchmarks.sh"), missing.getMessage());
      System.clearProperty("ember.home");
      var e = assertThrows(IllegalArgumentException.class, () -> BenchCommand.run(new String[0], System.err));
      assertEquals("the benchmark runner lives in the Ember checkout; run ./ember bench from there "
          + "(or start the JVM with -Dember.home=DIR)", e.getMessage());
    } finally {
      if (old == null) System.clearProperty("ember.home");
      else System.setProperty("ember.home", old);
    }
  }
}
