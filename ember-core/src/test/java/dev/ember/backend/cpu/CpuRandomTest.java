package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CpuRandomTest {
  @Test
  void erfinvInvertsErf() {
    for (double x = -4; x <= 4; x += 0.01) {
      assertEquals(x, CpuRandom.erfinv(ScalarKernels.erf(x)), 1e-9 * Math.max(1, Math.abs(x)) * (Math.abs(x) > 3 ? 1e3 : 1), "x=" + x);
    }
    assertEquals(Double.POSITIVE_INFINITY, CpuRandom.erfinv(1));
    assertTrue(Double.isNaN(CpuRandom.erfinv(1.5)));
  }
}
