package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.Dims.AxisSplit;
import dev.ember.backend.Dims;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** The host-side geometry of the kernels, without a GPU: struct layout, axis splits, chunking, cuBLAS operands. */
class KernelGeometryTest {
  @Test
  void packWritesTheEGeoLayoutTheKernelsRead() {
    MemorySegment s = Geometry.pack("t", new int[] {2, 3, 4}, new long[] {12, 4, -1}, 7);
    assertEquals(Geometry.BYTES, s.byteSize());
    assertEquals(3, s.get(ValueLayout.JAVA_INT, 0));
    assertEquals(2, s.get(ValueLayout.JAVA_LONG, 8));
    assertEquals(4, s.get(ValueLayout.JAVA_LONG, 8 + 16));
    assertEquals(12, s.get(ValueLayout.JAVA_LONG, 72));
    assertEquals(-1, s.get(ValueLayout.JAVA_LONG, 72 + 16));
    assertEquals(7, s.get(ValueLayout.JAVA_LONG, 136));
    // a second pack reuses the scratch: no stale dimension survives
    Geometry.pack("t", new int[] {5}, new long[] {1}, 0);
    assertEquals(0, s.get(ValueLayout.JAVA_LONG, 16));
  }

  @Test
  void packRefusesMoreThanEightDimensions() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Geometry.pack("sum", new int[9], new long[9], 0));
    assertTrue(e.getMessage().startsWith("sum: cuda kernels take at most 8 dimensions"), e.getMessage());
  }

  @Test
  void coalesceMergesContiguousRunsAndDropsOnes() {
    int[][] c = Dims.coalesce(new int[] {2, 1, 3, 4}, new int[] {12, 99, 4, 1});
    assertArrayEquals(new int[] {24}, c[0]);
    assertArrayEquals(new int[] {1}, c[1]);
    int[][] t = Dims.coalesce(new int[] {3, 4}, new int[] {1, 3}); // a transpose stays two dims
    assertArrayEquals(new int[] {3, 4}, t[0]);
    assertArrayEquals(new int[] {1, 3}, t[1]);
    assertEquals(0, Dims.coalesce(new int[] {1, 1}, new int[] {1, 1})[0].length, "one element: rank 0");
  }

  @Test
  void blockSizesArePowersOfTwoFrom32To256() {
    assertEquals(32, Geometry.blockFor(1));
    assertEquals(64, Geometry.blockFor(33));
    assertEquals(256, Geometry.blockFor(200));
    assertEquals(256, Geometry.blockFor(1 << 20));
  }

  private static View view(int[] shape, int[] strides, int offset) {
    return new StridedView(dev.ember.tensor.Storage.allocate(DType.F32, 1000), shape, strides, offset);
  }

  @Test
  void axisSplitSeparatesKeptAndReducedAxes() {
    View x = view(new int[] {2, 3, 4}, new int[] {12, 4, 1}, 0);
    View out = view(new int[] {2, 1, 4}, new int[] {4, 4, 1}, 0);
    AxisSplit s = AxisSplit.of(x, new int[] {1}, out);
    assertArrayEquals(new int[] {2, 4}, s.outerShape());
    assertArrayEquals(new int[] {12, 1}, s.outerX());
    assertArrayEquals(new int[] {4, 1}, s.outerOut());
    assertArrayEquals(new int[] {3}, s.innerShape());
    assertArrayEquals(new int[] {4}, s.innerX());
    assertEquals(8, s.nOuter());
    assertEquals(3, s.nInner());
    assertEquals(4, s.innerStep());
    AxisSplit all = AxisSplit.of(x, new int[] {0, 1, 2}, view(new int[] {1, 1, 1}, new int[] {1, 1, 1}, 0));
    assertEquals(0, all.outerShape().length);
    assertEquals(1, all.nOuter());
    assertArrayEquals(new int[] {24}, all.innerShape(), "contiguous reduced axes merge");
  }

  @Test
  void chunkingDependsOnTheShapeAndCoversEveryElement() {
    assertEquals(1, CudaReduce.chunks(1, CudaReduce.SPLIT_MIN - 1));
    assertEquals(1, CudaReduce.chunks(1000, 1 << 20), "enough outputs to fill the GPU");
    long n = 100_000_003L;
    long c = CudaReduce.chunks(1, n);
    assertTrue(c > 1 && c <= CudaReduce.TARGET_BLOCKS, "chunks " + c);
    long chunk = (n + c - 1) / c;
    assertTrue(chunk * c >= n && chunk * (c - 1) < n);
    assertEquals(c, CudaReduce.chunks(1, n), "the same shape, the same chunks");
  }

  @Test
  void matmulOperandsMapRowMajorToColumnMajor() {
    // [B, m, k] contiguous: cuBLAS reads its transpose as stored, ld = k
    CudaMatmul.Operand rm = CudaMatmul.operand(new int[] {2, 3, 5}, new int[] {15, 5, 1});
    assertFalse(rm.trans());
    assertEquals(5, rm.ld());
    assertEquals(15, rm.batchStride());
    // a transposed view [B, m, k] of [B, k, m]: strides (k*m, 1, m): cuBLAS transposes, ld = m
    CudaMatmul.Operand tr = CudaMatmul.operand(new int[] {2, 3, 5}, new int[] {15, 1, 3});
    assertTrue(tr.trans());
    assertEquals(3, tr.ld());
    // broadcast over the batch
    assertEquals(0, CudaMatmul.operand(new int[] {4, 3, 5}, new int[] {0, 5, 1}).batchStride());
    assertEquals(0, CudaMatmul.operand(new int[] {1, 3, 5}, new int[] {15, 5, 1}).batchStride(), "batch of one");
    // a row slice with padding keeps its row stride as ld
    assertEquals(8, CudaMatmul.operand(new int[] {1, 3, 5}, new int[] {24, 8, 1}).ld());
    // every other column: neither layout, copied first
    assertNull(CudaMatmul.operand(new int[] {1, 3, 5}, new int[] {30, 10, 2}));
  }

  @Test
  void misalignedOperandsAreCopied() {
    assertTrue(CudaMatmul.aligned(256, 0, 4));
    assertFalse(CudaMatmul.aligned(256 + 4, 0, 4), "an offset of one float");
    assertFalse(CudaMatmul.aligned(256 + 16, 0, 4), "16 bytes are not enough for every algorithm");
    assertFalse(CudaMatmul.aligned(256, 3 * 5, 4), "batch stride of 15 floats misaligns the second matrix");
    assertTrue(CudaMatmul.aligned(512, 64, 4), "64 floats per batch keep every matrix aligned");
  }

  @Test
  void contiguousStridesSkipEmptyDims() {
    assertArrayEquals(new int[] {20, 5, 1}, CudaMatmul.contiguousStrides(new int[] {3, 4, 5}));
    assertArrayEquals(new int[] {5, 5, 1}, CudaMatmul.contiguousStrides(new int[] {3, 0, 5}));
  }
}
