package dev.ember.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.FashionLike;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the distillation measurement on a small generated set in Fashion-MNIST's layout (two seeds, 2 epochs each,
 * 100 of the 600 training images held out for validation).
 */
class DistillFashionTest {
  @Test
  void teacherAndThreeStudentsLearnOnTrainAndAreMeasuredOnValidationAndTest(@TempDir Path tmp) throws Exception {
    Path data = Files.createDirectory(tmp.resolve("data"));
    FashionLike.write(data, "train", 600, new Random(1));
    FashionLike.write(data, "t10k", 200, new Random(2));
    String out = Output.of(() -> DistillFashion.main(
        new String[] {"2", "2", "2", "600", data.toString(), "2", "0.5", "32", "100"}));
    assertTrue(out.contains("train 500 images, validation 100, test 200"), out);
    assertTrue(out.contains("student 784-32-10 2 epochs, T=2.0, alpha=0.5"), out);
    assertTrue(out.contains("seed=1 teacher="), out);
    for (String k : new String[] {"teacher", "alone", "distilled", "hint"}) {
      for (String prefix : new String[] {"", "val_"}) {
        double acc = Output.value(out, prefix + "mean_" + k);
        assertTrue(acc > 0.3, prefix + k + " " + acc + " (chance: 0.1)\n" + out);
        double sd = Output.value(out, prefix + "sd_" + k);
        assertTrue(sd >= 0 && sd < 0.5, prefix + "sd_" + k + " " + sd);
        double first = Output.value(out.substring(0, out.indexOf("seed=1")), prefix + k);
        double second = Output.value(out.substring(out.indexOf("seed=1")), prefix + k);
        assertEquals((first + second) / 2, acc, 1e-4, prefix + k + ": the mean of the two seeds");
      }
    }
  }

  @Test
  void validationMustLeaveTrainingImages(@TempDir Path tmp) throws Exception {
    Path data = Files.createDirectory(tmp.resolve("data"));
    FashionLike.write(data, "train", 50, new Random(1));
    FashionLike.write(data, "t10k", 20, new Random(2));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DistillFashion.main(
        new String[] {"1", "1", "1", "50", data.toString(), "2", "0.5", "32", "50"}));
    assertTrue(e.getMessage().contains("VAL must be in 1..49"), e.getMessage());
  }

  @Test
  void sampleStandardDeviation() {
    assertEquals(0, DistillFashion.sd(new double[] {0.8}));
    assertEquals(Math.sqrt(0.5), DistillFashion.sd(new double[] {1, 2}), 1e-12);
    assertEquals(1.5, DistillFashion.mean(new double[] {1, 2}));
  }
}
