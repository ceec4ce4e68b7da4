package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Arr;
import dev.ember.testing.Assertions;
import dev.ember.testing.FakeDevice;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each layer, moved to the strict fake device with {@link Module#to(Device)}, gives the CPU's output and the CPU's
 * parameter and input gradients: layers whose forward or backward allocate on the host, read device data there or
 * keep host state (masks, running statistics, recurrent states) fail here.
 */
class ModulesOnDeviceTest {
  private static final Device FAKE = FakeDevice.DEVICE;

  private static Arguments row(String name, Supplier<Module> build, int... inputShape) {
    return Arguments.of(name, build, inputShape);
  }

  static Stream<Arguments> layers() {
    return Stream.of(
        row("Conv1d", () -> new Conv1d(3, 4, 3, 1, 1), 2, 3, 9),
        row("Conv2d", () -> new Conv2d(3, 4, 3, 2, 1), 2, 3, 8, 8),
        row("ConvTranspose2d", () -> new ConvTranspose2d(3, 2, 3, 2, 1), 2, 3, 5, 5),
        row("AvgPool1d", () -> new AvgPool1d(2), 2, 3, 8),
        row("MaxPool1d", () -> new MaxPool1d(2), 2, 3, 8),
        row("AvgPool2d", () -> new AvgPool2d(2), 2, 3, 6, 6),
        row("AdaptiveAvgPool2d", () -> new AdaptiveAvgPool2d(3), 2, 3, 7, 7),
        row("AdaptiveMaxPool2d", () -> new AdaptiveMaxPool2d(3), 2, 3, 7, 7),
        row("BatchNorm1d", () -> new BatchNorm1d(5), 6, 5),
        row("BatchNorm2d", () -> new BatchNorm2d(3), 2, 3, 4, 4),
        row("GroupNorm", () -> new GroupNorm(2, 4), 2, 4, 3, 3),
        row("LayerNorm", () -> new LayerNorm(6), 3, 4, 6),
        row("RMSNorm", () -> new RMSNorm(6), 3, 4, 6),
        row("RNN", () -> new RNN(4, 5), 6, 2, 4),
        row("LSTM", () -> new LSTM(4, 5), 6, 2, 4),
        row("GRU", () -> new GRU(4, 5), 6, 2, 4),
        row("MultiheadAttention", () -> new MultiheadAttention(8, 2), 5, 2, 8),
        row("TransformerEncoder", () -> new TransformerEncoder(new TransformerEncoderLayer(8, 2, 16, 0.0, "relu", 1e-5,
            true, true, true, new Generator(5)), 2), 2, 5, 8),
        row("Upsample nearest", () -> new Upsample(2.0), 2, 3, 4, 4),
        row("Upsample bilinear", () -> new Upsample(2.0, "bilinear"), 2, 3, 4, 4),
        row("Dropout2d", () -> new Dropout2d(0.5), 2, 4, 3, 3),
        row("LearnedPositionalEmbedding", () -> new LearnedPositionalEmbedding(10, 6), 2, 5, 6),
        row("SinusoidalPositionalEncoding", () -> new SinusoidalPositionalEncoding(6, 10), 2, 5, 6),
        row("Residual(Linear)", () -> new Residual(new Linear(6, 6)), 3, 6),
        row("Hardswish", Hardswish::new, 3, 6),
        row("Softmax", () -> new Softmax(-1), 3, 6),
        row("LogSoftmax", () -> new LogSoftmax(-1), 3, 6));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("layers")
  void aLayerOnTheFakeDeviceGivesTheCpuOutputAndGradients(String name, Supplier<Module> build, int[] shape) {
    Module cpu = build.get();
    Module fake = build.get();
    fake.loadStateDict(cpu.stateDict());
    fake.to(FAKE);
    boolean stateful = !fake.namedParameters().isEmpty() || !fake.namedBuffers().isEmpty();
    assertEquals(stateful ? FAKE : Device.CPU, fake.device(), name + ": a module without state reports the cpu");
    Tensor x = Tensor.randn(new Generator(1), shape);
    Tensor xc = x.clone().requiresGrad(true);
    Tensor xd = x.to(FAKE).requiresGrad(true);
    Generator.manualSeed(3); // a layer drawing from the global generator draws the same on both
    Tensor yc = cpu.call(xc);
    Generator.manualSeed(3);
    Tensor yd = fake.call(xd);
    assertEquals(FAKE, yd.device(), name + " output device");
    Assertions.assertClose(Arr.of(yc), yd.cpu(), 1e-6, 1e-6, name + " output");
    Tensor w = Tensor.rand(new Generator(2), yc.shapeRef());
    yc.mul(w).sum().backward();
    yd.mul(w.to(FAKE)).sum().backward();
    Assertions.assertClose(Arr.of(xc.grad()), xd.grad().cpu(), 1e-6, 1e-6, name + " input gradient");
    Map<String, Tensor> pc = cpu.namedParameters();
    Map<String, Tensor> pd = fake.namedParameters();
    for (String k : pc.keySet()) {
      assertEquals(FAKE, pd.get(k).grad().device(), name + " " + k + " gradient device");
      Assertions.assertClose(Arr.of(pc.get(k).grad()), pd.get(k).grad().cpu(), 1e-6, 1e-6, name + " " + k + " gradient");
    }
    for (var e : cpu.namedBuffers().entrySet()) { // running statistics updated on the device alike
      Tensor b = fake.namedBuffers().get(e.getKey());
      assertEquals(FAKE, b.device(), name + " buffer " + e.getKey());
      Assertions.assertClose(Arr.of(e.getValue()), b.cpu(), 1e-6, 1e-6, name + " buffer " + e.getKey());
    }
  }

  /**
   * BatchNorm with momentum=None (a cumulative average of the batch statistics) needs the batch count on the host:
   * it reads the device's num_batches_tracked once, then counts it itself, and reads again only when the buffer
   * changed otherwise (here a loaded state): the CPU's running statistics after every step.
   */
  @Test
  void cumulativeBatchNormReadsItsBatchCountOnlyWhenTheBufferChangedElsewhere() throws Exception {
    BatchNorm1d cpu = new BatchNorm1d(4, 1e-5, null, true, true);
    BatchNorm1d fake = new BatchNorm1d(4, 1e-5, null, true, true);
    fake.to(FAKE);
    int[] downloads = {0};
    Generator g = new Generator(6);
    for (int step = 0; step < 6; step++) {
      if (step == 3) { // a state from elsewhere: 10 batches counted
        java.util.Map<String, Tensor> state = new java.util.LinkedHashMap<>(cpu.stateDict());
        state.put("num_batches_tracked", Tensor.of(new long[] {10}).reshape());
        cpu.loadStateDict(state);
        fake.loadStateDict(state);
      }
      Tensor x = Tensor.randn(g, 5, 4);
      Tensor xd = x.to(FAKE);
      cpu.call(x);
      int before = downloads[0];
      try (AutoCloseable w = FakeDevice.watch((name, args) -> {
        if ((name.equals("copy") || name.equals("copyNonBlocking"))
            && !((dev.ember.backend.View) args[1]).storage().onDevice()) {
          downloads[0]++;
        }
      })) {
        fake.call(xd);
      }
      assertEquals(step == 0 || step == 3 ? 1 : 0, downloads[0] - before, "host reads at step " + step);
      Assertions.assertClose(Arr.of(cpu.buffer("running_mean")), fake.buffer("running_mean").cpu(), 1e-6, 1e-6,
          "running mean after step " + step);
      Assertions.assertClose(Arr.of(cpu.buffer("running_var")), fake.buffer("running_var").cpu(), 1e-6, 1e-6,
          "running var after step " + step);
    }
    assertEquals(13, fake.numBatchesTracked());
  }
}
