package dev.ember.nn.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Static quantized layers keep their state in buffers: stateDict and safetensors carry a converted model. */
class StaticQuantizedStateTest {
  @TempDir Path dir;

  private static Module converted(long seed) {
    Generator g = new Generator(seed);
    return Quantize.convert(StaticQuantizationTest.calibrated(StaticQuantizationTest.convNet(g), QConfig.ptqDefault(),
        g, 4, 2, 8, 8));
  }

  @Test
  void stateDictHoldsInt8WeightsScalesZeroPointsAndActivationParameters() {
    Map<String, Tensor> sd = converted(1).stateDict();
    assertEquals(List.of("0.weight", "0.weight_scale", "0.weight_zero_point", "0.input_scale", "0.input_zero_point",
        "0.scale", "0.zero_point", "0.bias"), sd.keySet().stream().filter(k -> k.startsWith("0.")).toList());
    assertEquals(DType.I8, sd.get("0.weight").dtype());
    assertArrayEquals(new int[] {4, 2, 3, 3}, sd.get("0.weight").shape());
    assertEquals(DType.I32, sd.get("5.zero_point").dtype());
    assertArrayEquals(new int[] {12}, sd.get("5.weight_scale").shape());
  }

  @Test
  void safetensorsRoundTripIntoAFreshConvertedModelIsBitExact() throws IOException {
    Module saved = converted(1);
    Tensor x = Tensor.randn(new Generator(9), 3, 2, 8, 8);
    float[] want = saved.call(x).toFloatArray();
    Path f = dir.resolve("static.safetensors");
    SafeTensors.save(saved.stateDict(), f);
    Module fresh = converted(2);
    assertFalse(java.util.Arrays.equals(want, fresh.call(x).toFloatArray()));
    fresh.loadStateDict(SafeTensors.load(f));
    assertArrayEquals(want, fresh.call(x).toFloatArray());
    QuantizedConv2d a = (QuantizedConv2d) ((Sequential) saved).get(2);
    QuantizedConv2d b = (QuantizedConv2d) ((Sequential) fresh).get(2);
    assertEquals(a.outputQParams(), b.outputQParams());
    assertEquals(a.weight().params(), b.weight().params());
  }

  @Test
  void invalidEntriesAreRejectedNamingTheKeyBeforeAnythingIsCopied() {
    Module target = converted(2);
    Tensor x = Tensor.randn(new Generator(9), 1, 2, 8, 8);
    float[] before = target.call(x).toFloatArray();
    Map<String, Tensor> sd = new LinkedHashMap<>(converted(1).stateDict());
    sd.put("6.zero_point", Tensor.of(new int[] {300}, 1));
    var e = assertThrows(QuantizedStateException.class, () -> target.loadStateDict(sd));
    assertTrue(e.getMessage().contains("6.zero_point") && e.getMessage().contains("quint8"), e.getMessage());
    sd.put("6.zero_point", Tensor.of(new int[] {3}, 1));
    sd.put("2.weight_zero_point", Tensor.of(new int[] {0, 0, 1, 0, 0, 0}, 6));
    var e2 = assertThrows(QuantizedStateException.class, () -> target.loadStateDict(sd));
    assertTrue(e2.getMessage().contains("2.weight_zero_point"), e2.getMessage());
    sd.put("2.weight_zero_point", Tensor.of(new int[6], 6));
    sd.put("0.input_scale", Tensor.of(new float[] {-1f}, 1));
    assertThrows(QuantizedStateException.class, () -> target.loadStateDict(sd));
    assertArrayEquals(before, target.call(x).toFloatArray());
  }
}
