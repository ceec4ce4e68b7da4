package dev.ember.cuda.kernels;

import static dev.ember.cuda.kernels.OnDevice.CPU;
import static dev.ember.cuda.kernels.OnDevice.assertClose;
import static dev.ember.cuda.kernels.OnDevice.random;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.cuda.lib.CublasLt;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** CudaMatmul against the CPU backend: every operand layout, broadcast batches, beta; skipped without a GPU. */
class CudaMatmulGpuTest {
  private OnDevice dev;
  private CudaMatmul k;
  private final Random rnd = new Random(3);

  @BeforeEach
  void gpu() {
    dev = new OnDevice();
    k = new CudaMatmul(dev.ctx, dev.ctx.kernels());
    CudaMatmul.allowTf32(false);
  }

  @AfterEach
  void free() {
    if (dev != null) dev.close();
  }

  enum Form { CONTIGUOUS, TRANSPOSED, GAPPED, OFFSET, BROADCAST }

  /** [B, r, c] holding src's values in the given form (BROADCAST: src's first matrix, batch stride 0). */
  private static StridedView form(StridedView src, Form f) {
    int[] sh = src.shapeRef();
    int b = sh[0], r = sh[1], c = sh[2];
    StridedView v = switch (f) {
      case CONTIGUOUS -> src;
      case TRANSPOSED -> StridedView.transpose(StridedView.allocate(src.dtype(), b, c, r), 1, 2);
      case GAPPED -> new StridedView(Storage.allocate(src.dtype(), 4L * b * r * c + 8), sh.clone(),
          new int[] {4 * r * c, 4 * c, 2}, 1);
      case OFFSET -> new StridedView(Storage.allocate(src.dtype(), (long) b * r * c + 1), sh.clone(),
          new int[] {r * c, c, 1}, 1);
      case BROADCAST -> new StridedView(Storage.allocate(src.dtype(), (long) r * c), sh.clone(), new int[] {0, c, 1}, 0);
    };
    if (f == Form.BROADCAST) {
      CPU.copy(StridedView.select(src, 0, 0), StridedView.select(v, 0, 0));
    } else if (v != src) {
      CPU.copy(src, v);
    }
    return v;
  }

  @Test
  void everyOperandFormMatchesTheCpu() {
    int[][] sizes = {{1, 3, 5, 4}, {2, 33, 17, 65}, {3, 128, 64, 96}};
    for (DType t : new DType[] {DType.F32, DType.F64}) {
      for (int[] s : sizes) {
        int b = s[0], m = s[1], kk = s[2], n = s[3];
        for (Form fa : Form.values()) {
          for (Form fb : Form.values()) {
            for (Form fo : new Form[] {Form.CONTIGUOUS, Form.TRANSPOSED, Form.GAPPED}) {
              for (float beta : new float[] {0f, 1f}) {
                StridedView a = form(random(rnd, t, 0, b, m, kk), fa);
                StridedView bb = form(random(rnd, t, 0, b, kk, n), fb);
                StridedView out0 = form(random(rnd, t, 0, b, m, n), fo);
                StridedView expect = StridedView.allocate(t, b, m, n);
                CPU.copy(out0, expect);
                CPU.matmul(a, bb, expect, beta);
                View out = dev.upload(out0);
                k.matmul(dev.upload(a), dev.upload(bb), out, beta);
                double tol = t == DType.F32 ? 1e-5 * kk : 1e-13 * kk;
                assertClose(expect, dev.download(out), tol, tol, t + " " + java.util.Arrays.toString(s) + " a " + fa
                    + " b " + fb + " out " + fo + " beta " + beta);
              }
            }
          }
        }
      }
    }
  }

  @Test
  void anEmptyInnerDimensionScalesOut() {
    for (float beta : new float[] {0f, 0.5f, 1f}) {
      StridedView a = StridedView.allocate(DType.F32, 2, 3, 0);
      StridedView b = StridedView.allocate(DType.F32, 2, 0, 4);
      StridedView out0 = random(rnd, DType.F32, 0, 2, 3, 4);
      if (beta == 0f) out0.storage().setDouble(5, Double.NaN); // beta 0 overwrites, NaN included
      StridedView expect = StridedView.allocate(DType.F32, 2, 3, 4);
      CPU.copy(out0, expect);
      CPU.matmul(a, b, expect, beta);
      View out = dev.upload(out0);
      k.matmul(dev.upload(a), dev.upload(b), out, beta);
      assertClose(expect, dev.download(out), 0, 0, "k = 0, beta " + beta);
    }
  }

  @Test
  void tf32IsOptIn() {
    assertTrue(!CudaMatmul.allowTf32(), "off by default");
    StridedView a = random(rnd, DType.F32, 0, 1, 256, 256);
    StridedView b = random(rnd, DType.F32, 0, 1, 256, 256);
    StridedView expect = StridedView.allocate(DType.F32, 1, 256, 256);
    CPU.matmul(a, b, expect, 0f);
    View da = dev.upload(a);
    View db = dev.upload(b);
    View fp32 = dev.upload(StridedView.allocate(DType.F32, 1, 256, 256));
    View tf32 = dev.upload(StridedView.allocate(DType.F32, 1, 256, 256));
    k.matmul(da, db, fp32, 0f);
    CudaMatmul.allowTf32(true);
    try {
      k.matmul(da, db, tf32, 0f);
    } finally {
      CudaMatmul.allowTf32(false);
    }
    StridedView f = dev.download(fp32);
    StridedView t = dev.download(tf32);
    assertClose(expect, f, 1e-4, 1e-4, "float32 by default");
    assertClose(expect, t, 1e-2, 1e-2, "tf32 is close, not exact");
    boolean differs = false;
    for (int i = 0; i < 256 * 256 && !differs; i++) differs = f.storage().getDouble(i) != t.storage().getDouble(i);
    assertTrue(differs, "allowTf32(true) changes the arithmetic (10-bit mantissas)");
  }

  private static short bf16(float v) {
    return (short) (Float.floatToRawIntBits(v) >>> 16); // truncation: the test's values are exact in bf16
  }

  @Test
  void rawBf16ProductAccumulatesInFloat() {
    int m = 64, n = 48, kk = 80;
    // column-major A (m x k) and B (k x n) of small integers times 1/8, exact in bf16 and in float sums
    float[] a = new float[m * kk];
    float[] b = new float[kk * n];
    for (int i = 0; i < a.length; i++) a[i] = (rnd.nextInt(17) - 8) / 8f;
    for (int i = 0; i < b.length; i++) b[i] = (rnd.nextInt(17) - 8) / 8f;
    short[] ah = new short[a.length];
    short[] bh = new short[b.length];
    for (int i = 0; i < a.length; i++) ah[i] = bf16(a[i]);
    for (int i = 0; i < b.length; i++) bh[i] = bf16(b[i]);
    var d = dev.ctx.driver();
    long da = d.memAlloc(2L * a.length);
    long db = d.memAlloc(2L * b.length);
    long dc = d.memAlloc(4L * m * n);
    try {
      d.memcpyHtoDSync(da, MemorySegment.ofArray(ah), 2L * a.length);
      d.memcpyHtoDSync(db, MemorySegment.ofArray(bh), 2L * b.length);
      k.matmulRaw(CublasLt.R_16BF, CublasLt.R_32F, false, false, m, n, kk, da, m, 0, db, kk, 0, dc, m, 0, 1, 1f, 0f);
      float[] c = new float[m * n];
      dev.ctx.synchronize();
      d.memcpyDtoHSync(MemorySegment.ofArray(c), dc, 4L * m * n);
      for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
          double s = 0;
          for (int p = 0; p < kk; p++) s += a[i + p * m] * b[p + j * kk];
          assertEquals(s, c[i + j * m], 0, "C[" + i + ", " + j + "]");
        }
      }
    } finally {
      d.memFree(da);
      d.memFree(db);
      d.memFree(dc);
    }
  }
}
