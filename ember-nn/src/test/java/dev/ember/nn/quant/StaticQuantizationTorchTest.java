package dev.ember.nn.quant;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Conv2d;
import dev.ember.nn.ConvReLU2d;
import dev.ember.nn.Flatten;
import dev.ember.nn.Linear;
import dev.ember.nn.LinearReLU;
import dev.ember.nn.MaxPool2d;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.io.Json;
import dev.ember.tensor.Tensor;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Static post-training quantization against torch 1.13's eager {@code prepare} / {@code convert} (fixture:
 * make_static_fixture.py) with the same weights, calibration batches and observers (MinMax per-tensor affine quint8
 * activations, per-channel symmetric qint8 weights), on both engines this torch build has (qnnpack, onednn).
 * Measured: every output value is identical to torch's on both engines (the values are on the last layer's output
 * grid, so a difference would be at least one quantum: qnnpack quantizes the bias to int32 and onednn rounds its
 * requantization multiplier its own way, which could move a value next to a rounding tie to the neighbouring grid
 * point; none did here).
 */
class StaticQuantizationTorchTest {
  private static Map<String, Object> fx;

  @SuppressWarnings("unchecked")
  private static Map<String, Object> fixture() throws Exception {
    if (fx == null) {
      try (InputStream in = StaticQuantizationTorchTest.class.getResourceAsStream("static_fixture.json")) {
        fx = (Map<String, Object>) Json.parsePlain(new String(in.readAllBytes(), StandardCharsets.UTF_8),
            Json.NonFinite.LITERALS);
      }
    }
    return fx;
  }

  @Test
  void convNetMatchesTorchStaticQuantization() throws Exception {
    Conv2d conv1 = new Conv2d(2, 4, 3, 1, 1);
    Conv2d conv2 = new Conv2d(4, 6, 3);
    Linear fc1 = new Linear(24, 16);
    Linear fc2 = new Linear(16, 5);
    load(conv1, "conv.conv1", 4, 2, 3, 3);
    load(conv2, "conv.conv2", 6, 4, 3, 3);
    load(fc1, "conv.fc1", 16, 24);
    load(fc2, "conv.fc2", 5, 16);
    Sequential model = new Sequential(new ConvReLU2d(conv1), new MaxPool2d(2), conv2, new ReLU(), new Flatten(),
        new LinearReLU(fc1), fc2);
    compare(model, "conv", 2, 8, 8);
  }

  @Test
  void mlpMatchesTorchStaticQuantization() throws Exception {
    Linear fc1 = new Linear(48, 32);
    Linear fc2 = new Linear(32, 10);
    load(fc1, "mlp.fc1", 32, 48);
    load(fc2, "mlp.fc2", 10, 32);
    compare(new Sequential(new Flatten(), fc1, new ReLU(), fc2), "mlp", 3, 4, 4);
  }

  private static void compare(Sequential model, String name, int... sample) throws Exception {
    Tensor x = t(name + ".x", batch(6, sample));
    float[] f32 = model.call(x).toFloatArray();
    float[] torchF32 = t(name + ".f32", f32.length).toFloatArray();
    for (int i = 0; i < f32.length; i++) assertTrue(Math.abs(f32[i] - torchF32[i]) < 1e-5, "float model, element " + i);
    Module p = Quantize.prepare(model, QConfig.ptqDefault());
    for (Object b : (List<?>) fixture().get(name + ".calib")) p.call(tensor((List<?>) b, batch(8, sample)));
    Sequential q = (Sequential) Quantize.convert(p);
    QuantizedLinear last = (QuantizedLinear) q.get(q.size() - 1);
    double quantum = last.outputQParams().scales()[0];
    float[] y = q.call(x).toFloatArray();
    for (String engine : new String[] {"qnnpack", "onednn"}) {
      float[] ref = t(name + "." + engine, y.length).toFloatArray();
      int same = 0;
      for (int i = 0; i < y.length; i++) {
        assertTrue(Math.abs(y[i] - ref[i]) <= quantum * 1.001, name + " " + engine + " element " + i + ": " + y[i]
            + " vs torch " + ref[i] + " (quantum " + quantum + ")");
        if (Math.abs(y[i] - ref[i]) < quantum * 1e-3) same++;
      }
      // measured: every value identical (mlp 60 of 60, conv 30 of 30, both engines)
      assertTrue(same == y.length, name + " " + engine + ": " + same + " of " + y.length + " identical");
    }
  }

  private static int[] batch(int n, int... sample) {
    int[] s = new int[sample.length + 1];
    s[0] = n;
    System.arraycopy(sample, 0, s, 1, sample.length);
    return s;
  }

  private static void load(Module layer, String key, int... weightShape) throws Exception {
    layer.loadStateDict(Map.of("weight", t(key + ".weight", weightShape), "bias", t(key + ".bias", weightShape[0])));
  }

  private static Tensor t(String key, int... shape) throws Exception {
    return tensor((List<?>) fixture().get(key), shape);
  }

  private static Tensor tensor(List<?> l, int... shape) {
    float[] f = new float[l.size()];
    for (int i = 0; i < f.length; i++) f[i] = (float) ((Number) l.get(i)).doubleValue();
    return Tensor.of(f, shape);
  }
}
