package dev.ember.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.FashionLike;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the distillation measurement on a small generated set in Fashion-MNIST's layout (one seed, 1 epoch each). */
class DistillFashionTest {
  @Test
  void teacherAndThreeStudentsLearn(@TempDir Path tmp) throws Exception {
    Path data = Files.createDirectory(tmp.resolve("data"));
    FashionLike.write(data, "train", 600, new Random(1));
    FashionLike.write(data, "t10k", 200, new Random(2));
    String out = Output.of(() -> DistillFashion.main(new String[] {"1", "2", "2", "600", data.toString()}));
    assertTrue(out.contains("seed=0 teacher="), out);
    for (String k : new String[] {"mean_teacher", "mean_alone", "mean_distilled", "mean_hint"}) {
      double acc = Output.value(out, k);
      assertTrue(acc > 0.3, k + " " + acc + " (chance: 0.1)\n" + out);
    }
  }
}
