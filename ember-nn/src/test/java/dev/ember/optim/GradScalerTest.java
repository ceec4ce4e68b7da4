package dev.ember.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.Json;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * GradScaler against grad_scaler_fixture.py (torch 1.13's own GradScaler class, its two CUDA ops transcribed):
 * 18 steps with injected Inf, NaN and float32 overflow, two optimizers, explicit unscale, update(newScale) and a
 * growth past float32 that is refused. Scale, growth tracker, found-Inf flags, skipped steps, gradients and
 * parameters agree bit for bit. Then the call-order errors and the disabled scaler.
 */
class GradScalerTest {
  @SuppressWarnings("unchecked")
  private static Map<String, Object> fixture() throws IOException, Json.SyntaxError {
    try (InputStream in = GradScalerTest.class.getResourceAsStream("grad_scaler_fixture.json")) {
      String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      return (Map<String, Object>) Json.parsePlain(text, Json.NonFinite.LITERALS);
    }
  }

  private static float[] floats(Object list) {
    List<?> l = (List<?>) list;
    float[] out = new float[l.size()];
    for (int i = 0; i < out.length; i++) out[i] = ((Number) l.get(i)).floatValue();
    return out;
  }

  private static void assertBits(Object expected, Tensor actual, String what) {
    float[] e = floats(expected);
    float[] a = actual.toFloatArray();
    assertEquals(e.length, a.length, what);
    for (int i = 0; i < e.length; i++) {
      assertEquals(Float.floatToIntBits(e[i]), Float.floatToIntBits(a[i]), what + "[" + i + "]: " + e[i] + " vs " + a[i]);
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void trajectoryMatchesTorchBitForBit() throws Exception {
    Map<String, Object> fx = fixture();
    Tensor w = Tensor.of(floats(fx.get("init_w")), 3, 4).requiresGrad(true);
    Tensor b = Tensor.of(floats(fx.get("init_b")), 5).requiresGrad(true);
    SGD optW = new SGD(List.of(w), Map.of("lr", 0.125, "momentum", 0.5));
    SGD optB = new SGD(List.of(b), Map.of("lr", 0.25));
    int interval = ((Number) fx.get("growth_interval")).intValue();
    GradScaler scaler = new GradScaler(65536.0, 2.0, 0.5, interval, true);
    List<Map<String, Object>> steps = (List<Map<String, Object>>) fx.get("steps");
    int skipped = 0;
    for (int t = 0; t < steps.size(); t++) {
      Map<String, Object> s = steps.get(t);
      String at = "step " + t;
      optW.zeroGrad();
      optB.zeroGrad();
      Tensor a = Tensor.of(floats(s.get("a")), 3, 4);
      Tensor c = Tensor.of(floats(s.get("c")), 5);
      Tensor loss = w.mul(a).sum().add(b.mul(c).sum());
      scaler.scale(loss).backward();
      if ((Boolean) s.get("explicit_unscale")) {
        scaler.unscale(optW);
        assertBits(s.get("unscaled_grad_w"), w.grad(), at + " unscaled grad w");
      }
      boolean steppedW = scaler.step(optW);
      boolean steppedB = scaler.step(optB);
      assertEquals(s.get("found_inf_w"), scaler.foundInf(optW), at + " found_inf w");
      assertEquals(s.get("found_inf_b"), scaler.foundInf(optB), at + " found_inf b");
      assertEquals(s.get("stepped_w"), steppedW, at + " stepped w");
      assertEquals(s.get("stepped_b"), steppedB, at + " stepped b");
      if (!steppedW) skipped++;
      if (s.get("new_scale") instanceof Number ns) scaler.update(ns.doubleValue());
      else scaler.update();
      assertNull(scaler.foundInf(optW), "update ends the iteration");
      assertBits(s.get("grad_w"), w.grad(), at + " grad w");
      assertBits(s.get("grad_b"), b.grad(), at + " grad b");
      assertBits(s.get("w"), w, at + " w");
      assertBits(s.get("b"), b, at + " b");
      assertEquals(((Number) s.get("scale")).doubleValue(), scaler.getScale(), at + " scale");
      assertEquals(((Number) s.get("growth_tracker")).intValue(), scaler.growthTracker(), at + " growth tracker");
    }
    assertEquals(3, skipped, "the trajectory skips w's step three times (Inf, then two overflows)");
    Map<String, Object> sd = (Map<String, Object>) fx.get("state_dict");
    Map<String, Object> mine = scaler.stateDict();
    assertEquals(List.copyOf(sd.keySet()), List.copyOf(mine.keySet()), "PyTorch's keys, in its order");
    for (var e : sd.entrySet()) {
      assertEquals(((Number) e.getValue()).doubleValue(), ((Number) mine.get(e.getKey())).doubleValue(), e.getKey());
    }
  }

  private static Tensor param() {
    return Tensor.of(new float[] {1, 2, 3}, 3).requiresGrad(true);
  }

  @Test
  void callOrderErrorsAreTorchs() {
    Tensor p = param();
    SGD opt = new SGD(List.of(p), Map.of("lr", 0.1));
    GradScaler scaler = new GradScaler();
    IllegalStateException early = assertThrows(IllegalStateException.class, () -> scaler.unscale(opt));
    assertTrue(early.getMessage().contains("did not use scaler.scale(loss or outputs)"), early.getMessage());
    assertThrows(IllegalStateException.class, () -> scaler.step(opt));
    assertThrows(IllegalStateException.class, scaler::update);

    scaler.scale(p.sum()).backward();
    scaler.unscale(opt);
    IllegalStateException twice = assertThrows(IllegalStateException.class, () -> scaler.unscale(opt));
    assertEquals("GradScaler.unscale: unscale() has already been called on this optimizer since the last update()",
        twice.getMessage());
    assertTrue(scaler.step(opt));
    IllegalStateException after = assertThrows(IllegalStateException.class, () -> scaler.unscale(opt));
    assertEquals("GradScaler.unscale: unscale() is being called after step()", after.getMessage());
    IllegalStateException stepTwice = assertThrows(IllegalStateException.class, () -> scaler.step(opt));
    assertEquals("GradScaler.step: step() has already been called since the last update()", stepTwice.getMessage());
    scaler.update();
    IllegalStateException noCheck = assertThrows(IllegalStateException.class, scaler::update);
    assertTrue(noCheck.getMessage().contains("No inf checks were recorded"), noCheck.getMessage());
  }

  @Test
  void unscaleDividesByTheScaleAndStepSkipsOnNaN() {
    Tensor p = param();
    SGD opt = new SGD(List.of(p), Map.of("lr", 1.0));
    GradScaler scaler = new GradScaler(1024.0, 2.0, 0.5, 2000, true);
    Tensor scaled = scaler.scale(p.mul(Tensor.of(new float[] {1, 2, 3}, 3)).sum());
    assertEquals(1024.0 * 14, scaled.item());
    scaled.backward();
    assertArrayEquals(new float[] {1024, 2048, 3072}, p.grad().toFloatArray());
    scaler.unscale(opt);
    assertArrayEquals(new float[] {1, 2, 3}, p.grad().toFloatArray());
    assertTrue(scaler.step(opt));
    scaler.update();
    assertArrayEquals(new float[] {0, 0, 0}, p.toFloatArray());

    opt.zeroGrad();
    scaler.scale(p.mul(Tensor.of(new float[] {1, Float.NaN, 3}, 3)).sum()).backward();
    assertFalse(scaler.step(opt), "a NaN gradient skips the step");
    scaler.update();
    assertArrayEquals(new float[] {0, 0, 0}, p.toFloatArray(), "the parameters are untouched");
    assertEquals(512.0, scaler.getScale());
    assertEquals(0, scaler.growthTracker());
  }

  @Test
  void halfLossIsScaledInFloat32() {
    GradScaler scaler = new GradScaler();
    Tensor loss = Tensor.scalar(2.0, DType.F16);
    Tensor scaled = scaler.scale(loss);
    assertEquals(DType.F32, scaled.dtype(), "65536 * 2 overflows float16: the product is float32");
    assertEquals(131072.0, scaled.item());
  }

  @Test
  void disabledScalerIsAPassThrough() {
    Tensor p = param();
    SGD opt = new SGD(List.of(p), Map.of("lr", 1.0));
    GradScaler scaler = new GradScaler(false);
    Tensor loss = p.sum();
    assertSame(loss, scaler.scale(loss));
    loss.backward();
    scaler.unscale(opt);
    assertTrue(scaler.step(opt));
    scaler.update();
    assertArrayEquals(new float[] {0, 1, 2}, p.toFloatArray());
    assertEquals(1.0, scaler.getScale());
    assertTrue(scaler.stateDict().isEmpty());
  }

  @Test
  void stateDictRoundTripsIncludingBeforeFirstScale() {
    GradScaler a = new GradScaler(256.0, 4.0, 0.25, 7, true);
    Tensor p = param();
    SGD opt = new SGD(List.of(p), Map.of("lr", 0.5));
    for (int i = 0; i < 3; i++) {
      opt.zeroGrad();
      a.scale(p.sum()).backward();
      a.step(opt);
      a.update();
    }
    Map<String, Object> sd = a.stateDict();
    assertEquals(256.0, sd.get("scale"));
    assertEquals(3, sd.get("_growth_tracker"));
    GradScaler fresh = new GradScaler();
    fresh.loadStateDict(sd);
    assertEquals(sd, fresh.stateDict(), "before its first scale() the loaded values are the initial ones");
    fresh.scale(p.sum());
    assertEquals(sd, fresh.stateDict());
    GradScaler used = new GradScaler();
    used.scale(p.sum());
    used.loadStateDict(sd);
    assertEquals(sd, used.stateDict(), "after its first scale() the loaded values replace the live ones");

    IllegalArgumentException empty = assertThrows(IllegalArgumentException.class, () -> fresh.loadStateDict(Map.of()));
    assertTrue(empty.getMessage().contains("disabled instance"), empty.getMessage());
    IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
        () -> fresh.loadStateDict(Map.of("scale", 2.0)));
    assertTrue(missing.getMessage().contains("growth_factor"), missing.getMessage());
  }

  @Test
  void badSettingsAreRefusedByName() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new GradScaler(65536, 1.0, 0.5, 10, true))
        .getMessage().contains("growth_factor must be > 1.0, got 1.0"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new GradScaler(65536, 2.0, 1.0, 10, true))
        .getMessage().contains("backoff_factor must be in (0, 1), got 1.0"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new GradScaler(65536, 2.0, 0.5, 0, true))
        .getMessage().contains("growth_interval must be >= 1, got 0"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new GradScaler(-1, 2.0, 0.5, 10, true))
        .getMessage().contains("init_scale"));
    GradScaler s = new GradScaler();
    s.scale(param().sum());
    assertThrows(IllegalArgumentException.class, () -> s.update(Double.NaN));
  }
}
