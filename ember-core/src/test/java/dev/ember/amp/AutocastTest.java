package dev.ember.amp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

class AutocastTest {
  @Test
  void scopesNestAndRestore() {
    assertFalse(Autocast.enabled());
    try (var a = Autocast.enable(DType.BF16)) {
      assertEquals(DType.BF16, Autocast.dtype());
      try (var off = Autocast.disable()) {
        assertFalse(Autocast.enabled());
        try (var f = Autocast.enable(DType.F16)) {
          assertEquals(DType.F16, Autocast.dtype());
        }
        assertNull(Autocast.dtype());
      }
      assertEquals(DType.BF16, Autocast.dtype());
    }
    assertFalse(Autocast.enabled());
  }

  @Test
  void rejectsNonHalfDtypes() {
    var e = assertThrows(IllegalArgumentException.class, () -> Autocast.enable(DType.F32));
    assertTrue(e.getMessage().contains("Autocast.enable") && e.getMessage().contains("F32"), e.getMessage());
  }

  @Test
  void policiesCastOnlyWhatTheyShould() {
    Tensor f32 = Tensor.of(new float[] {1.5f, 2.25f}, 2);
    Tensor f64 = f32.to(DType.F64);
    Tensor ints = f32.to(DType.I64);
    assertSame(f32, Autocast.input("linear", f32), "off: untouched");
    try (var a = Autocast.enable(DType.BF16)) {
      assertEquals(DType.BF16, Autocast.input("linear", f32).dtype());
      assertSame(f64, Autocast.input("linear", f64));
      assertSame(ints, Autocast.input("matmul", ints));
      Tensor half = f32.to(DType.BF16);
      assertEquals(DType.F32, Autocast.input("softmax", half).dtype());
      assertSame(f32, Autocast.input("softmax", f32));
      assertSame(half, Autocast.input("relu", half));
      assertSame(f32, Autocast.input("relu", f32));
      Tensor[] both = Autocast.inputs("matmul", f32, null, half);
      assertEquals(DType.BF16, both[0].dtype());
      assertNull(both[1]);
      assertSame(half, both[2]);
    }
    for (String op : Autocast.LOWER_PRECISION) assertFalse(Autocast.FLOAT32.contains(op), op + " in both lists");
  }

  @Test
  void parameterCastIsCachedPerVersionAndDroppedOnExit() {
    Tensor w = Tensor.of(new float[] {1f, 2f, 3f}, 3).requiresGrad(true);
    try (var a = Autocast.enable(DType.BF16)) {
      Tensor c1 = Autocast.input("linear", w);
      assertSame(c1, Autocast.input("matmul", w), "same version: one cast");
      try (var off = dev.ember.autograd.Grad.off()) {
        w.mul_(2);
      }
      Tensor c2 = Autocast.input("linear", w);
      assertFalse(c1 == c2, "a changed parameter is cast again");
      assertEquals(6f, c2.to(DType.F32).toFloatArray()[2]);
      assertEquals(1, Autocast.cachedCasts());
    }
    assertEquals(0, Autocast.cachedCasts());
  }

  @Test
  void gradientsOfALowPrecisionUseAreF32() {
    Tensor w = Tensor.of(new float[] {1f, -2f, 3f}, 3).requiresGrad(true);
    Tensor loss;
    try (var a = Autocast.enable(DType.BF16)) {
      Tensor c = Autocast.input("linear", w);
      loss = c.mul(c).to(DType.F32).sum();
    }
    loss.backward();
    assertEquals(DType.F32, w.grad().dtype());
    float[] g = w.grad().toFloatArray();
    assertEquals(2f, g[0]);
    assertEquals(-4f, g[1]);
    assertEquals(6f, g[2]);
  }
}
