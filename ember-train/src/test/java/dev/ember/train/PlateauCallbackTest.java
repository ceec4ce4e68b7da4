package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.SGD;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.ModelCheckpoint;
import dev.ember.train.callbacks.ReduceLROnPlateauCallback;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PlateauCallbackTest {
  private final Tensor[] data = Fixtures.blobs(1, 40);

  @Test
  void lowersTheLearningRateWhenTheMonitoredValueStalls() {
    Module model = Fixtures.mlp(0);
    var opt = new SGD(model.parameters(), 1e-6);           // too small to move val_loss by the 1e-4 threshold: a plateau
    History h = Trainer.builder().maxEpochs(6).callbacks(new ReduceLROnPlateauCallback("val_loss", "min", 0.5, 1, 0.0)).build()
        .fit(model, F::crossEntropy, opt, Fixtures.source(data, 20, 0), Fixtures.source(data, 40, 0));
    // lr is logged at each epoch end before the callback runs: best at epoch 1, bad epochs 2 and 3 -> cut after 3, 5
    assertArrayEquals(new double[] {1e-6, 1e-6, 1e-6, 5e-7, 5e-7, 2.5e-7}, h.values("lr"), 1e-21);
  }

  @Test
  void resumesItsCountersFromACheckpoint(@TempDir Path dir) {
    Module ref = Fixtures.mlp(0);
    var refOpt = new SGD(ref.parameters(), 1e-6);
    History full = Trainer.builder().maxEpochs(6)
        .callbacks(new ReduceLROnPlateauCallback("val_loss", "min", 0.5, 1, 0.0), new ModelCheckpoint(dir, 1, 0, 10)).build()
        .fit(ref, F::crossEntropy, refOpt, Fixtures.source(data, 20, 0), Fixtures.source(data, 40, 0));
    Module m = Fixtures.mlp(5);
    var opt = new SGD(m.parameters(), 1e-6);
    History resumed = Trainer.builder().maxEpochs(6)
        .callbacks(new ReduceLROnPlateauCallback("val_loss", "min", 0.5, 1, 0.0), new ModelCheckpoint(dir.resolve("x"), 1, 0, 10))
        .resumeFrom(dir.resolve(ModelCheckpoint.fileName(4))).build()        // after epoch 2 (2 steps per epoch)
        .fit(m, F::crossEntropy, opt, Fixtures.source(data, 20, 0), Fixtures.source(data, 40, 0));
    assertArrayEquals(full.values("lr"), resumed.values("lr"), 0.0);
  }

  @Test
  void namesAMissingMonitor() {
    Module model = Fixtures.mlp(0);
    var e = assertThrows(IllegalStateException.class, () -> Trainer.builder().maxEpochs(1)
        .callbacks(new ReduceLROnPlateauCallback("val_loss", "min", 0.5, 1, 0.0)).build()
        .fit(model, F::crossEntropy, new SGD(model.parameters(), 0.1), Fixtures.source(data, 20, 0), null));
    assertEquals("ReduceLROnPlateauCallback: monitored value 'val_loss' was not logged; logged values are [loss, lr, epoch_time_s]",
        e.getMessage());
  }
}
