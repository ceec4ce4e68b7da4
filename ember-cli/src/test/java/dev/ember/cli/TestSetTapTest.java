package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.ember.autograd.Grad;
import dev.ember.data.BatchConfig;
import dev.ember.data.BatchIterator;
import dev.ember.data.DataLoader;
import dev.ember.data.TensorDataset;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.train.Trainer;
import org.junit.jupiter.api.Test;

/**
 * The test figures a completed {@code ember train} run takes from its last validation are those a pass of their
 * own over the test set gives, and they are handed out only while they describe the weights.
 */
class TestSetTapTest {
  private static final int CLASSES = 10;

  private static DataLoader loader(int n, long seed) {
    Generator g = new Generator(seed);
    Tensor x = Tensor.randn(g, n, 1, 28, 28);
    long[] y = new long[n];
    for (int i = 0; i < n; i++) y[i] = (i * 7L + seed) % CLASSES;
    return new DataLoader(new TensorDataset(x, Tensor.of(y, n)), new BatchConfig(64, false, false, seed), 0);
  }

  @Test
  void theLastValidationsFiguresAreThoseOfAPassOfTheirOwn() {
    Generator.manualSeed(3);
    Module model = TrainCommand.model("lenet");
    DataLoader train = loader(256, 1);
    DataLoader test = loader(200, 2);                  // 200: the last batch is a short one (8)
    TestSetTap tap = new TestSetTap(test, model, CLASSES, 200);
    var opt = TrainCommand.optimizer("adam", model, 1e-3);
    Trainer.builder().maxEpochs(2).metrics(new dev.ember.metrics.Accuracy()).build()
        .fit(model, F::crossEntropy, opt, train, tap);
    TestSetTap.Result r = tap.result();
    assertNotNull(r, "the last epoch's validation saw the whole test set on the final weights");
    TrainCommand.Settings s = new TrainCommand.Settings();
    TestSetTap.Result own = TrainCommand.evaluate(s, model, test);
    for (int i = 0; i < CLASSES; i++) assertArrayEquals(own.confusion()[i], r.confusion()[i], "row " + i);
    assertEquals(own.accuracy(), r.accuracy());
    assertEquals(200, java.util.Arrays.stream(r.confusion()).flatMapToLong(java.util.Arrays::stream).sum());
    // the hook went with the pass: training and other calls run without it
    assertEquals(0, model.forwardHookCount());

    // a parameter written since: the figures no longer describe the model
    try (var ignored = Grad.off()) {
      model.parameters().get(0).mul_(1.0);
    }
    assertNull(tap.result());
  }

  @Test
  void aPartialPassOrAStrayCallGivesNoFigures() {
    Generator.manualSeed(4);
    Module model = Models.mlp(784, 16, CLASSES);
    DataLoader test = loader(200, 2);
    TestSetTap tap = new TestSetTap(test, model, CLASSES, 200);
    try (var ignored = Grad.off()) {
      try (BatchIterator it = tap.iterate(0, 0)) {      // stopped after one batch
        model.call(it.next().input().reshape(-1, 784));
      }
      assertNull(tap.result());
      try (BatchIterator it = tap.iterate(0, 1)) {      // resumed half way: not a whole pass
        while (it.hasNext()) model.call(it.next().input().reshape(-1, 784));
      }
      assertNull(tap.result());
      try (BatchIterator it = tap.iterate(0, 0)) {      // a call on something else during the pass
        model.call(Tensor.zeros(1, 784));
        while (it.hasNext()) model.call(it.next().input().reshape(-1, 784));
      }
      assertNull(tap.result());
      try (BatchIterator it = tap.iterate(0, 0)) {      // a whole pass
        while (it.hasNext()) model.call(it.next().input().reshape(-1, 784));
      }
      assertNotNull(tap.result());
      assertEquals(0, model.forwardHookCount());
    }
  }

  /**
   * A loader that takes the next batch while the model runs on the current one (a device run's pinned, non-blocking
   * copies take it on a background thread) pairs each output with its own batch's targets: the figures are those of
   * a plain pass. (They paired the output with whichever batch was taken last, and a background thread clearing
   * the one target field between the tap's check and its use threw a NullPointerException.)
   */
  @Test
  void aLoaderTakingTheNextBatchAheadGivesThePlainPassesFigures() throws Exception {
    Generator.manualSeed(5);
    Module model = Models.mlp(784, 16, CLASSES);
    DataLoader test = loader(200, 2);
    TestSetTap tap = new TestSetTap(test, model, CLASSES, 200);
    try (var ignored = Grad.off()) {
      try (BatchIterator it = tap.iterate(0, 0)) {
        while (it.hasNext()) model.call(it.next().input().reshape(-1, 784));
      }
      TestSetTap.Result plain = tap.result();
      assertNotNull(plain);
      try (BatchIterator it = tap.iterate(0, 0)) {      // one batch ahead, taken on another thread
        java.util.concurrent.ExecutorService ahead = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
          java.util.concurrent.Future<dev.ember.data.Batch> next = ahead.submit(it::next);
          while (true) {
            dev.ember.data.Batch b = next.get();
            boolean more = it.hasNext();
            if (more) next = ahead.submit(it::next);
            model.call(b.input().reshape(-1, 784));
            if (!more) break;
          }
        } finally {
          ahead.shutdown();
        }
      }
      TestSetTap.Result prefetched = tap.result();
      assertNotNull(prefetched, "a whole pass");
      assertEquals(plain.accuracy(), prefetched.accuracy());
      for (int i = 0; i < CLASSES; i++) assertArrayEquals(plain.confusion()[i], prefetched.confusion()[i], "row " + i);
    }
  }
}
