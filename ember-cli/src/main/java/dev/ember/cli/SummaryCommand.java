package dev.ember.cli;

import dev.ember.train.summary.ModelSummary;
import java.io.PrintStream;

/** {@code ember summary --model NAME}: the model summary table of one of the CLI's models on its Fashion-MNIST input. */
final class SummaryCommand {
  private SummaryCommand() {}

  static int run(String[] args, PrintStream out) {
    String name = "lenet";
    for (int i = 0; i < args.length; i++) {
      if (!args[i].equals("--model") || i + 1 >= args.length) {
        throw new IllegalArgumentException("usage: ./ember summary --model mlp|lenet|convnet");
      }
      name = args[++i];
    }
    out.print(ModelSummary.of(TrainCommand.model(name), 1, 1, 28, 28));
    return 0;
  }
}
