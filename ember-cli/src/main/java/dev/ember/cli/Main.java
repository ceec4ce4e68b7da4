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
        case "train" -> TrainCommand.run(rest, out, err);
        case "summary" -> SummaryCommand.run(rest, out);
        case "bench" -> BenchCommand.run(rest, err);
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
    } catch (java.io.IOException | java.io.UncheckedIOException | dev.ember.train.NonFiniteStepException e) {
      err.println("ember " + cmd + ": " + e.getMessage());
      return 1;
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
          train   train a model on Fashion-MNIST and report its test accuracy (last line:
                  test_accuracy=0.xxxx); leaves a run folder with metrics.csv, checkpoints/,
                  model.safetensors and report.html
                  --model mlp|lenet|convnet (lenet)   --epochs N (mlp 10, others 5)
                  --batch-size B (128)   --optimizer adam|adamw|sgd (adam)   --lr LR (0.001)
                  --scheduler none|cosine|step (none)   --seed S (0)   --threads N
                  --workers N (loader threads, 1)   --out DIR (runs/MODEL-TIME)
                  --resume DIR (continue that run up to --epochs; same result as uninterrupted)
                  --checkpoint-every N (also checkpoint every N steps; each epoch always)
                  --data DIR (else $EMBER_DATA, the user cache, the Debian package's folder,
                  then a download into the cache)   --quiet (no progress bar)
          summary --model mlp|lenet|convnet
                  per layer: output shape, parameters, memory and forward FLOPs
          bench [options]
                  the benchmark suite (bench/run_benchmarks.sh): -c CATEGORY[,...] (training,
                  ops, losses, metrics, schedulers, callbacks, memory, gemm, nn, optim; default
                  all)   --threads N[,N]   --peer (PyTorch side by side, needs /usr/bin/python3
                  with torch)   --only P   --repeats N   -o DIR   -s (summary.md)
                  -b BASELINE (exit status 1 if a case is more than 10% worse)   -h (all options)
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
