package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

class ModelsTest {
  @Test
  void lenetMatchesPyTorchsParameterNamesCountsAndShapes() {
    Module m = Models.lenet5(10);
    assertEquals(61_706, m.numParameters(false));
    assertEquals(List.of("features.0.weight", "features.0.bias", "features.3.weight", "features.3.bias",
        "classifier.1.weight", "classifier.1.bias", "classifier.3.weight", "classifier.3.bias",
        "classifier.5.weight", "classifier.5.bias"), List.copyOf(m.stateDict().keySet()));
    assertArrayEquals(new int[] {2, 10}, m.forward(Tensor.randn(new Generator(0), 2, 1, 28, 28)).shape());
  }

  @Test
  void mlpAndConvnetHaveTheBenchmarkSizes() {
    Module mlp = Models.mlp(784, 256, 128, 10);
    assertEquals(784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10, mlp.numParameters(false));
    assertArrayEquals(new int[] {3, 10}, mlp.forward(Tensor.zeros(3, 1, 28, 28)).shape());
    Module conv = Models.convnet(3, 32, 10);
    // PyTorch: sum(p.numel() for p in convnet.parameters()) for the peers' definition
    assertEquals(896 + 64 + 9248 + 64 + 18496 + 128 + 36928 + 128 + 4096 * 256 + 256 + 2570, conv.numParameters(false));
    assertArrayEquals(new int[] {2, 10}, conv.forward(Tensor.zeros(2, 3, 32, 32)).shape());
    assertEquals("Models.convnet: image size must be divisible by 4, got 30",
        assertThrows(IllegalArgumentException.class, () -> Models.convnet(1, 30, 10)).getMessage());
  }
}
