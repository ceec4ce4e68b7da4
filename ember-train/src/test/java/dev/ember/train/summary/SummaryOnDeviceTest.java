package dev.ember.train.summary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.testing.FakeDevice;
import org.junit.jupiter.api.Test;

/** The summary and the batch-size finder make their sample inputs and targets where the model is. */
class SummaryOnDeviceTest {
  @Test
  void aModelOnTheFakeDeviceIsSummarizedAsOnTheCpu() {
    String cpu = ModelSummary.of(Models.lenet5(10), 2, 1, 28, 28).toString();
    Module model = Models.lenet5(10).to(FakeDevice.DEVICE);
    ModelSummary s = ModelSummary.of(model, 2, 1, 28, 28);
    assertEquals(cpu, s.toString());
    assertEquals(FakeDevice.DEVICE, model.device());
  }

  @Test
  void theBatchSizeFinderRunsStepsOnTheModelsDevice() {
    Module model = Models.mlp(12, 8, 3).to(FakeDevice.DEVICE);
    BatchSizeResult r = new BatchSizeFinder(model, F::crossEntropy, 12).range(2, 4).steps(1, 1).jitWarmup(0).find();
    assertEquals(java.util.List.of(2, 4), r.rows().stream().map(BatchSizeResult.Row::batchSize).toList(), r.toString());
    assertTrue(r.row(4).samplesPerSecond() > 0, r.toString());
    assertEquals(FakeDevice.DEVICE, model.device());
  }
}
