package dev.ember.backend.cpu.conv;

import dev.ember.backend.Backend;
import dev.ember.backend.ConvGeometry;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.backend.cpu.CpuBackends;
import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.RowKernels;
import dev.ember.backend.cpu.Rows;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;

/**
 * What the convolution strategies share: the task grain and the weight-gradient chunking (fixed by the
 * shapes, so results do not depend on the thread count), per-thread scratch buffers, im2col and col2im
 * over F32 or F64 storages, GEMM on the backend's matmul, and the zero-padded plane copies of the direct
 * kernels.
 */
final class ConvSupport {
  private ConvSupport() {}

  static final RowKernels ROWS = RowKernels.F32;

  /** Elements of work below which a task is not worth a hand-off (fixed, so chunking depends on shapes only). */
  static final int GRAIN = 1 << 14;
  /** Budget in elements for the weight-gradient partials of all batch chunks together. */
  private static final long PARTIAL_BUDGET = 1L << 23;
  private static final int MAX_WEIGHT_CHUNKS = 8;

  private static final ThreadLocal<float[]> F_SCRATCH = ThreadLocal.withInitial(() -> new float[0]);
  private static final ThreadLocal<double[]> D_SCRATCH = ThreadLocal.withInitial(() -> new double[0]);

  /** This thread's scratch buffer of at least n elements (contents undefined). */
  static Storage scratch(DType dt, int n) {
    if (dt == DType.F32) {
      float[] a = F_SCRATCH.get();
      if (a.length < n) F_SCRATCH.set(a = new float[n]);
      return Storage.wrap(a);
    }
    double[] a = D_SCRATCH.get();
    if (a.length < n) D_SCRATCH.set(a = new double[n]);
    return Storage.wrap(a);
  }

  /** dst[d + (c*kk + i*kw + j) * cols + oy*ow + ox] = image(c, iy, ix), 0 outside. */
  static void im2col(Storage src, int so, int channels, ConvGeometry g, Storage dst, int d) {
    int kk = g.kk();
    int cols = g.cols();
    int per = Math.max(1, GRAIN / Math.max(1, kk * cols));
    boolean f32 = src.dtype() == DType.F32;
    Parallel.forEach(Parallel.chunks(channels, per), t -> {
      for (int c = t * per, c1 = Math.min(channels, c + per); c < c1; c++) {
        if (f32) {
          ConvLoops.im2col(src.floats(), so + c * g.hw(), g, dst.floats(), d + c * kk * cols);
          continue;
        }
        for (int i = 0; i < g.kh(); i++) {
          for (int j = 0; j < g.kw(); j++) {
            int row = d + (c * kk + i * g.kw() + j) * cols;
            int xl = g.xLo(j);
            int xh = g.xHi(j);
            int ix = so + c * g.hw() + j * g.dw() - g.pw() + xl * g.sw();
            for (int oy = 0; oy < g.oh(); oy++) {
              int iy = oy * g.sh() - g.ph() + i * g.dh();
              int r = row + oy * g.ow();
              if (iy < 0 || iy >= g.h()) {
                Rows.zero(dst, r, r + g.ow());
              } else {
                Rows.zero(dst, r, r + xl);
                Rows.gather(src, ix + iy * g.w(), g.sw(), dst, r + xl, xh - xl);
                Rows.zero(dst, r + xh, r + g.ow());
              }
            }
          }
        }
      }
    });
  }

  /** image(c, iy, ix) += col[...] for every column entry that lies in the image (the adjoint of im2col). */
  static void col2im(Storage col, int d, int channels, ConvGeometry g, Storage dst, int so) {
    int kk = g.kk();
    int cols = g.cols();
    int per = Math.max(1, GRAIN / Math.max(1, kk * cols));
    boolean f32 = col.dtype() == DType.F32;
    Parallel.forEach(Parallel.chunks(channels, per), t -> {
      for (int c = t * per, c1 = Math.min(channels, c + per); c < c1; c++) {
        if (f32) {
          ConvLoops.col2im(col.floats(), d + c * kk * cols, g, dst.floats(), so + c * g.hw());
          continue;
        }
        for (int i = 0; i < g.kh(); i++) {
          for (int j = 0; j < g.kw(); j++) {
            int row = d + (c * kk + i * g.kw() + j) * cols;
            int xl = g.xLo(j);
            int xh = g.xHi(j);
            int ix = so + c * g.hw() + j * g.dw() - g.pw() + xl * g.sw();
            for (int oy = 0; oy < g.oh(); oy++) {
              int iy = oy * g.sh() - g.ph() + i * g.dh();
              if (iy >= 0 && iy < g.h()) {
                Rows.scatterAdd(col, row + oy * g.ow() + xl, dst, ix + iy * g.w(), g.sw(), xh - xl);
              }
            }
          }
        }
      }
    });
  }

  /**
   * C[m, n] (+)= op(A)[m, k] op(B)[k, n] on the backend's GEMM. A transposed operand is stored as
   * the row-major transpose with leading dimension lda (ldb); GEMM packs it, no copy is made.
   */
  static void gemm(Storage a, int ao, int m, int k, int lda, boolean ta, Storage b, int bo, int n, int ldb,
      boolean tb, Storage c, int co, int ldc, boolean accumulate) {
    Backend be = CpuBackends.instance();
    View at = new StridedView(a, new int[] {1, m, k}, ta ? new int[] {m * k, 1, lda} : new int[] {m * k, lda, 1}, ao);
    View bt = new StridedView(b, new int[] {1, k, n}, tb ? new int[] {k * n, 1, ldb} : new int[] {k * n, ldb, 1}, bo);
    View ct = new StridedView(c, new int[] {1, m, n}, new int[] {m * n, ldc, 1}, co);
    be.matmul(at, bt, ct, accumulate);
  }

  /** The zero-padded planes of the direct and depthwise kernels. */
  private static final ThreadLocal<float[]> F_PADDED = ThreadLocal.withInitial(() -> new float[0]);

  /**
   * {@code planes} consecutive h x w planes of {@code s} from {@code src} copied into this thread's buffer,
   * each at (top, left) of a zeroed plane of {@code rows} x {@code pitch} floats, the planes back to back and
   * followed by {@code extra} zeros; what falls outside a plane is left out.
   */
  static float[] paddedPlanes(float[] s, int src, int planes, int h, int w, int top, int left, int rows,
      int pitch, int extra) {
    int size = planes * rows * pitch + extra;
    float[] xp = F_PADDED.get();
    if (xp.length < size) F_PADDED.set(xp = new float[size]);
    java.util.Arrays.fill(xp, 0, size, 0f);
    int c0 = Math.max(0, -left);
    int c1 = Math.min(w, pitch - left);
    // the rows that land in the plane, a plane per call (short rows: one System.arraycopy per row cost ~10 ns each)
    int r0 = Math.max(0, -top);
    int r1 = Math.min(h, rows - top);
    if (c1 <= c0 || r1 <= r0) return xp;
    for (int q = 0; q < planes; q++) {
      ROWS.copyRows(s, src + (q * h + r0) * w + c0, w, xp, (q * rows + r0 + top) * pitch + left + c0, pitch, r1 - r0,
          c1 - c0);
    }
    return xp;
  }

  /** Images per weight-gradient chunk: at most 8 chunks, fewer when the partials would be large. */
  static int imagesPerChunk(int n, long weightNumel) {
    int chunks = (int) Math.max(1, Math.min(Math.min(n, MAX_WEIGHT_CHUNKS), PARTIAL_BUDGET / Math.max(1, weightNumel)));
    return Math.max(1, (n + chunks - 1) / chunks);
  }

  /** part[0] is dw's own storage; the others are fresh buffers of dw's size. */
  static Storage[] partials(View dw, int chunks) {
    if (dw == null) return null;
    Storage[] part = new Storage[chunks];
    part[0] = dw.storage();
    for (int t = 1; t < chunks; t++) part[t] = Storage.allocate(dw.dtype(), dw.numel());
    return part;
  }

  /** part[0] += part[1] + part[2] + ... element by element, in chunk order. */
  static void sumPartials(Storage[] part, int size) {
    if (part.length == 1) return;
    int per = GRAIN * 4;
    Parallel.forEach(Parallel.chunks(size, per), t -> {
      int from = t * per;
      int n = Math.min(size, from + per) - from;
      for (int p = 1; p < part.length; p++) Rows.scatterAdd(part[p], from, part[0], from, 1, n);
    });
  }

  /** v's elements in row-major order as floats (the moved kernels' copy of a weight), as Tensor.toFloatArray. */
  static float[] floats(View v) {
    float[] out = new float[(int) v.numel()];
    if (out.length == 0) return out;
    View c = contiguous(v, DType.F32);
    System.arraycopy(c.storage().floats(), c.offset(), out, 0, out.length);
    return out;
  }

  /** v's elements in row-major order as doubles, as Tensor.toDoubleArray. */
  static double[] doubles(View v) {
    double[] out = new double[(int) v.numel()];
    if (out.length == 0) return out;
    View c = contiguous(v, DType.F64);
    System.arraycopy(c.storage().doubles(), c.offset(), out, 0, out.length);
    return out;
  }

  /** v itself if it is contiguous and of dtype dt, else a contiguous copy converted to dt. */
  private static View contiguous(View v, DType dt) {
    if (v.dtype() == dt && v.isContiguous()) return v;
    StridedView c = StridedView.allocate(dt, v.shapeRef());
    CpuBackends.instance().copy(v, c);
    return c;
  }

  /** The bias as doubles, or null. */
  static double[] biasDoubles(View bias) {
    return bias == null ? null : doubles(bias);
  }

  /**
   * Elements [from, to) of an F32 or F64 storage clamped at 0 in place, in the RELU kernel's form
   * ({@code v <= 0 ? 0 : v}, which is Math.max(v, 0) for NaN and -0 too): the fused ReLU of a kernel whose
   * inner loop is not ours to change, applied to a plane or block it has just written (still in cache).
   */
  static void relu(Storage s, int from, int to) {
    if (s.dtype() == DType.F32) {
      float[] a = s.floats();
      for (int i = from; i < to; i++) a[i] = a[i] <= 0 ? 0f : a[i];
    } else {
      double[] a = s.doubles();
      for (int i = from; i < to; i++) a[i] = a[i] <= 0 ? 0.0 : a[i];
    }
  }
}
