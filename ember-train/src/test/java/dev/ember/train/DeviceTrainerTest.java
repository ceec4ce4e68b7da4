package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.data.BatchSource;
import dev.ember.metrics.Accuracy;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adam;
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import dev.ember.testing.FakeDevice;
import dev.ember.train.callbacks.ModelCheckpoint;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The trainer on the strict fake device: {@code .device(fake:0)} moves the model (keeping the optimizer's
 * parameters) and every batch there, and the run logs what the same run on the CPU logs; checkpoints of the device
 * run resume bitwise.
 */
class DeviceTrainerTest {
  private static final Device FAKE = FakeDevice.DEVICE;
  private final Tensor[] train = Fixtures.blobs(1, 96);
  private final Tensor[] val = Fixtures.blobs(2, 45);

  private History fit(Module model, Adam opt, Device device, int epochs, Path ckpts, Path resume) {
    Trainer.Builder b = Trainer.builder().maxEpochs(epochs).metrics(new Accuracy()).clipGradNorm(1.0)
        .skipNonFiniteSteps(2);
    if (device != null) b.device(device);
    if (ckpts != null) b.callbacks(new ModelCheckpoint(ckpts, 1, 0, 10));
    if (resume != null) b.resumeFrom(resume);
    return b.build().fit(model, F::crossEntropy, opt, Fixtures.source(train, 32, 7), Fixtures.source(val, 45, 0));
  }

  @Test
  void aRunOnTheFakeDeviceLogsWhatTheCpuRunLogs() {
    Module cpu = Fixtures.mlp(3);
    History want = fit(cpu, new Adam(cpu.parameters(), 0.01), null, 3, null, null);
    Module model = Fixtures.mlp(3);
    List<Tensor> params = model.parameters();
    Adam opt = new Adam(params, 0.01); // built on the host parameters, before fit moves them
    History got = fit(model, opt, FAKE, 3, null, null);
    assertEquals(FAKE, model.device());
    for (int i = 0; i < params.size(); i++) {
      assertSame(params.get(i), model.parameters().get(i));
      assertEquals(FAKE, params.get(i).device());
      for (Tensor s : opt.state(params.get(i)).values()) if (s.dim() > 0) assertEquals(FAKE, s.device());
    }
    for (String key : List.of("loss", "accuracy", "val_loss", "val_accuracy", "lr")) {
      assertArrayEquals(want.values(key), got.values(key), 1e-6, key);
    }
    Map<String, Tensor> a = cpu.stateDict();
    Map<String, Tensor> b = model.stateDict();
    for (var e : a.entrySet()) assertArrayEquals(e.getValue().toFloatArray(), b.get(e.getKey()).cpu().toFloatArray(), e.getKey());
  }

  /** Mixed precision on a device (as {@code ./ember train --device cuda --precision bf16|fp16}): the CPU's run. */
  @Test
  void autocastRunsOnTheFakeDeviceLogWhatTheCpuRunsLog() {
    for (Trainer.Precision p : new Trainer.Precision[] {Trainer.Precision.BF16, Trainer.Precision.F16}) {
      History want = null;
      for (Device d : new Device[] {null, FAKE}) {
        Module model = Fixtures.mlp(3);
        Trainer.Builder b = Trainer.builder().maxEpochs(2).metrics(new Accuracy()).precision(p).pinMemory(true);
        if (d != null) b.device(d);
        History h = b.build().fit(model, F::crossEntropy, new Adam(model.parameters(), 0.01),
            Fixtures.source(train, 32, 7), Fixtures.source(val, 45, 0));
        if (want == null) {
          want = h;
          continue;
        }
        assertEquals(FAKE, model.device());
        for (String key : List.of("loss", "accuracy", "val_loss", "val_accuracy")) {
          assertArrayEquals(want.values(key), h.values(key), 0.0, p + " " + key);
        }
      }
    }
  }

  @Test
  void pinMemoryMovesEveryBatchAheadAndGivesTheSameRun() {
    Module plain = Fixtures.mlp(3);
    History want = fit(plain, new Adam(plain.parameters(), 0.01), FAKE, 2, null, null);
    Module model = Fixtures.mlp(3);
    long before = FakeDevice.nonBlockingCopies(FAKE);
    History got = Trainer.builder().maxEpochs(2).metrics(new Accuracy()).clipGradNorm(1.0).skipNonFiniteSteps(2)
        .device(FAKE).pinMemory(true).build()
        .fit(model, F::crossEntropy, new Adam(model.parameters(), 0.01), Fixtures.source(train, 32, 7),
            Fixtures.source(val, 45, 0));
    // 3 training and 1 validation batch per epoch, input and target each
    assertEquals(2 * 2 * (3 + 1), FakeDevice.nonBlockingCopies(FAKE) - before);
    for (String key : List.of("loss", "accuracy", "val_loss", "val_accuracy")) {
      assertArrayEquals(want.values(key), got.values(key), 0.0, key);
    }
    assertEquals(0, Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().startsWith("ember-pin-memory-")).count(), "no thread left behind");
    // on the CPU the option changes nothing
    Module cpu = Fixtures.mlp(3);
    long cpuBefore = FakeDevice.nonBlockingCopies(FAKE);
    Trainer.builder().maxEpochs(1).pinMemory(true).build()
        .fit(cpu, F::crossEntropy, new Adam(cpu.parameters(), 0.01), Fixtures.source(train, 32, 7), null);
    assertEquals(cpuBefore, FakeDevice.nonBlockingCopies(FAKE));
  }

  @Test
  void checkpointsOfADeviceRunResumeBitwise(@TempDir Path dir) throws Exception {
    Module ref = Fixtures.mlp(3);
    History refHist = fit(ref, new Adam(ref.parameters(), 0.01), FAKE, 3, dir.resolve("ckpt"), null);
    Path first;
    try (Stream<Path> s = Files.list(dir.resolve("ckpt"))) {
      first = s.sorted().findFirst().orElseThrow();
    }
    Module m = Fixtures.mlp(99); // other initial weights: all must come from the file
    History h = fit(m, new Adam(m.parameters(), 0.01), FAKE, 3, null, first);
    assertEquals(FAKE, m.device());
    for (var e : ref.stateDict().entrySet()) {
      assertArrayEquals(e.getValue().cpu().toFloatArray(), m.stateDict().get(e.getKey()).cpu().toFloatArray(), e.getKey());
    }
    assertArrayEquals(refHist.values("loss"), h.values("loss"), 0.0);
  }

  @Test
  void theProfileWaitsForTheDeviceAtEachPhaseAndReportsItsMemory(@TempDir Path dir) throws Exception {
    Module model = Fixtures.mlp(3);
    Adam opt = new Adam(model.parameters(), 0.01);
    dev.ember.train.callbacks.Profiling prof = new dev.ember.train.callbacks.Profiling(null, dir.resolve("profile.json"));
    long before = FakeDevice.synchronizations(FAKE);
    Trainer.builder().maxEpochs(1).device(FAKE).callbacks(prof).build()
        .fit(model, F::crossEntropy, opt, Fixtures.source(train, 32, 7), null);
    long steps = prof.summary().steps();
    // data, forward, loss, backward and optimizer each wait for the device's queued work
    assertEquals(true, FakeDevice.synchronizations(FAKE) - before >= 4 * steps,
        "synchronizations " + (FakeDevice.synchronizations(FAKE) - before) + " for " + steps + " steps");
    var summary = prof.summary();
    assertEquals(FAKE.toString(), summary.device());
    String line = summary.deviceMemoryLine();
    assertEquals(true, line != null && line.contains("device memory on fake:0: peak "), String.valueOf(line));
    assertEquals(true, summary.table().contains(line), summary.table());
    String json = Files.readString(dir.resolve("profile.json"));
    assertEquals(true, json.contains("\"device\":\"fake:0\"") && json.contains("allocated_bytes.all.peak"), json);
    var cpuRun = new dev.ember.train.callbacks.Profiling(null, null);
    Module m2 = Fixtures.mlp(3);
    Trainer.builder().maxEpochs(1).callbacks(cpuRun).build()
        .fit(m2, F::crossEntropy, new Adam(m2.parameters(), 0.01), Fixtures.source(train, 32, 7), null);
    assertEquals(null, cpuRun.summary().deviceMemoryLine(), "no device memory line for a CPU run");
  }

  @Test
  void anAbsentDeviceIsAClearError() {
    Module m = Fixtures.mlp(3);
    Adam opt = new Adam(m.parameters(), 0.01);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> fit(m, opt, Device.of("fake", 5), 1, null, null));
    assertEquals("Trainer.fit: device fake:5 is not available (2 fake device(s) found)", e.getMessage());
    BatchSource unused = Fixtures.source(train, 32, 7);
    assertEquals(3, unused.numBatches());
  }
}
