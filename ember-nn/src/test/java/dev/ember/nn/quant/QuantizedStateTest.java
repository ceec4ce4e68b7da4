package dev.ember.nn.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.StateDictException;
import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A dynamically quantized model's state: its buffers, safetensors round trips, and corrupt states refused. */
class QuantizedStateTest {
  @TempDir Path dir;

  private static Sequential mlp(long seed) {
    Generator g = new Generator(seed);
    return new Sequential(new Linear(20, 16, true, g), new ReLU(), new Linear(16, 5, false, g));
  }

  @Test
  void stateDictHoldsTheInt8WeightScalesZeroPointsAndBias() {
    Module q = Quantize.dynamic(mlp(1));
    LinkedHashMap<String, Tensor> sd = q.stateDict();
    assertEquals(List.of("0.weight", "0.weight_scale", "0.weight_zero_point", "0.bias", "2.weight", "2.weight_scale",
        "2.weight_zero_point"), List.copyOf(sd.keySet()));
    assertEquals(DType.I8, sd.get("0.weight").dtype());
    assertArrayEquals(new int[] {16, 20}, sd.get("0.weight").shape());
    assertEquals(DType.F32, sd.get("0.weight_scale").dtype());
    assertEquals(DType.I32, sd.get("0.weight_zero_point").dtype());
    assertArrayEquals(new long[16], sd.get("0.weight_zero_point").toLongArray());
    assertEquals(DType.F32, sd.get("0.bias").dtype());
    // the buffers are what the layer computes with: its QTensor view reads them
    DynamicQuantizedLinear l0 = (DynamicQuantizedLinear) ((Sequential) q).get(0);
    assertArrayEquals(sd.get("0.weight").storage().int8s(), l0.weight().bytes());
    assertArrayEquals(sd.get("0.weight_scale").toFloatArray(), l0.weight().params().scales());
  }

  @Test
  void safetensorsRoundTripIntoAFreshQuantizedModelIsBitExact() throws IOException {
    Module saved = Quantize.dynamic(mlp(1));
    Tensor x = Tensor.randn(new Generator(9), 7, 20);
    float[] want = saved.call(x).toFloatArray();
    Path f = dir.resolve("q.safetensors");
    SafeTensors.save(saved.stateDict(), f);

    Module fresh = Quantize.dynamic(mlp(2));  // other random weights, quantized: the same architecture
    assertFalse(java.util.Arrays.equals(want, fresh.call(x).toFloatArray()));
    fresh.loadStateDict(SafeTensors.load(f));
    assertArrayEquals(want, fresh.call(x).toFloatArray());
    // the layer's QTensor view and bias follow the loaded buffers too
    DynamicQuantizedLinear a = (DynamicQuantizedLinear) ((Sequential) saved).get(0);
    DynamicQuantizedLinear b = (DynamicQuantizedLinear) ((Sequential) fresh).get(0);
    assertEquals(a.weight().params(), b.weight().params());
    assertArrayEquals(a.bias().toFloatArray(), b.bias().toFloatArray());
  }

  @Test
  void floatBuffersConvertedByModuleToStillCompute() {
    Module q = Quantize.dynamic(mlp(3));
    Tensor x = Tensor.randn(new Generator(4), 3, 20);
    float[] want = q.call(x).toFloatArray();
    q.to(DType.F64);  // scales and bias become float64; the int8 weight and int32 zero points stay
    assertEquals(DType.F64, q.stateDict().get("0.weight_scale").dtype());
    assertEquals(DType.I8, q.stateDict().get("0.weight").dtype());
    assertArrayEquals(want, q.call(x).toFloatArray());
  }

  /** Saves a good state, breaks one entry, and expects the load to fail naming it with nothing copied. */
  private void rejects(String key, Consumer<Map<String, Tensor>> corrupt, String message) throws IOException {
    Module saved = Quantize.dynamic(mlp(1));
    Path f = dir.resolve("bad.safetensors");
    LinkedHashMap<String, Tensor> sd = new LinkedHashMap<>(saved.stateDict());
    corrupt.accept(sd);
    SafeTensors.save(sd, f);
    Module target = Quantize.dynamic(mlp(2));
    Tensor x = Tensor.randn(new Generator(5), 2, 20);
    float[] before = target.call(x).toFloatArray();
    Map<String, Tensor> loaded = SafeTensors.load(f);
    QuantizedStateException e = assertThrows(QuantizedStateException.class, () -> target.loadStateDict(loaded));
    assertEquals(key, e.key());
    assertEquals(key + ": " + message, e.getMessage());
    assertArrayEquals(before, target.call(x).toFloatArray(), "nothing is copied when a check fails");
  }

  @Test
  void corruptStatesAreRejectedNamingTheKey() throws IOException {
    rejects("0.weight", sd -> sd.put("0.weight", sd.get("0.weight").to(DType.F32)), "dtype must be int8, got float32");
    rejects("2.weight_scale", sd -> sd.put("2.weight_scale", sd.get("2.weight_scale").to(DType.F64)),
        "dtype must be float32, got float64");
    rejects("0.weight_zero_point", sd -> sd.put("0.weight_zero_point", sd.get("0.weight_zero_point").to(DType.I64)),
        "dtype must be int32, got int64");
    rejects("0.weight_scale", sd -> sd.put("0.weight_scale", with(sd.get("0.weight_scale"), 3, 0f)),
        "scale must be positive and finite, got scale[3]=0.0");
    rejects("0.weight_scale", sd -> sd.put("0.weight_scale", with(sd.get("0.weight_scale"), 0, -0.5f)),
        "scale must be positive and finite, got scale[0]=-0.5");
    rejects("2.weight_scale", sd -> sd.put("2.weight_scale", with(sd.get("2.weight_scale"), 4, Float.NaN)),
        "scale must be positive and finite, got scale[4]=NaN");
    rejects("2.weight_scale", sd -> sd.put("2.weight_scale", with(sd.get("2.weight_scale"), 1,
        Float.POSITIVE_INFINITY)), "scale must be positive and finite, got scale[1]=Infinity");
    rejects("0.weight_zero_point", sd -> sd.put("0.weight_zero_point", zeroPoints(16, 2, 200)),
        "zero point out of range for qint8 (-128..127), got zero_point[2]=200");
    rejects("0.weight_zero_point", sd -> sd.put("0.weight_zero_point", zeroPoints(16, 5, -3)),
        "weights are per-channel symmetric, so every zero point must be 0, got zero_point[5]=-3");
    rejects("0.bias", sd -> sd.put("0.bias", with(sd.get("0.bias"), 0, Float.NaN)), "bias must be finite, got bias[0]=NaN");
  }

  @Test
  void mismatchedShapesAndKeysAreRejectedByTheStateDictCheck() throws IOException {
    Module target = Quantize.dynamic(mlp(2));
    Map<String, Tensor> sd = new LinkedHashMap<>(Quantize.dynamic(mlp(1)).stateDict());
    sd.put("0.weight", Tensor.zeros(DType.I8, 16, 21));
    StateDictException e = assertThrows(StateDictException.class, () -> target.loadStateDict(sd));
    assertEquals(List.of("0.weight: checkpoint [16, 21] vs model [16, 20]"), e.shapeMismatches());
    // a float model's checkpoint does not fit a quantized one: the quantized keys are missing
    StateDictException f = assertThrows(StateDictException.class, () -> target.loadStateDict(mlp(1).stateDict()));
    assertTrue(f.missingKeys().contains("0.weight_scale"), f.getMessage());
    assertEquals(List.of("2.weight_scale", "2.weight_zero_point"),
        f.missingKeys().stream().filter(k -> k.startsWith("2.")).toList());
  }

  private static Tensor with(Tensor t, int i, float v) {
    float[] a = t.toFloatArray();
    a[i] = v;
    return Tensor.of(a, t.shape());
  }

  private static Tensor zeroPoints(int n, int i, int v) {
    int[] a = new int[n];
    a[i] = v;
    return Tensor.of(a, n);
  }
}
