package dev.ember.bench;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** The exit status and captured stdout and stderr of one call to a runner's {@code run(args, out, err)}. */
record CommandRun(int status, String out, String err) {
  /** A runner's entry point: {@code Compare::run}, {@code Report::run}, {@code MemoryProbe::run}. */
  interface Entry {
    int run(String[] args, PrintStream out, PrintStream err);
  }

  static CommandRun of(Entry entry, String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status = entry.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new CommandRun(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }
}
