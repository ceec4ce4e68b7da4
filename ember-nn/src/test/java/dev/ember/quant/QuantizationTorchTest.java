package dev.ember.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.Json;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * dev.ember.quant against torch 1.13 (make_quant_fixtures.py): quantize_per_tensor / quantize_per_channel values
 * bit for bit (round half to even, clamping), dequantize, and every observer's calculate_qparams.
 */
class QuantizationTorchTest {
  private static Map<String, Object> fixture() throws IOException, Json.SyntaxError {
    return JsonFixture.load(QuantizationTorchTest.class, "quant_fixtures.json");
  }

  private static int[] ints(Object o) {
    List<?> l = (List<?>) o;
    int[] v = new int[l.size()];
    for (int i = 0; i < v.length; i++) v[i] = (int) ((Number) l.get(i)).longValue();
    return v;
  }

  private static QDType dtype(Object o) {
    return "qint8".equals(o) ? QDType.QINT8 : QDType.QUINT8;
  }

  private static Tensor tensor(Map<?, ?> c) {
    return Tensor.of(JsonFixture.floats(c.get("x")), ints(c.get("shape")));
  }

  @Test
  @SuppressWarnings("unchecked")
  void quantizeMatchesTorch() throws Exception {
    List<Object> cases = (List<Object>) fixture().get("quantize");
    assertEquals(12, cases.size());
    for (Object o : cases) {
      Map<String, Object> c = (Map<String, Object>) o;
      Tensor x = tensor(c);
      QDType t = dtype(c.get("dtype"));
      QTensor q = "tensor".equals(c.get("kind"))
          ? Quantization.quantizePerTensor(x, ((Number) c.get("scale")).doubleValue(),
              (int) ((Number) c.get("zero_point")).longValue(), t)
          : Quantization.quantizePerChannel(x, JsonFixture.floats(c.get("scales")), ints(c.get("zero_points")),
              (int) ((Number) c.get("axis")).longValue(), t);
      assertArrayEquals(ints(c.get("int_repr")), q.intRepr(), c.toString().substring(0, 80));
      float[] want = JsonFixture.floats(c.get("dequant"));
      float[] got = q.dequantize().toFloatArray();
      for (int i = 0; i < want.length; i++) {  // torch's vector path computes (q - z) * s as an fma: 1 ulp apart
        assertEquals(want[i], got[i], 2 * Math.ulp(want[i]), "dequantize element " + i);
      }
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void observersMatchTorch() throws Exception {
    List<Object> cases = (List<Object>) fixture().get("observers");
    assertTrue(cases.size() > 50);
    for (Object o : cases) {
      Map<String, Object> c = (Map<String, Object>) o;
      String qs = (String) c.get("qscheme");
      QDType t = dtype(c.get("dtype"));
      boolean sym = qs.endsWith("symmetric");
      boolean rr = Boolean.TRUE.equals(c.get("reduce_range"));
      Observer obs;
      switch ((String) c.get("name")) {
        case "MinMaxObserver" -> obs = c.containsKey("quant_min")
            ? new MinMaxObserver(new QScheme(t, sym, -1), (int) ((Number) c.get("quant_min")).longValue(),
                (int) ((Number) c.get("quant_max")).longValue())
            : new MinMaxObserver(new QScheme(t, sym, -1), rr);
        case "MovingAverageMinMaxObserver" -> obs = new MovingAverageMinMaxObserver(
            ((Number) c.get("averaging_constant")).doubleValue(), new QScheme(t, sym, -1), rr);
        case "PerChannelMinMaxObserver" -> obs = new PerChannelMinMaxObserver(
            new QScheme(t, sym, (int) ((Number) c.get("axis")).longValue()), rr);
        default -> throw new AssertionError(c.get("name"));
      }
      for (Object b : (List<Object>) c.get("batches")) {
        Tensor x = tensor((Map<?, ?>) b);
        assertTrue(obs.observe(x) == x);
      }
      QParams p = obs.calculateQParams();
      String what = c.get("name") + " " + qs + " " + t + " rr=" + rr + " " + c.get("axis") + " " + c.get("averaging_constant");
      assertArrayEquals(JsonFixture.floats(c.get("scales")), p.scales(), what);
      assertArrayEquals(ints(c.get("zero_points")), p.zeroPoints(), what);
    }
  }
}
