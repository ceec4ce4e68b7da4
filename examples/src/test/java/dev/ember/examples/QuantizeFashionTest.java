package dev.ember.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.FashionLike;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the static quantization measurement on a small generated set in Fashion-MNIST's layout (1 epoch). */
class QuantizeFashionTest {
  @Test
  void bothModelsQuantizeAndKeepTheirAccuracy(@TempDir Path tmp) throws Exception {
    Path data = Files.createDirectory(tmp.resolve("data"));
    FashionLike.write(data, "train", 600, new Random(1));
    FashionLike.write(data, "t10k", 200, new Random(2));
    String out = Output.of(() -> QuantizeFashion.main(new String[] {"2", "600", "200", data.toString()}));
    for (String model : new String[] {"model=mlp ", "model=lenet5 "}) {
      String line = out.lines().filter(l -> l.startsWith(model)).findFirst().orElseThrow(() -> new AssertionError(out));
      double f = Output.value(line, "float");
      double q = Output.value(line, "int8");
      assertTrue(f > 0.3, line + " (chance: 0.1)");
      assertTrue(Math.abs(f - q) <= 0.05, line);
      assertTrue(Output.value(line, "int8_ms") > 0, line);
    }
  }
}
