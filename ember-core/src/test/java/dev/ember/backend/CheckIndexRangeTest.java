package dev.ember.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.backend.cpu.CpuBackends;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * {@link Backend#checkIndexRange}'s default, the CPU's: reads the view (any layout, int64 or int32) in row-major
 * order and throws the factory's exception for the first element outside [lo, hi) that is not the allowed value,
 * before returning.
 */
class CheckIndexRangeTest {
  private static final Backend CPU = CpuBackends.instance();

  private static String firstBad(Tensor index, long lo, long hi, long allowed) {
    try {
      CPU.checkIndexRange(index, lo, hi, allowed, (position, value) ->
          new IllegalStateException(position + "=" + value));
      return "none";
    } catch (IllegalStateException e) {
      return e.getMessage();
    }
  }

  @Test
  void theFirstOffenderInRowMajorOrderIsReported() {
    Tensor t = Tensor.of(new long[] {0, 1, -100, 4, 7, 2, 9, 3}, 2, 4);
    assertEquals("4=7", firstBad(t, 0, 5, -100));
    assertEquals("2=-100", firstBad(t, 0, 5, 0), "-100 is bad when it is not the allowed value");
    assertEquals("none", firstBad(t, -100, 10, 0));
    assertEquals("1=7", firstBad(t.t(), 0, 4, -100), "the [4, 2] transpose: 0, 7, 1, 2, -100, 9, 4, 3");
    assertEquals("1=7", firstBad(t.t().to(DType.I32), 0, 4, -100));
    assertEquals("1=9", firstBad(t.select(1, 2), 0, 5, -100), "a column at an offset");
    assertEquals("none", firstBad(Tensor.of(new long[] {3}, 1).reshape(), 0, 4, 0), "0-d");
    assertEquals("0=4", firstBad(Tensor.of(new long[] {4}, 1).reshape(), 0, 4, 0));
    assertEquals("none", firstBad(Tensor.of(new long[0], 0), 0, 1, 0), "empty");
  }

  @Test
  void theFactorysExceptionIsThrownAsItIs() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CPU.checkIndexRange(
        Tensor.of(new long[] {5}, 1), 0, 5, 0, (position, value) -> new IllegalArgumentException("op: " + value)));
    assertEquals("op: 5", e.getMessage());
  }
}
