package dev.ember.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CsvMlpTest {
  @Test
  void learnsTwoMoonsFromACsvFile(@TempDir Path tmp) throws Exception {
    Path csv = CsvMlp.writeTwoMoons(tmp.resolve("moons.csv"), 400, 3);
    assertTrue(Files.readAllLines(csv).getFirst().equals("x1,x2,label"));
    String out = Output.of(() -> CsvMlp.main(new String[] {csv.toString(), "10"}));
    assertTrue(out.contains("400 rows, 2 features, 2 classes"), out);
    assertTrue(out.contains("epoch 10/10 loss="), out);
    // a linear model gets about 0.85 on two moons; the MLP separates the curves
    double acc = Output.value(out, "test_accuracy");
    assertTrue(acc >= 0.95, "test_accuracy " + acc);
  }

  @Test
  void readsAnyNumberOfFeaturesAndClasses(@TempDir Path tmp) throws Exception {
    // three classes told apart by the third of four columns
    StringBuilder csv = new StringBuilder("a,b,c,d,label\n");
    java.util.Random rnd = new java.util.Random(5);
    for (int i = 0; i < 300; i++) {
      int c = i % 3;
      csv.append(rnd.nextGaussian()).append(',').append(rnd.nextGaussian()).append(',')
          .append(3 * c + 0.3 * rnd.nextGaussian()).append(',').append(rnd.nextGaussian()).append(',').append(c).append('\n');
    }
    Path file = Files.writeString(tmp.resolve("three.csv"), csv);
    String out = Output.of(() -> CsvMlp.main(new String[] {file.toString(), "5"}));
    assertTrue(out.contains("300 rows, 4 features, 3 classes"), out);
    assertTrue(Output.value(out, "test_accuracy") >= 0.9, out);
  }
}
