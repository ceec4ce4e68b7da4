package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.nn.LSTM;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.quant.Quantize;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A dynamically quantized model's state (int8 weights, I8 tensors) in a checkpoint, restored bit for bit. */
class QuantizedCheckpointTest {
  private static Sequential model(long seed) {
    Generator g = new Generator(seed);
    return new Sequential(new LSTM(6, 8, 1, true, true, 0, false, g), new Linear(8, 3, true, g));
  }

  @Test
  @SuppressWarnings("unchecked")
  void quantizedStateRoundTripsThroughACheckpoint(@TempDir Path dir) throws Exception {
    Module q = Quantize.dynamic(model(1));
    Tensor x = Tensor.randn(new Generator(2), 4, 5, 6);
    float[] want = q.call(x).toFloatArray();
    Map<String, Object> state = new LinkedHashMap<>();
    state.put("model", new LinkedHashMap<>(q.stateDict()));
    state.put("epoch", 3);
    Path f = dir.resolve("q.ckpt");
    Checkpoint.write(f, state);

    Map<String, Object> r = Checkpoint.read(f);
    Map<String, Tensor> sd = (Map<String, Tensor>) r.get("model");
    assertEquals(DType.I8, sd.get("0.weight_ih_l0").dtype());
    assertEquals(DType.I8, sd.get("1.weight").dtype());
    Module fresh = Quantize.dynamic(model(7));
    fresh.loadStateDict(sd);
    assertArrayEquals(want, fresh.call(x).toFloatArray());
  }
}
