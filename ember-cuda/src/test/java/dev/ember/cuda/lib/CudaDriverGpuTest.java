package dev.ember.cuda.lib;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.testing.Gpu;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The driver, NVRTC and cuBLASLt bindings end to end on a GPU; skipped where there is none. */
class CudaDriverGpuTest {
  CudaContext ctx;
  CudaDriver d;

  @BeforeEach
  void gpu() {
    Gpu.assumeDevice();
    ctx = CudaContext.of(0);
    ctx.makeCurrent();
    d = ctx.driver();
  }

  @Test
  void describesTheDevice() {
    assertTrue(d.deviceCount() >= 1);
    assertFalse(d.deviceName(0).isBlank());
    assertTrue(d.totalMemory(0) > 1L << 30);
    assertTrue(d.computeCapability(0)[0] >= 5);
    assertTrue(d.driverVersion() >= 11000);
    long[] info = d.memInfo();
    assertTrue(info[0] > 0 && info[0] <= info[1]);
  }

  @Test
  void copiesRoundTripThroughHeapNativeAndPinnedMemory() {
    int n = 100_003;
    float[] x = new float[n];
    for (int i = 0; i < n; i++) x[i] = i * 0.5f - 7;
    long dx = d.memAlloc(4L * n);
    long dy = d.memAlloc(4L * n);
    MemorySegment pinned = d.hostAlloc(4L * n);
    try (Arena a = Arena.ofConfined()) {
      d.memcpyHtoDSync(dx, MemorySegment.ofArray(x), 4L * n);
      d.memcpyDtoD(dy, dx, 4L * n, ctx.stream());
      d.memcpyDtoH(pinned, dy, 4L * n, ctx.stream());
      ctx.synchronize();
      assertArrayEquals(x, pinned.toArray(ValueLayout.JAVA_FLOAT));
      MemorySegment native_ = a.allocate(4L * n);
      d.memsetD32(dy, Float.floatToRawIntBits(3f), n, ctx.stream());
      d.memcpyDtoH(native_, dy, 4L * n, ctx.stream());
      ctx.synchronize();
      for (float v : native_.toArray(ValueLayout.JAVA_FLOAT)) assertEquals(3f, v);
      d.memsetD8(dy, 0, 4L * n, ctx.stream());
      float[] back = new float[n];
      d.memcpyDtoHSync(MemorySegment.ofArray(back), dy, 4L * n);
      assertArrayEquals(new float[n], back);
    } finally {
      d.memFree(dx);
      d.memFree(dy);
      d.hostFree(pinned);
    }
  }

  @Test
  void eventsTimeWorkOnAStream() {
    long s = d.streamCreate(true);
    long e0 = d.eventCreate(true);
    long e1 = d.eventCreate(true);
    long buf = d.memAlloc(64L << 20);
    try {
      d.eventRecord(e0, s);
      d.memsetD8(buf, 1, 64L << 20, s);
      d.eventRecord(e1, s);
      d.eventSynchronize(e1);
      assertTrue(d.eventQuery(e1));
      assertTrue(d.eventElapsedMs(e0, e1) >= 0);
      d.streamSynchronize(s);
    } finally {
      d.memFree(buf);
      d.eventDestroy(e0);
      d.eventDestroy(e1);
      d.streamDestroy(s);
    }
  }

  @Test
  void anImpossibleAllocationIsAnOutOfMemoryErrorNamingTheCall() {
    CudaException e = assertThrows(CudaException.class, () -> d.memAlloc(1L << 50));
    assertEquals(CudaDriver.ERROR_OUT_OF_MEMORY, e.code());
    assertTrue(e.getMessage().contains("cuMemAlloc_v2"), e.getMessage());
    assertTrue(e.getMessage().contains("CUDA_ERROR_OUT_OF_MEMORY"), e.getMessage());
  }

  @Test
  void aKernelReadsAStridedViewThroughItsGeo() {
    // x is a [3, 4] row-major matrix read transposed ([4, 3], strides {1, 4}).
    float[] x = new float[12];
    for (int i = 0; i < 12; i++) x[i] = i;
    long dx = d.memAlloc(48);
    long dy = d.memAlloc(48);
    try {
      d.memcpyHtoDSync(dx, MemorySegment.ofArray(x), 48);
      String src = """
          extern "C" __global__ void copy_geo(const float* x, Geo gx, float* y) {
            for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < gx.numel;
                 i += (long long) blockDim.x * gridDim.x) y[i] = x[geo_offset(gx, i)];
          }
          """;
      long fn = ctx.kernels().function("test_copy_geo", src, "copy_geo");
      ctx.kernels().launch1d(fn, 12, KernelArgs.begin().ptr(dx).geo(new int[] {4, 3}, new int[] {1, 4}).ptr(dy));
      float[] y = new float[12];
      d.memcpyDtoHSync(MemorySegment.ofArray(y), dy, 48);
      assertArrayEquals(new float[] {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}, y);
    } finally {
      d.memFree(dx);
      d.memFree(dy);
    }
  }

  @Test
  void cublasLtMultipliesBatchedAndTransposedOperands() {
    int batch = 3, m = 33, k = 17, n = 20;
    Random r = new Random(5);
    double[] ad = new double[batch * m * k];
    double[] bd = new double[batch * k * n];
    for (int i = 0; i < ad.length; i++) ad[i] = r.nextGaussian();
    for (int i = 0; i < bd.length; i++) bd[i] = r.nextGaussian();
    long da = d.memAlloc(8L * ad.length);
    long db = d.memAlloc(8L * bd.length);
    long dc = d.memAlloc(8L * batch * m * n);
    try {
      d.memcpyHtoDSync(da, MemorySegment.ofArray(ad), 8L * ad.length);
      d.memcpyHtoDSync(db, MemorySegment.ofArray(bd), 8L * bd.length);
      // column-major C^T[n,m] = B^T[n,k] A^T[k,m] per batch: row-major A, B, C
      var spec = new CublasLt.MatmulSpec(CublasLt.COMPUTE_64F, CublasLt.R_64F, CublasLt.R_64F, false, false, n, m, k,
          n, k, n, (long) k * n, (long) m * k, (long) m * n, batch, 0);
      CublasLt.get().matmul(spec, 1, db, da, 0, dc, 0, ctx.stream());
      double[] c = new double[batch * m * n];
      d.memcpyDtoHSync(MemorySegment.ofArray(c), dc, 8L * c.length);
      for (int b = 0; b < batch; b++) {
        for (int i = 0; i < m; i++) {
          for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++) s += ad[b * m * k + i * k + p] * bd[b * k * n + p * n + j];
            assertEquals(s, c[b * m * n + i * n + j], 1e-12, "batch " + b + " (" + i + ", " + j + ")");
          }
        }
      }
    } finally {
      d.memFree(da);
      d.memFree(db);
      d.memFree(dc);
    }
  }
}
