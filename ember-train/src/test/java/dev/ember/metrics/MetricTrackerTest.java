package dev.ember.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MetricTrackerTest {
  private static Tensor labels(long... v) {
    return Tensor.of(v, v.length);
  }

  private static MetricTracker tracker() {
    return new MetricTracker()
        .add(new Accuracy())
        .add(new F1Score(3, Average.MACRO))
        .addMean("loss")
        .add("acc_again", new Accuracy());
  }

  @Test
  void updatesAllAndComputesInInsertionOrder() {
    MetricTracker t = tracker();
    t.update(labels(0, 1, 2, 2), labels(0, 1, 2, 1));
    t.updateMean("loss", 0.5, 4);
    Map<String, Double> v = t.compute();
    assertEquals(List.of("accuracy", "f1_macro", "loss", "acc_again"), List.copyOf(v.keySet()));
    assertEquals(0.75, v.get("accuracy"));
    assertEquals(0.5, v.get("loss"));
    assertEquals(v.get("accuracy"), v.get("acc_again"));
    assertEquals(List.of("accuracy", "f1_macro", "loss", "acc_again"), t.names());
  }

  @Test
  void endEpochRecordsHistoryAndResets() {
    MetricTracker t = tracker();
    double[][] epochs = {{0.5, 0.9}, {0.75, 0.4}, {0.75, 0.6}};
    long[][] preds = {{0, 1, 0, 0}, {0, 1, 2, 2}, {0, 1, 2, 0}};
    for (int e = 0; e < 3; e++) {
      t.update(labels(preds[e]), labels(0, 1, 2, 1));
      t.updateMean("loss", epochs[e][1], 4);
      Map<String, Double> v = t.endEpoch();
      assertEquals(epochs[e][0], v.get("accuracy"));
    }
    assertEquals(3, t.epochs());
    assertEquals(List.of(0.5, 0.75, 0.75), t.history("accuracy"));
    assertEquals(new MetricTracker.Best(2, 0.75), t.best("accuracy", "max"));  // the earliest of the ties
    assertEquals(new MetricTracker.Best(2, 0.4), t.best("loss", "min"));
    assertThrows(IllegalStateException.class, t::compute);  // reset after the epoch
  }

  @Test
  void bestSkipsNaN() {
    MetricTracker t = new MetricTracker().addMean("loss");
    for (double v : new double[] {Double.NaN, 3, 2, Double.NaN}) {
      t.updateMean("loss", v, 1);
      t.endEpoch();
    }
    assertEquals(new MetricTracker.Best(3, 2.0), t.best("loss", "min"));
    assertEquals(new MetricTracker.Best(2, 3.0), t.best("loss", "max"));
  }

  @Test
  void rejectsMisuse() {
    MetricTracker t = tracker();
    var dup = assertThrows(IllegalArgumentException.class, () -> t.add(new Accuracy()));
    assertEquals("MetricTracker.add: a metric named 'accuracy' is already tracked (tracked: [accuracy, f1_macro, loss, "
        + "acc_again])", dup.getMessage());
    var mode = assertThrows(IllegalArgumentException.class, () -> t.best("accuracy", "maximum"));
    assertEquals("MetricTracker.best: mode must be \"max\" or \"min\", got \"maximum\"", mode.getMessage());
    var unknown = assertThrows(IllegalArgumentException.class, () -> t.history("auc"));
    assertEquals("MetricTracker.history: no metric named 'auc' (tracked: [accuracy, f1_macro, loss, acc_again])",
        unknown.getMessage());
    assertThrows(IllegalArgumentException.class, () -> t.updateMean("accuracy", 1, 1));
    var none = assertThrows(IllegalStateException.class, () -> t.best("accuracy", "max"));
    assertEquals("MetricTracker.best: no epoch value for 'accuracy' yet (0 epochs, all NaN or none)", none.getMessage());
    t.update(labels(0), labels(0));
    t.updateMean("loss", 1, 1);
    t.endEpoch();
    var late = assertThrows(IllegalStateException.class, () -> t.addMean("val_loss"));
    assertEquals("MetricTracker.add: cannot add 'val_loss' after 1 epoch ended (its history would not line up with the "
        + "others)", late.getMessage());
  }

  @Test
  void getReturnsTheTrackedInstance() {
    Accuracy a = new Accuracy();
    MetricTracker t = new MetricTracker().add(a);
    assertEquals(a, t.get("accuracy"));
    assertThrows(IllegalArgumentException.class, () -> t.get("nope"));
  }
}
