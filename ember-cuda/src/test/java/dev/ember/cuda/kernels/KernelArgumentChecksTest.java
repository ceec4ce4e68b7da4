package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.backend.ReduceOp;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import org.junit.jupiter.api.Test;

/**
 * Bad input is refused with the op and the shapes before anything reaches a GPU, so these run anywhere: the
 * classes are built without a context, and every case fails in its checks.
 */
class KernelArgumentChecksTest {
  private final CudaReduce reduce = new CudaReduce(null, null);
  private final CudaIndexing indexing = new CudaIndexing(null, null);
  private final CudaMatmul matmul = new CudaMatmul(null, null);

  private static View host(DType t, int... shape) {
    return StridedView.allocate(t, shape);
  }

  private static String message(Runnable r) {
    return assertThrows(IllegalArgumentException.class, r::run).getMessage();
  }

  @Test
  void reduceNamesUnsupportedDtypePairs() {
    assertEquals("sum: cuda cannot reduce float32 into int64 (supported: float32 and float64 into themselves,"
        + " int32, int64 and bool into int64, int32 and bool into themselves): x=[2, 3], out=[2, 1]",
        message(() -> reduce.reduce(ReduceOp.SUM, host(DType.F32, 2, 3), new int[] {1}, host(DType.I64, 2, 1))));
  }

  @Test
  void hostTensorsAreRefusedByName() {
    assertEquals("max: x is on the cpu, expected a cuda tensor: x=[2, 3]",
        message(() -> reduce.reduce(ReduceOp.MAX, host(DType.F32, 2, 3), new int[] {1}, host(DType.F32, 2, 1))));
    assertEquals("gather: x is on the cpu, expected a cuda tensor: x=[4]",
        message(() -> indexing.gather(host(DType.F32, 4), 0, host(DType.I64, 2), host(DType.F32, 2))));
  }

  @Test
  void argReduceWantsInt64Out() {
    assertEquals("argmax: out must be int64, got int32: x=[3], out=[1]",
        message(() -> reduce.argReduce(true, host(DType.F32, 3), 0, host(DType.I32, 1))));
  }

  @Test
  void softmaxWantsFloats() {
    assertEquals("log_softmax: x and out must be float32 or float64 of one dtype and shape, got x int64[2], out int64[2]",
        message(() -> reduce.softmax(host(DType.I64, 2), 0, true, host(DType.I64, 2))));
  }

  @Test
  void softmaxBackwardWantsContiguousOperandsOfOneShape() {
    View g = host(DType.F32, 2, 3);
    View yT = StridedView.transpose(host(DType.F32, 3, 2), 0, 1);
    assertEquals("softmax backward: g, y and out must be contiguous tensors of one floating dtype and shape, got g"
        + " float32[2, 3], y float32[2, 3], out float32[2, 3]",
        message(() -> reduce.softmaxBackward(g, yT, false, host(DType.F32, 2, 3))));
  }

  @Test
  void cumsumNamesItsDtypes() {
    assertEquals("cumsum: cuda sums float32 and float64 into themselves and int32, int64 and bool into int64 (int32"
        + " also into int32), over one shape; got x float32[4], out float64[4]",
        message(() -> reduce.cumsum(host(DType.F32, 4), 0, host(DType.F64, 4))));
  }

  @Test
  void allFiniteWantsContiguousFloats() {
    assertEquals("allFinite: x must be a contiguous float32 or float64 tensor, got int32[3]",
        message(() -> reduce.allFinite(host(DType.I32, 3))));
  }

  @Test
  void indexingChecksIndexAndValueDtypes() {
    assertEquals("index_select: index must be int64 or int32, got float32: index=[2]",
        message(() -> indexing.indexSelect(host(DType.F32, 4), 0, host(DType.F32, 2), host(DType.F32, 2))));
    assertEquals("scatter_add: out and src must have one dtype, got float32 and float64: out=[4], src=[2]",
        message(() -> indexing.scatter(host(DType.F32, 4), 0, host(DType.I64, 2), host(DType.F64, 2), true)));
  }

  @Test
  void matmulChecksDtypesAndShapes() {
    assertEquals("matmul: cuda multiplies float32 or float64 operands of one dtype, or bfloat16 or float16 ones of "
        + "one dtype into float32 or their dtype, got a int64, b int64, out int64: a=[1, 2, 3], b=[1, 3, 4]",
        message(() -> matmul.matmul(host(DType.I64, 1, 2, 3), host(DType.I64, 1, 3, 4), host(DType.I64, 1, 2, 4), 0)));
    assertEquals("matmul: cuda takes [B, m, k] x [B, k, n] -> [B, m, n], got a=[1, 2, 3], b=[1, 4, 4], out=[1, 2, 4]",
        message(() -> matmul.matmul(host(DType.F32, 1, 2, 3), host(DType.F32, 1, 4, 4), host(DType.F32, 1, 2, 4), 0)));
    assertEquals("matmulRaw: m, n, k and batch must be positive, got m=0, n=1, k=1, batch=1",
        message(() -> matmul.matmulRaw(dev.ember.cuda.lib.CublasLt.R_16BF, dev.ember.cuda.lib.CublasLt.R_32F, false,
            false, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1, 1f, 0f)));
  }
}
