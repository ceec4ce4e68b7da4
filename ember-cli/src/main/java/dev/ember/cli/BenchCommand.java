package dev.ember.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code ember bench [options]}: runs the benchmark suite ({@code bench/run_benchmarks.sh} in the
 * Ember checkout, which the launcher names with {@code -Dember.home}) with the same arguments, its
 * output going straight to the terminal; the exit status is the script's (1: regressions against
 * a baseline given with {@code -b}).
 */
final class BenchCommand {
  private BenchCommand() {}

  static int run(String[] args, PrintStream err) throws IOException {
    String home = System.getProperty("ember.home");
    if (home == null) {
      throw new IllegalArgumentException("the benchmark runner lives in the Ember checkout; run ./ember bench from there "
          + "(or start the JVM with -Dember.home=DIR)");
    }
    Path script = Path.of(home, "bench", "run_benchmarks.sh");
    if (!Files.isRegularFile(script)) throw new IllegalArgumentException("no benchmark runner at " + script);
    List<String> cmd = new ArrayList<>(List.of("bash", script.toString()));
    cmd.addAll(List.of(args));
    try {
      return new ProcessBuilder(cmd).inheritIO().start().waitFor();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      err.println("ember bench: interrupted");
      return 130;
    }
  }
}
