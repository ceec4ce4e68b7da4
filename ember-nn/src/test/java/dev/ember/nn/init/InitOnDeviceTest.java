package dev.ember.nn.init;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.FakeDevice;
import java.util.List;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/** Initialising a tensor on the fake device fills it there with the values a CPU tensor gets from the same seed. */
class InitOnDeviceTest {
  @Test
  void everyInitFillsADeviceTensorAsACpuOne() {
    List<BiConsumer<Tensor, Generator>> inits = List.of(
        (t, g) -> Init.uniform_(t, -1, 2, g), (t, g) -> Init.normal_(t, 0.5, 2, g),
        (t, g) -> Init.xavierUniform_(t, 1.0, g), (t, g) -> Init.kaimingNormal_(t, 0, Init.FanMode.FAN_IN, "relu", g),
        (t, g) -> Init.truncNormal_(t, 0, 1, -2, 2, g), (t, g) -> Init.orthogonal_(t, 1.5, g),
        (t, g) -> Init.constant_(t, 0.25), (t, g) -> Init.ones_(t));
    for (int i = 0; i < inits.size(); i++) {
      Tensor cpu = Tensor.zeros(DType.F32, 4, 6);
      Tensor dev = Tensor.zeros(FakeDevice.DEVICE, DType.F32, 4, 6);
      inits.get(i).accept(cpu, new Generator(i));
      inits.get(i).accept(dev, new Generator(i));
      assertEquals(FakeDevice.DEVICE, dev.device());
      assertArrayEquals(cpu.toFloatArray(), dev.cpu().toFloatArray(), "init " + i);
    }
  }
}
