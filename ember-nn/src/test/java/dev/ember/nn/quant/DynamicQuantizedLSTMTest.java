package dev.ember.nn.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.LSTM;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.RNNBase;
import dev.ember.nn.Sequential;
import dev.ember.nn.io.Json;
import dev.ember.nn.io.SafeTensors;
import dev.ember.quant.QDType;
import dev.ember.quant.QScheme;
import dev.ember.quant.QTensor;
import dev.ember.quant.Quantization;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** DynamicQuantizedLSTM: against the float LSTM, torch 1.13's quantize_dynamic LSTM, and its saved state. */
class DynamicQuantizedLSTMTest {
  @TempDir Path dir;

  private static LSTM lstm(long seed, boolean batchFirst) {
    return new LSTM(12, 16, 2, true, batchFirst, 0, true, new Generator(seed));
  }

  private static double maxAbsDiff(float[] a, float[] b) {
    double m = 0;
    for (int i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
    return m;
  }

  private static double maxAbs(float[] a) {
    double m = 0;
    for (float v : a) m = Math.max(m, Math.abs(v));
    return m;
  }

  @Test
  void weightsAreTheFloatOnesQuantizedPerRow() {
    LSTM f = lstm(1, false);
    DynamicQuantizedLSTM q = DynamicQuantizedLSTM.from(f);
    for (String w : List.of("weight_ih_l0", "weight_hh_l0", "weight_ih_l1_reverse", "weight_hh_l1_reverse")) {
      QTensor want = Quantization.quantize(f.param(w).detach(), QScheme.perChannelSymmetric(QDType.QINT8, 0));
      assertArrayEquals(want.intRepr(), q.weight(w).intRepr(), w);
      assertEquals(want.params(), q.weight(w).params(), w);
    }
    assertEquals("DynamicQuantizedLSTM(12, 16, num_layers=2, bidirectional=True, dtype=qint8)", q.toString());
  }

  @Test
  void closeToTheFloatLstmInEveryLayout() {
    LSTM f = lstm(2, true);
    Generator g = new Generator(3);
    Tensor x = Tensor.randn(g, 4, 9, 12);  // batch first [N, T, in]
    Tensor h0 = Tensor.randn(g, 4, 4, 16).mul(0.5);
    Tensor c0 = Tensor.randn(g, 4, 4, 16).mul(0.5);
    RNNBase.Output ref;
    try (var off = Grad.off()) {
      ref = f.forward(x, h0, c0);
    }
    DynamicQuantizedLSTM q = DynamicQuantizedLSTM.from(f);
    RNNBase.Output y = q.forward(x, h0, c0);
    assertArrayEquals(ref.output().shape(), y.output().shape());
    assertArrayEquals(ref.hN().shape(), y.hN().shape());
    assertArrayEquals(ref.cN().shape(), y.cN().shape());
    // int8 weights (per-row scale max|w|/127) and 8-bit activations: outputs within 1% of their range
    double err = maxAbsDiff(ref.output().toFloatArray(), y.output().toFloatArray());
    assertTrue(err < 0.01 * maxAbs(ref.output().toFloatArray()), "max |q - f32| = " + err);
    assertTrue(maxAbsDiff(ref.cN().toFloatArray(), y.cN().toFloatArray()) < 0.02 * maxAbs(ref.cN().toFloatArray()));
    // unbatched [T, in] gives the batched result of a batch of one
    Tensor one = x.narrow(0, 1, 1);
    Tensor unbatched = q.forward(one.squeeze(0));
    assertArrayEquals(new int[] {9, 32}, unbatched.shape());
    assertArrayEquals(q.forward(one).squeeze(0).toFloatArray(), unbatched.toFloatArray());
  }

  @Test
  @SuppressWarnings("unchecked")
  void closeToTorchQuantizeDynamicLstm() throws Exception {
    Map<String, Object> fx;
    try (InputStream in = getClass().getResourceAsStream("lstm_fixture.json")) {
      fx = (Map<String, Object>) Json.parsePlain(new String(in.readAllBytes(), StandardCharsets.UTF_8),
          Json.NonFinite.LITERALS);
    }
    int t = ((Number) fx.get("T")).intValue();
    int n = ((Number) fx.get("N")).intValue();
    LSTM f = new LSTM(10, 8, 2, true, false, 0, true, new Generator(0));
    Map<String, Tensor> sd = new LinkedHashMap<>();
    for (var e : ((Map<String, Object>) fx.get("params")).entrySet()) {
      Map<String, Object> p = (Map<String, Object>) e.getValue();
      int[] shape = ((List<?>) p.get("shape")).stream().mapToInt(v -> ((Number) v).intValue()).toArray();
      sd.put(e.getKey(), floats(p.get("values"), shape));
    }
    f.loadStateDict(sd);
    Tensor x = floats(fx.get("x"), t, n, 10);
    float[] torchF32 = floats(fx.get("f32"), t * n * 16).toFloatArray();
    float[] torchQ = floats(fx.get("dynamic"), t * n * 16).toFloatArray();
    try (var off = Grad.off()) {
      assertTrue(maxAbsDiff(torchF32, f.forward(x).toFloatArray()) < 1e-5);  // the same float LSTM
    }
    Module q = Quantize.dynamic(f);
    assertInstanceOf(DynamicQuantizedLSTM.class, q);
    float[] y = q.call(x).toFloatArray();
    double ours = maxAbsDiff(y, torchF32);
    double theirs = maxAbsDiff(torchQ, torchF32);
    double vsTorch = maxAbsDiff(y, torchQ);
    // torch quantizes activations to quint8 with reduce_range (7 bits), Ember to qint8 (8 bits): both are within a
    // few int8 quanta of the float LSTM, and of each other
    assertTrue(vsTorch < 0.005, "max |ember - torch dynamic| = " + vsTorch);
    assertTrue(ours <= theirs * 1.5, "ours " + ours + " vs torch's " + theirs + " from f32");
    float[] hq = floats(fx.get("dynamic_h"), 4 * n * 8).toFloatArray();
    RNNBase.Output out = ((DynamicQuantizedLSTM) q).forward(x, null, null);
    assertTrue(maxAbsDiff(hq, out.hN().toFloatArray()) < 0.005);
  }

  private static Tensor floats(Object list, int... shape) {
    List<?> l = (List<?>) list;
    float[] f = new float[l.size()];
    for (int i = 0; i < f.length; i++) f[i] = (float) ((Number) l.get(i)).doubleValue();
    return Tensor.of(f, shape);
  }

  @Test
  void quantizeDynamicReplacesNestedLstmsAndTheStateRoundTrips() throws Exception {
    Sequential model = new Sequential(lstm(4, true), new Linear(32, 5, true, new Generator(5)));
    Tensor x = Tensor.randn(new Generator(6), 3, 7, 12);
    Quantize.dynamic(model);
    assertInstanceOf(DynamicQuantizedLSTM.class, model.get(0));
    assertInstanceOf(DynamicQuantizedLinear.class, model.get(1));
    float[] want = model.call(x).toFloatArray();
    LinkedHashMap<String, Tensor> sd = model.stateDict();
    assertEquals(DType.I8, sd.get("0.weight_hh_l1_reverse").dtype());
    assertArrayEquals(new int[] {64, 32}, sd.get("0.weight_ih_l1").shape());
    assertEquals(DType.F32, sd.get("0.weight_ih_l0_scale").dtype());
    assertEquals(DType.I32, sd.get("0.weight_ih_l0_zero_point").dtype());
    assertEquals(DType.F32, sd.get("0.bias_hh_l0").dtype());
    assertEquals(2 * 2 * 8 + 4, sd.size());  // per layer and direction 3 + 3 weights' entries and 2 biases; the Linear's 4
    Path f = dir.resolve("lstm.safetensors");
    SafeTensors.save(sd, f);

    Sequential fresh = new Sequential(lstm(7, true), new Linear(32, 5, true, new Generator(8)));
    Quantize.dynamic(fresh);
    fresh.loadStateDict(SafeTensors.load(f));
    assertArrayEquals(want, fresh.call(x).toFloatArray());

    Map<String, Tensor> bad = SafeTensors.load(f);
    float[] s = bad.get("0.weight_hh_l0_reverse_scale").toFloatArray();
    s[7] = -1f;
    bad.put("0.weight_hh_l0_reverse_scale", Tensor.of(s, s.length));
    QuantizedStateException e = assertThrows(QuantizedStateException.class, () -> fresh.loadStateDict(bad));
    assertEquals("0.weight_hh_l0_reverse_scale", e.key());
  }

  @Test
  void badInputsNameTheLayerAndShapes() {
    DynamicQuantizedLSTM q = DynamicQuantizedLSTM.from(lstm(9, false));
    var e = assertThrows(IllegalArgumentException.class, () -> q.forward(Tensor.zeros(5, 2, 11)));
    assertTrue(e.getMessage().startsWith("DynamicQuantizedLSTM: input's last dimension must be input_size (12)"),
        e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> q.forward(Tensor.zeros(5, 2, 12), Tensor.zeros(4, 2, 16), null));
    var h = assertThrows(IllegalArgumentException.class,
        () -> q.forward(Tensor.zeros(5, 2, 12), Tensor.zeros(4, 3, 16), Tensor.zeros(4, 3, 16)));
    assertTrue(h.getMessage().contains("h0 must have shape [4, 2, 16]"), h.getMessage());
    assertThrows(IllegalArgumentException.class, () -> q.forward(Tensor.zeros(5, 12)
        .add(Tensor.of(new float[] {Float.NaN}, 1))));
  }
}
