package dev.ember.bench;

/**
 * Options of the bench mains. A bad option or value is one line on stderr naming the bench, the option and the
 * value, and exit status 2 — not a {@link NumberFormatException}'s stack trace. Only {@link BadOption} is caught that
 * way: any other exception from the benchmark itself keeps its stack trace.
 */
final class BenchArgs {
  private BenchArgs() {}

  /** A bad command-line option or value; its message is what the user sees. */
  static final class BadOption extends IllegalArgumentException {
    BadOption(String message) {
      super(message);
    }
  }

  /** A bench main's body. */
  @FunctionalInterface
  interface Body {
    void run(String[] args) throws Throwable;
  }

  /** Runs {@code body} with {@code args}, turning a {@link BadOption} into one line on stderr and exit status 2. */
  static void main(String[] args, Body body) throws Throwable {
    try {
      body.run(args);
    } catch (BadOption e) {
      System.err.println(e.getMessage());
      System.exit(2);
    }
  }

  /** The value after {@code args[i]}, or a {@link BadOption} when the option is the last argument. */
  static String value(String bench, String[] args, int i) {
    if (i + 1 >= args.length) throw new BadOption(bench + ": " + args[i] + " needs a value");
    return args[i + 1];
  }

  /** {@code value} as an integer > 0. */
  static int positiveInt(String bench, String option, String value) {
    try {
      int n = Integer.parseInt(value.trim());
      if (n >= 1) return n;
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new BadOption(bench + ": " + option + " must be a positive integer, got '" + value + "'");
  }

  /** {@code value} as a finite number > 0. */
  static double positive(String bench, String option, String value) {
    try {
      double d = Double.parseDouble(value.trim());
      if (d > 0 && Double.isFinite(d)) return d;
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new BadOption(bench + ": " + option + " must be a number > 0, got '" + value + "'");
  }

  /** An unknown option, naming the ones {@code bench} accepts. */
  static BadOption unknown(String bench, String option, String expected) {
    return new BadOption(bench + ": unknown option " + option + " (expected " + expected + ")");
  }
}
