package dev.ember.cli;

import dev.ember.backend.cpu.Parallel;
import dev.ember.tensor.Device;
import java.io.PrintStream;
import java.util.Arrays;

/** The {@code ember} command. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  static int run(String[] args, PrintStream out, PrintStream err) {
    String cmd = args.length == 0 ? "help" : args[0];
    String[] rest = Arrays.copyOfRange(args, Math.min(1, args.length), args.length);
    try {
      return switch (cmd) {
        case "train" -> SpiralDemo.run(rest, out);
        case "inspect" -> Inspect.run(rest, out, err);
        case "info" -> info(out);
        case "help", "-h", "--help" -> help(out);
        default -> {
          err.println("ember: unknown command '" + cmd + "'");
          help(err);
          yield 2;
        }
      };
    } catch (IllegalArgumentException e) {
      err.println("ember " + cmd + ": " + e.getMessage());
      return 2;
    }
  }

  private static int info(PrintStream out) {
    out.println("ember 0.1.0");
    out.println("java:    " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")");
    out.println("backend: " + Device.CPU.backend().name());
    out.println("threads: " + Parallel.threads() + " (set with EMBER_NUM_THREADS)");
    return 0;
  }

  private static int help(PrintStream out) {
    out.println("""
        usage: ./ember COMMAND [options]

        commands:
          train   train an MLP on a generated 3-class spiral data set with the core API
                  (options: --epochs N, --seed S, --hidden H, --lr LR, --batch B)
          inspect FILE
                  each tensor's name, dtype, shape and statistics in a safetensors, .npy or .npz
                  file (on a bad file: one line naming the problem, exit status 2)
          info    print the JDK, the CPU backend in use and the thread count
          help    this text

        environment:
          EMBER_JAVA_OPTS    extra JVM options (e.g. -Xmx8g)
          EMBER_NUM_THREADS  worker threads for the CPU kernels (default: all cores)""");
    return 0;
  }
}
