package dev.ember.cli;

import dev.ember.train.summary.ModelSummary;
import java.io.PrintStream;

/** {@code ember summary --model NAME}: the model summary table of one of the CLI's models on its Fashion-MNIST input. */
final class SummaryCommand {
  private SummaryCommand() {}

  static int run(String[] args, PrintStream out) {
    String name = "lenet";
    boolean memory = false;
    int batch = 1;
    Args it = new Args("summary", args);
    while (it.hasNext()) {
      String a = it.next();
      switch (a) {
        case "--model" -> name = it.value();
        case "--memory" -> {
          it.noValue();
          memory = true;
        }
        case "--batch-size" -> batch = TrainCommand.positive(a, it.value());
        default -> throw it.unknown();
      }
    }
    var model = TrainCommand.model(name);
    out.print(memory ? ModelSummary.withMemory(model, batch, 1, 28, 28) : ModelSummary.of(model, batch, 1, 28, 28));
    return 0;
  }
}
