package dev.ember.cli;

import dev.ember.train.summary.ModelSummary;
import java.io.PrintStream;

/** {@code ember summary --model NAME}: the model summary table of one of the CLI's models on its Fashion-MNIST input. */
final class SummaryCommand {
  private SummaryCommand() {}

  static int run(String[] args, PrintStream out) {
    String name = "lenet";
    Args it = new Args("summary", args);
    while (it.hasNext()) {
      String a = it.next();
      switch (a) {
        case "--model" -> name = it.value();
        default -> throw it.unknown();
      }
    }
    out.print(ModelSummary.of(TrainCommand.model(name), 1, 1, 28, 28));
    return 0;
  }
}
