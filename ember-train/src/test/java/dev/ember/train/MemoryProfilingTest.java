package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.Batch;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adam;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.Profiling;
import dev.ember.train.report.HtmlReport;
import dev.ember.train.summary.MemoryProfile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Profiling callback's memory profile of a real fit, in profile.json and in the report. */
class MemoryProfilingTest {
  static List<Batch> batches(int n, int size, long seed) {
    Generator g = new Generator(seed);
    List<Batch> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(new Batch(Tensor.randn(g, size, 784), Tensor.randint(g, 0, 10, new int[] {size}).to(DType.I64)));
    }
    return out;
  }

  @Test
  void fitWritesPerLayerMemoryToProfileAndReport(@TempDir Path dir) throws Exception {
    Generator g = new Generator(5);
    Module model = new Sequential(new Linear(784, 100, true, g), new ReLU(), new Linear(100, 10, true, g));
    Adam adam = new Adam(model.parameters(), 1e-3);
    Profiling prof = new Profiling(null, dir.resolve("profile.json"));
    Trainer.builder().maxEpochs(1).callbacks(prof).build().fit(model, F::crossEntropy, adam, Fixtures.source(batches(3, 32, 1)),
        null);
    MemoryProfile m = prof.summary().memory();
    assertNotNull(m);
    long x = 32 * 784 * 4;
    long h = 32 * 100 * 4;
    long o = 32 * 10 * 4;
    assertEquals(x + h, m.layer("0").activationBytes());
    assertEquals(h, m.layer("1").activationBytes());
    assertEquals(o, m.layer("2").activationBytes());
    long params = (784 * 100 + 100 + 100 * 10 + 10) * 4L;
    assertEquals(params, m.gradBytes());
    assertEquals(2 * params + 4 * 8, m.optimizerStateBytes()); // exp_avg, exp_avg_sq and a float64 step each
    // a step holds at least the parameters, the Adam state, the gradients and the activations made in it
    long floor = params + 2 * params + params + 2 * h + o;
    assertTrue(m.peakStepBytes() >= floor, m.peakStepBytes() + " < " + floor);
    String json = Files.readString(dir.resolve("profile.json"));
    assertTrue(json.contains("\"memory\":{"), json);
    assertTrue(json.contains("\"activation_bytes\":" + (x + 2 * h + o)), json);
    Files.writeString(dir.resolve("metrics.csv"), "epoch,step,time_s,loss\n1,3,1.5,2.0\n");
    Path html = HtmlReport.write(dir);
    String page = Files.readString(html);
    assertTrue(page.contains("Where a training step's memory goes"), page);
    assertTrue(page.contains("0 (Linear)"), page);
  }
}
