package dev.ember.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.kernels.Elementwise;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * BF16 and F16 on CUDA (no GPU needed): the data-movement families instantiate them, the computing ones refuse them
 * by op and dtype (the op layer widens halves to F32 before any arithmetic, so only a direct call gets there).
 */
class HalfDTypeOnCudaTest {
  @Test
  void onlyTheDataMovementFamiliesTakeHalves() {
    assertArrayEquals(new DType[] {DType.F32, DType.F64, DType.I64, DType.I32, DType.BOOL}, Elementwise.dtypes());
    assertArrayEquals(new DType[] {DType.F32, DType.F64, DType.I64, DType.I32, DType.BOOL, DType.BF16, DType.F16},
        Elementwise.storageDtypes());
    assertEquals("ew_convert_bf16_f32", Elementwise.kernelName(Elementwise.Family.CONVERT, DType.BF16, DType.F32));
    assertTrue(Elementwise.source(Elementwise.Family.FILL, DType.F16).endsWith("EW_FILL(ew_fill_f16, ef16)\n"));
    assertEquals(49, Elementwise.instantiations(Elementwise.Family.CONVERT).size());
    assertEquals(5 * 7 * 7 * 7, Elementwise.instantiations(Elementwise.Family.WHERE).size(), "no half condition");
    assertEquals(125, Elementwise.instantiations(Elementwise.Family.BINARY).size());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Elementwise.kernelName(Elementwise.Family.UNARY, DType.BF16, DType.F32));
    assertTrue(e.getMessage().contains("dtype bfloat16 is not supported on CUDA devices by this kernel"), e.getMessage());
    IllegalArgumentException s = assertThrows(IllegalArgumentException.class,
        () -> Elementwise.source(Elementwise.Family.BINARY, DType.F16, DType.F32, DType.F32));
    assertTrue(s.getMessage().contains("dtype float16"), s.getMessage());
  }

  @Test
  void computingEntriesNameTheOpAndTheDtype() {
    Tensor h = Tensor.zeros(DType.BF16, 2, 3);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CudaBackend.rejectHalf("reduce", h, Tensor.zeros(2, 3)));
    assertTrue(e.getMessage().startsWith("reduce: dtype bfloat16 is not supported by this CUDA kernel (shape [2, 3])"),
        e.getMessage());
    CudaBackend.rejectHalf("binary", Tensor.zeros(2), Tensor.zeros(DType.F64, 2)); // other dtypes pass
  }
}
