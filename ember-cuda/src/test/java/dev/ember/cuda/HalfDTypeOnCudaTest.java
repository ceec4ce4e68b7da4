package dev.ember.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.kernels.Elementwise;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** BF16 and F16 have no CUDA kernels yet: the kernel paths refuse them by op and dtype (no GPU needed). */
class HalfDTypeOnCudaTest {
  @Test
  void theKernelDtypesLeaveOutTheHalves() {
    assertArrayEquals(new DType[] {DType.F32, DType.F64, DType.I64, DType.I32, DType.BOOL}, Elementwise.dtypes());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Elementwise.kernelName(Elementwise.Family.UNARY, DType.BF16, DType.F32));
    assertTrue(e.getMessage().contains("dtype bfloat16 is not supported on CUDA devices"), e.getMessage());
    IllegalArgumentException s = assertThrows(IllegalArgumentException.class,
        () -> Elementwise.source(Elementwise.Family.FILL, DType.F16));
    assertTrue(s.getMessage().contains("dtype float16"), s.getMessage());
  }

  @Test
  void backendEntriesNameTheOpAndTheDtype() {
    Tensor h = Tensor.zeros(DType.BF16, 2, 3);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CudaBackend.rejectHalf("matmul", Tensor.zeros(2, 3), h, null));
    assertTrue(e.getMessage().startsWith("matmul: dtype bfloat16 is not supported on CUDA devices yet (shape [2, 3])"),
        e.getMessage());
    CudaBackend.rejectHalf("binary", Tensor.zeros(2), Tensor.zeros(DType.F64, 2)); // other dtypes pass
  }
}
