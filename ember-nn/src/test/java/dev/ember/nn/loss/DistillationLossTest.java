package dev.ember.nn.loss;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.io.Json;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Assertions;
import dev.ember.testing.GradCheck;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * DistillationLoss against torch 1.13 (distillation_fixture.json, written by make_distillation_fixture.py beside it:
 * value and gradients for five (T, alpha) pairs in float64), a float64 gradcheck, the half-precision path and the
 * argument errors.
 */
class DistillationLossTest {
  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> cases() throws Exception {
    try (InputStream in = DistillationLossTest.class.getResourceAsStream("distillation_fixture.json")) {
      String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      return (List<Map<String, Object>>) ((Map<String, Object>) Json.parsePlain(text, Json.NonFinite.LITERALS))
          .get("cases");
    }
  }

  private static double[] doubles(Object list) {
    List<?> l = (List<?>) list;
    double[] out = new double[l.size()];
    for (int i = 0; i < out.length; i++) out[i] = ((Number) l.get(i)).doubleValue();
    return out;
  }

  private static long[] longs(Object list) {
    List<?> l = (List<?>) list;
    long[] out = new long[l.size()];
    for (int i = 0; i < out.length; i++) out[i] = ((Number) l.get(i)).longValue();
    return out;
  }

  private static int i(Map<String, Object> m, String k) {
    return ((Number) m.get(k)).intValue();
  }

  private static double d(Map<String, Object> m, String k) {
    return ((Number) m.get(k)).doubleValue();
  }

  @Test
  void valuesAndGradientsMatchTorch() throws Exception {
    List<Map<String, Object>> cases = cases();
    assertEquals(5, cases.size());
    for (Map<String, Object> c : cases) {
      int n = i(c, "n"), k = i(c, "c");
      double temperature = d(c, "temperature"), alpha = d(c, "alpha");
      String what = "T=" + temperature + " alpha=" + alpha;
      Tensor s = Tensor.of(doubles(c.get("student")), n, k).requiresGrad(true);
      Tensor t = Tensor.of(doubles(c.get("teacher")), n, k).requiresGrad(true);
      Tensor y = Tensor.of(longs(c.get("labels")), n);
      Tensor loss = new DistillationLoss(temperature, alpha).forward(s, t, y);
      assertEquals(0, loss.dim(), what);
      assertEquals(DType.F64, loss.dtype(), what);
      assertEquals(d(c, "loss"), loss.item(), 1e-12 * Math.max(1, Math.abs(d(c, "loss"))), what + " loss");
      loss.backward();
      Assertions.assertClose(Tensor.of(doubles(c.get("grad_student")), n, k), s.grad(), 1e-12, 1e-10,
          what + " grad student");
      Tensor gt = t.grad() == null ? Tensor.zeros(DType.F64, n, k) : t.grad(); // alpha 0: no soft term, no edge
      Assertions.assertClose(Tensor.of(doubles(c.get("grad_teacher")), n, k), gt, 1e-12, 1e-10,
          what + " grad teacher");
      // float32 logits: the same value to float32 precision
      Tensor loss32 = new DistillationLoss(temperature, alpha).forward(s.detach().to(DType.F32),
          t.detach().to(DType.F32), y);
      assertEquals(DType.F32, loss32.dtype());
      assertEquals(d(c, "loss"), loss32.item(), 1e-5 * Math.max(1, Math.abs(d(c, "loss"))), what + " f32");
    }
  }

  @Test
  void gradcheckF64() {
    Generator g = new Generator(3);
    Tensor y = Tensor.of(new long[] {2, 0, 4}, 3);
    for (double[] ta : new double[][] {{3.0, 0.7}, {1.0, 1.0}, {0.5, 0.2}}) {
      Tensor s = Tensor.randn(g, DType.F64, 3, 5).mul(2).requiresGrad(true);
      Tensor t = Tensor.randn(g, DType.F64, 3, 5).mul(2).requiresGrad(true);
      DistillationLoss loss = new DistillationLoss(ta[0], ta[1]);
      GradCheck.check("distillation_loss T=" + ta[0] + " alpha=" + ta[1], in -> loss.forward(in.get(0), in.get(1), y),
          List.of(s, t));
    }
  }

  @Test
  void edgesOfAlpha() {
    Generator g = new Generator(4);
    Tensor s = Tensor.randn(g, DType.F64, 4, 6);
    Tensor t = Tensor.randn(g, DType.F64, 4, 6);
    Tensor y = Tensor.of(new long[] {1, 5, 0, 3}, 4);
    // alpha 0 is plain cross entropy; the teacher may be absent
    assertEquals(Losses.crossEntropy(s, y).item(), new DistillationLoss(2, 0).forward(s, null, y).item(), 1e-15);
    // alpha 1 is the soft term alone; labels may be absent, and a student equal to the teacher costs nothing
    assertEquals(0, new DistillationLoss(3, 1).forward(t, t, null).item(), 1e-14);
    assertTrue(new DistillationLoss(3, 1).forward(s, t, null).item() > 0);
  }

  @Test
  void halfLogitsAreWidened() {
    Generator g = new Generator(6);
    Tensor s = Tensor.randn(g, 8, 10).mul(3);
    Tensor t = Tensor.randn(g, 8, 10).mul(3);
    Tensor y = Tensor.of(new long[] {0, 1, 2, 3, 4, 5, 6, 7}, 8);
    Tensor sb = s.to(DType.BF16).requiresGrad(true);
    Tensor tb = t.to(DType.BF16);
    DistillationLoss loss = new DistillationLoss(4, 0.8);
    Tensor half = loss.forward(sb, tb, y);
    assertEquals(DType.F32, half.dtype());
    // computed in float32 from the rounded logits: exactly the float32 loss of those values
    Tensor want = loss.forward(sb.detach().to(DType.F32), tb.to(DType.F32), y);
    assertEquals(want.item(), half.item(), 0);
    half.backward();
    assertEquals(DType.BF16, sb.grad().dtype());
  }

  @Test
  void badArgumentsAreNamed() {
    assertEquals("distillation_loss: temperature must be positive and finite, got 0.0",
        assertThrows(IllegalArgumentException.class, () -> new DistillationLoss(0, 0.5)).getMessage());
    assertEquals("distillation_loss: temperature must be positive and finite, got -2.0",
        assertThrows(IllegalArgumentException.class, () -> new DistillationLoss(-2, 0.5)).getMessage());
    assertThrows(IllegalArgumentException.class, () -> new DistillationLoss(Double.NaN, 0.5));
    assertEquals("distillation_loss: alpha must be in [0, 1], got 1.5",
        assertThrows(IllegalArgumentException.class, () -> new DistillationLoss(2, 1.5)).getMessage());
    assertEquals("distillation_loss: alpha must be in [0, 1], got -0.1",
        assertThrows(IllegalArgumentException.class, () -> new DistillationLoss(2, -0.1)).getMessage());
    DistillationLoss loss = new DistillationLoss(2, 0.5);
    Tensor y = Tensor.of(new long[] {0, 1, 2, 3}, 4);
    assertEquals("distillation_loss: student and teacher logits differ in shape: student=[4, 10], teacher=[4, 5]",
        assertThrows(IllegalArgumentException.class,
            () -> loss.forward(Tensor.zeros(4, 10), Tensor.zeros(4, 5), y)).getMessage());
    String rank = assertThrows(IllegalArgumentException.class,
        () -> loss.forward(Tensor.zeros(4, 10, 2), Tensor.zeros(4, 10, 2), y)).getMessage();
    assertTrue(rank.startsWith("distillation_loss: student logits must be [N, C], got rank 3: student=[4, 10, 2]"), rank);
    String labels = assertThrows(IllegalArgumentException.class,
        () -> loss.forward(Tensor.zeros(4, 10), Tensor.zeros(4, 10), Tensor.of(new long[] {0, 1, 2}, 3))).getMessage();
    assertTrue(labels.startsWith("cross_entropy:") && labels.contains("[4, 10]") && labels.contains("[3]"), labels);
    assertTrue(assertThrows(IllegalArgumentException.class, () -> loss.forward(Tensor.zeros(4, 10), null, y))
        .getMessage().startsWith("distillation_loss: teacher logits are null"));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> loss.forward(Tensor.zeros(4, 10), Tensor.zeros(4, 10), null)).getMessage()
        .startsWith("distillation_loss: labels are null"));
    assertEquals("DistillationLoss(temperature=2.0, alpha=0.5)", loss.toString());
    assertTrue(loss.stateDict().isEmpty(), "no parameters or buffers");
  }
}
