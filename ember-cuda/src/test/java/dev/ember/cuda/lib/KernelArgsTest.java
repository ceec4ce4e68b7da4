package dev.ember.cuda.lib;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class KernelArgsTest {
  private static MemorySegment arg(KernelArgs a, int i, long bytes) {
    return a.pointers().getAtIndex(ValueLayout.ADDRESS, i).reinterpret(bytes);
  }

  @Test
  void eachArgumentIsAPointerToItsValue() {
    KernelArgs a = new KernelArgs().i32(7).ptr(0x1234_5678_9abcL).f32(1.5f).f64(-2.25).i64(-3);
    assertEquals(5, a.count());
    assertEquals(7, arg(a, 0, 4).get(ValueLayout.JAVA_INT, 0));
    assertEquals(0x1234_5678_9abcL, arg(a, 1, 8).get(ValueLayout.JAVA_LONG, 0));
    assertEquals(1.5f, arg(a, 2, 4).get(ValueLayout.JAVA_FLOAT, 0));
    assertEquals(-2.25, arg(a, 3, 8).get(ValueLayout.JAVA_DOUBLE, 0));
    assertEquals(-3, arg(a, 4, 8).get(ValueLayout.JAVA_LONG, 0));
    assertEquals(0, arg(a, 1, 8).address() % 8, "8-byte values are 8-byte aligned");
  }

  @Test
  void aGeoHoldsRankNumelShapeAndStridesAsThePreludeDeclaresThem() {
    KernelArgs a = new KernelArgs().geo(new int[] {2, 3, 5}, new int[] {15, 1, 3});
    MemorySegment g = arg(a, 0, KernelArgs.GEO_BYTES);
    assertEquals(3, g.get(ValueLayout.JAVA_INT, 0));
    assertEquals(30, g.get(ValueLayout.JAVA_LONG, 8));
    assertEquals(5, g.get(ValueLayout.JAVA_LONG, 16 + 8 * 2));
    assertEquals(3, g.get(ValueLayout.JAVA_LONG, 16 + 8 * (KernelArgs.MAX_RANK + 2)));
  }

  @Test
  void beginReusesTheThreadsBuffers() {
    KernelArgs a = KernelArgs.begin().i32(1).i32(2);
    KernelArgs b = KernelArgs.begin().i32(9);
    assertTrue(a == b);
    assertEquals(1, b.count());
    assertEquals(9, arg(b, 0, 4).get(ValueLayout.JAVA_INT, 0));
  }

  @Test
  void badArgumentsAreRefusedWithTheReason() {
    var e = assertThrows(IllegalArgumentException.class, () -> KernelArgs.address(Tensor.zeros(2, 3)));
    assertTrue(e.getMessage().contains("CPU tensor of shape [2, 3]"), e.getMessage());
    var r = assertThrows(IllegalArgumentException.class,
        () -> new KernelArgs().geo(new int[9], new int[9]));
    assertTrue(r.getMessage().contains("rank at most 8"), r.getMessage());
    KernelArgs many = new KernelArgs();
    for (int i = 0; i < 64; i++) many.i32(i);
    assertThrows(IllegalArgumentException.class, () -> many.i32(64));
  }
}
