package dev.ember.cli;

import dev.ember.nn.Module;
import dev.ember.nn.io.SafeTensors;
import dev.ember.onnx.Onnx;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Properties;

/**
 * {@code ember export --format onnx RUN_DIR}: the run's model (run.properties) with its trained weights
 * (model.safetensors) as an ONNX file, RUN_DIR/model.onnx unless {@code --output} says otherwise, for
 * 1x28x28 inputs with a dynamic batch.
 */
final class ExportCommand {
  private ExportCommand() {}

  static int run(String[] args, PrintStream out) throws IOException {
    String format = "onnx";
    Path output = null;
    Path dir = null;
    Args it = new Args("export", args);
    while (it.hasNext()) {
      String a = it.next();
      switch (a) {
        case "--format" -> format = it.value().toLowerCase(Locale.ROOT);
        case "--output", "-o" -> output = Path.of(it.value());
        default -> {
          if (a.startsWith("-") || dir != null) throw it.unknown();
          dir = Path.of(a);
        }
      }
    }
    if (!format.equals("onnx")) throw new IllegalArgumentException("--format must be onnx, got '" + format + "'");
    if (dir == null) throw new IllegalArgumentException("give the run folder to export (./ember export RUN_DIR)");
    Path props = dir.resolve("run.properties");
    Path weights = dir.resolve("model.safetensors");
    if (!Files.isRegularFile(props)) {
      throw new IllegalArgumentException(dir + ": not a run folder (it has no run.properties)");
    }
    if (!Files.isRegularFile(weights)) {
      throw new IllegalArgumentException(dir + ": the run has no model.safetensors yet (its first epoch writes it)");
    }
    Properties p = new Properties();
    try (InputStream in = Files.newInputStream(props)) {
      p.load(in);
    }
    String name = p.getProperty("model");
    if (name == null) throw new IllegalArgumentException(props + " has no 'model'");
    Module model = TrainCommand.model(name);
    model.loadStateDict(SafeTensors.load(weights), true); // a file of another model is refused, naming the keys
    Path file = output != null ? output : dir.resolve("model.onnx");
    Onnx.export(model, Tensor.randn(new Generator(0), 1, 1, 28, 28), file);
    out.println("wrote " + file + " (ONNX opset " + Onnx.OPSET + ", " + name + ", input '" + Onnx.INPUT
        + "' [batch, 1, 28, 28], output '" + Onnx.OUTPUT + "' [batch, 10])");
    return 0;
  }
}
