package dev.ember.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** When the CUDA backend asks for a garbage collection (no GPU needed). */
class GcTriggerTest {
  @Test
  void scopedLoopsNeverCollectLeakingOnesDoOncePerThreshold() {
    GcTrigger t = new GcTrigger(100);
    int collections = 0;
    for (int step = 0; step < 10_000; step++) { // a loop inside scopes: holdings rise and fall back every step
      if (t.shouldCollect(40)) collections++;
      if (t.shouldCollect(90)) collections++;
    }
    assertEquals(0, collections, "level holdings never collect, however many bytes pass");
    for (long held = 0; held <= 1000; held += 10) if (t.shouldCollect(held)) collections++; // dead tensors pile up
    assertEquals(9, collections, "one request per 100 bytes of growth");
    assertFalse(t.shouldCollect(50), "the collection gave blocks back");
    assertFalse(t.shouldCollect(150), "growth counts from the new low");
    assertTrue(t.shouldCollect(151));
    t.reset(1000);
    assertFalse(t.shouldCollect(1100));
    assertThrows(IllegalArgumentException.class, () -> new GcTrigger(0));
  }
}
