package dev.ember.cli;

import dev.ember.tensor.Device;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

/**
 * The {@code ember} command. Every command answers {@code -h}/{@code --help} with its part of the
 * help on stdout and exit status 0; a mistake on the command line is one line on stderr, {@code ember
 * COMMAND: problem}, and exit status 2; an I/O failure exit status 1.
 */
public final class Main {
  /** Ember's version, as in the poms (without -SNAPSHOT). */
  static final String VERSION = "0.1.0";

  private Main() {}

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  static int run(String[] args, PrintStream out, PrintStream err) {
    String cmd = args.length == 0 ? "help" : args[0];
    String[] rest = Arrays.copyOfRange(args, Math.min(1, args.length), args.length);
    try {
      // bench's options (-h among them) are the benchmark runner's, which prints its own help
      if (!cmd.equals("bench") && help(cmd) != null && wantsHelp(rest)) {
        out.println("usage: " + help(cmd) + "\n\n" + ENVIRONMENT);
        return 0;
      }
      return switch (cmd) {
        case "train" -> TrainCommand.run(rest, out, err);
        case "summary" -> SummaryCommand.run(rest, out);
        case "bench" -> BenchCommand.run(rest, err);
        case "inspect" -> Inspect.run(rest, out, err);
        case "export" -> ExportCommand.run(rest, out);
        case "info" -> {
          noArguments("info", rest);
          yield info(out, true);
        }
        case "version", "--version", "-V" -> {
          noArguments(cmd, rest);
          yield info(out, false);
        }
        case "help", "-h", "--help" -> help(rest, out);
        default -> {
          err.println("ember: " + (cmd.startsWith("-") ? "unknown option " + cmd : "unknown command '" + cmd + "'")
              + " (commands: train, summary, bench, inspect, export, info, version, help; see ./ember help)");
          yield 2;
        }
      };
    } catch (IllegalArgumentException e) {
      err.println("ember " + cmd + ": " + e.getMessage());
      return 2;
    } catch (java.io.IOException | java.io.UncheckedIOException | dev.ember.train.NonFiniteStepException
        | dev.ember.train.summary.MemoryBudgetException e) {
      err.println("ember " + cmd + ": " + e.getMessage());
      return 1;
    }
  }

  /** {@code n} and the noun, in the plural unless n is 1: "1 epoch", "3 epochs". */
  static String count(long n, String noun) {
    return n + " " + noun + (n == 1 ? "" : "s");
  }

  private static boolean wantsHelp(String[] args) {
    for (String a : args) if (a.equals("-h") || a.equals("--help")) return true;
    return false;
  }

  private static void noArguments(String cmd, String[] rest) {
    Args it = new Args(cmd, rest);
    if (it.hasNext()) {
      it.next();
      throw it.unknown();
    }
  }

  private static int info(PrintStream out, boolean threads) {
    out.println("ember " + VERSION);
    out.println("java:    " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")");
    out.println("backend: " + Device.CPU.backend().name());
    out.println("devices: " + devices());
    if (threads) {
      out.println("threads: " + Device.CPU.backend().threads() + " (set with EMBER_NUM_THREADS or --threads)");
    }
    return 0;
  }

  /** {@code cpu}, then each other device type served here with its devices: {@code cpu, cuda:0, cuda:1}. */
  static String devices() {
    StringBuilder sb = new StringBuilder("cpu");
    for (String type : Device.types()) {
      if (type.equals("cpu")) continue;
      int n = Device.count(type);
      if (n == 0) sb.append(", ").append(type).append(" (no device found)");
      for (int i = 0; i < n; i++) sb.append(", ").append(type).append(':').append(i);
    }
    return sb.toString();
  }

  private static int help(String[] rest, PrintStream out) {
    if (rest.length == 1 && help(rest[0]) != null) {
      out.println("usage: " + help(rest[0]) + "\n\n" + ENVIRONMENT);
      return 0;
    }
    if (rest.length > 0) {
      throw new IllegalArgumentException("no command '" + rest[0] + "' (commands: " + String.join(", ", COMMANDS) + ")");
    }
    StringBuilder sb = new StringBuilder("""
        usage: ./ember COMMAND [options]    (./ember COMMAND --help: that command's part of this text;
                                             options take a value as --name VALUE or --name=VALUE)
        """);
    for (String c : COMMANDS) sb.append('\n').append(help(c)).append('\n');
    out.println(sb.append('\n').append(ENVIRONMENT));
    return 0;
  }

  private static final List<String> COMMANDS =
      List.of("train", "summary", "bench", "inspect", "export", "info", "version", "help");

  /** The help of one command, starting with its usage line; null for no such command. */
  private static String help(String cmd) {
    return switch (cmd) {
      case "train" -> """
          ./ember train [options]
            Train a model on Fashion-MNIST and report its test accuracy (last line:
            test_accuracy=0.xxxx); leaves a run folder with metrics.csv, checkpoints/,
            model.safetensors and report.html.
            --model mlp|lenet|convnet     the model (lenet)
            --epochs N                    epochs to train (mlp 10, others 5); with --resume, the total
            --batch-size B                (128)
            --optimizer adam|adamw|sgd    (adam)
            --lr LR                       learning rate (0.001)
            --scheduler none|cosine|step  learning-rate schedule over the epochs (none)
            --seed S                      initial weights and shuffling (0)
            --device cpu|cuda|cuda:N      where to train (cpu); cuda needs ember-cuda and a GPU
            --no-pin-memory               on a GPU, copy each batch when its step starts instead of
                                          ahead on a background thread (pinned staging buffers and a
                                          copy stream; the default); the numbers are the same
            --precision fp32|bf16|fp16    forward pass and loss in float32 or under bfloat16/float16
                                          autocast (fp32); fp16 scales the loss and skips steps
                                          whose gradients overflow; weights stay float32
            --compile                     run each step's forward, loss and backward as one compiled
                                          graph (fp32 only; the same numbers as eager)
            --threads N                   threads of the CPU kernels (all cores, or EMBER_NUM_THREADS)
            --workers N                   data loader threads (1 when the kernel threads leave a core
                                          free, else 0: batches built on the training thread)
            --nproc N                     train in N worker processes on this machine (1..64; 1: in
                                          this one), data-parallel: --batch-size is the global batch,
                                          each worker trains on batch-size / N and the gradients are
                                          averaged, so the run trains as one process does; threads per
                                          worker: cores / N unless --threads. Workers started by another
                                          launcher (torchrun's MASTER_ADDR, MASTER_PORT, RANK,
                                          WORLD_SIZE) join its group the same way
            --max-restarts K              with --nproc: when a worker fails, stop the others and start
                                          the group again from the newest checkpoint, up to K times (0)
            --out DIR                     the run folder (runs/MODEL-TIME); one that holds a run is
                                          refused
            --overwrite                   with --out: delete the run already there and start again
            --resume DIR                  continue that run up to --epochs; same result as
                                          uninterrupted. The run keeps its --model, --batch-size,
                                          --optimizer, --lr, --scheduler, --seed and --precision:
                                          giving the same values again is fine, other values are
                                          refused
            --checkpoint-every N          also checkpoint every N steps (each epoch always)
            --max-bad-steps N             skip a step whose loss or gradients are NaN/Inf, and stop
                                          after N such steps in a row (3; 0: off)
            --memory-budget SIZE          keep a step's peak live memory under SIZE (300m, 2g; k/m/g =
                                          KiB/MiB/GiB) by checkpointing the fewest layers; fails before
                                          training when even checkpointing all of them cannot fit
            --data DIR                    Fashion-MNIST's files, used as given (without it:
                                          $EMBER_DATA, the user cache, the Debian package's folder,
                                          then a download into the cache)
            --quiet                       no progress bar""";
      case "summary" -> """
          ./ember summary [--model mlp|lenet|convnet] [--memory] [--batch-size B]
            Per layer of the model (lenet): output shape, parameters, memory and forward FLOPs;
            --memory adds the activations each layer keeps for backward and the peak live memory of
            a forward and backward at batch B (1).""";
      case "bench" -> """
          ./ember bench [options]
            The benchmark suite (bench/run_benchmarks.sh): -c CATEGORY[,...] (training, ops, losses,
            metrics, schedulers, callbacks, memory, gemm, nn, optim; default all)   --threads N[,N]
            --peer (PyTorch side by side, needs /usr/bin/python3 with torch)   --only P
            --repeats N   -o DIR   -s (summary.md)   -b BASELINE (exit status 1 if a case is more
            than 10% worse); ./ember bench --help lists all options.""";
      case "inspect" -> """
          ./ember inspect FILE
            Each tensor's name, dtype, shape and statistics in a safetensors, .npy or .npz file (on a
            bad file: one line naming the problem, exit status 2).""";
      case "export" -> """
          ./ember export [--format onnx] [--output FILE] RUN_DIR
            The run's trained model (model.safetensors) as ONNX opset 17, input [batch, 1, 28, 28]
            with a dynamic batch, written atomically to RUN_DIR/model.onnx or FILE.""";
      case "info" -> """
          ./ember info
            The version, the JDK, the CPU backend in use, the devices found and the thread count.""";
      case "version", "--version", "-V" -> """
          ./ember version    (also ./ember --version, ./ember -V)
            Ember's version, the JDK, the CPU backend in use and the devices found.""";
      case "help" -> """
          ./ember help [COMMAND]
            This text, or one command's part of it.""";
      default -> null;
    };
  }

  private static final String ENVIRONMENT = """
      environment:
        EMBER_JAVA_OPTS    JVM options; they win over the launcher's (train: -Xms1g -XX:+AlwaysPreTouch)
        EMBER_NUM_THREADS  threads of the CPU kernels (default: all cores)""";
}
