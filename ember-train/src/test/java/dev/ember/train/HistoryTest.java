package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.SGD;
import org.junit.jupiter.api.Test;

class HistoryTest {
  @Test
  void toStringGivesEpochsStepsAndTheLastValueOfEachKey() {
    History h = new History();
    assertEquals("History(0 epochs, 0 steps)", h.toString());
    h.log("loss", 1, 469, 0.61234);
    h.log("accuracy", 1, 469, 0.8);
    h.log("lr", 1, 469, 1e-5);
    h.log("loss", 2, 938, 0.29314);
    h.log("accuracy", 2, 938, 0.89124);
    h.log("lr", 2, 938, 1e-5);
    h.log("val_loss", 2, 938, Double.NaN);
    h.log("skipped_steps", 2, 938, 3);
    h.log("train_time_s", 2, 938, 123456.0);
    assertEquals("History(2 epochs, 938 steps; loss=0.2931 accuracy=0.8912 lr=1.000e-05 val_loss=NaN skipped_steps=3"
        + " train_time_s=1.235e+05)", h.toString());
    History one = new History();
    one.log("accuracy", 1, 1, 1.0);
    assertEquals("History(1 epoch, 1 step; accuracy=1.0000)", one.toString());
  }

  @Test
  void aFitsHistoryNamesItsMetrics() {
    Module m = Fixtures.mlp(0);
    History h = Trainer.builder().maxEpochs(2).metrics(new TrainerTest.Acc()).build()
        .fit(m, F::crossEntropy, new SGD(m.parameters(), 0.1), Fixtures.source(Fixtures.blobs(1, 40), 10, 0),
            Fixtures.source(Fixtures.blobs(2, 20), 20, 0));
    String s = h.toString();
    assertTrue(s.matches("History\\(2 epochs, 8 steps; loss=\\d\\.\\d{4} accuracy=\\d\\.\\d{4} lr=0\\.1000 epoch_time_s=\\S+"
        + " val_loss=\\d\\.\\d{4} val_accuracy=\\d\\.\\d{4} train_time_s=\\S+\\)"), s);
  }
}
