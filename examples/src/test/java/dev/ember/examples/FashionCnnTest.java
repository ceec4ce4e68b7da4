package dev.ember.examples;

import dev.ember.data.FashionLike;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Module;
import dev.ember.nn.io.SafeTensors;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the Fashion-MNIST example on a small generated set in Fashion-MNIST's IDX layout (each class
 * a bright bar in its own place, plus noise), so it needs neither the real data nor a network.
 */
class FashionCnnTest {
  @Test
  void trainsAndSavesWeightsThatLoadBack(@TempDir Path tmp) throws Exception {
    Path data = Files.createDirectory(tmp.resolve("data"));
    FashionLike.write(data, "train", 600, new Random(1));
    FashionLike.write(data, "t10k", 200, new Random(2));
    Path weights = tmp.resolve("out/cnn.safetensors");

    String out = Output.of(() -> FashionCnn.main(new String[] {"3", "500", weights.toString(), data.toString()}));
    assertTrue(out.contains("train 500 images, test 200"), out);
    double acc = Output.value(out, "test_accuracy");
    assertTrue(acc > 0.4, "test_accuracy " + acc + " (chance: 0.1)");

    Module model = FashionCnn.cnn();
    var loaded = model.loadStateDict(SafeTensors.load(weights)); // strict
    assertEquals(0, loaded.missingKeys().size() + loaded.unexpectedKeys().size());
  }
}
