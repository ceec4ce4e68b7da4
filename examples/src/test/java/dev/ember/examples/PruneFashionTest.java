package dev.ember.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.FashionLike;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the pruning measurement on a small generated set in Fashion-MNIST's layout (3 epochs, 2 of fine-tuning). */
class PruneFashionTest {
  @Test
  void prunedModelsStillLearnAndTheShrunkOneIsSmaller(@TempDir Path tmp) throws Exception {
    Path data = Files.createDirectory(tmp.resolve("data"));
    FashionLike.write(data, "train", 600, new Random(1));
    FashionLike.write(data, "t10k", 200, new Random(2));
    String out = Output.of(() -> PruneFashion.main(new String[] {"3", "2", "600", data.toString(), "0", "3"}));
    for (String k : new String[] {"baseline_accuracy", "dense_accuracy", "global80_accuracy", "structured50_accuracy"}) {
      double acc = Output.value(out, k);
      assertTrue(acc > 0.25, k + " " + acc + " (chance: 0.1)\n" + out);
    }
    // 80% of the 61,470 conv/linear weights, rounded half to even, and still zero after fine-tuning and remove
    assertEquals(0.8, Output.value(out, "global80_sparsity"), 1e-4, out);
    // conv 1-3-8 (78 + 608), Linear 200-60-42-10 (12060 + 2562 + 430)
    assertEquals(78 + 608 + 12060 + 2562 + 430, Output.value(out, "structured50_params"), out);
    assertTrue(Output.value(out, "structured50_ms") > 0 && Output.value(out, "baseline_ms") > 0, out);
  }
}
