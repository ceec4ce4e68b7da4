package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The indexing and reduction sources for BF16 and F16: 16-bit moves only; reductions refused (no GPU needed). */
class HalfKernelNamesTest {
  @Test
  void halvesAreMovedNotAccumulated() {
    for (DType h : new DType[] {DType.BF16, DType.F16}) {
      List<String> names = CudaIndexing.kernelNames(h);
      assertTrue(names.containsAll(List.of("gather_u16_i64", "scatter_u16_i32", "index_select_u16_i64", "copy_u16")),
          names.toString());
      assertFalse(names.stream().anyMatch(n -> n.contains("add") || n.startsWith("scale")), names.toString());
      assertTrue(Sources.indexing(h).startsWith("#define EG_TYPE_" + (h == DType.BF16 ? "bf16" : "f16") + " 1\n"));
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Sources.reduce(h));
      assertTrue(e.getMessage().contains(h.torchName()), e.getMessage());
    }
    assertEquals("u16", Geometry.moveTag(DType.BF16));
  }
}
