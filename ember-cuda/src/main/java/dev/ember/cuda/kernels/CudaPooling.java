package dev.ember.cuda.kernels;

import dev.ember.backend.PoolAxis;
import dev.ember.backend.PoolingKernels;
import dev.ember.backend.View;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.runtime.Workspace;
import dev.ember.tensor.DType;
import java.lang.foreign.MemorySegment;

/**
 * Max and average pooling on the GPU from the same {@link PoolAxis} tables as the CPU's kernels (uploaded per call:
 * a few hundred integers). The forward passes run one thread per output element with the CPU's scan order, tie and
 * NaN rules and its double-precision average, so they give the CPU's bits. The backward passes run one thread per
 * plane, adding in the CPU's order, so overlapping windows sum the same way on every run (no atomics).
 */
public final class CudaPooling implements PoolingKernels {
  static final String SOURCE = """
      #define GRID_LOOP(i, n) for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < (n); i += (long long) blockDim.x * gridDim.x)
      // tables: hs[oh], he[oh], ws[ow], we[ow] (ints); hdiv[oh], wdiv[ow] (doubles)
      template <typename T> __device__ void max_fwd(const T* x, T* y, int* arg, const int* tab, int ih, int iw, int oh,
          int ow, int dh, int dw, long long total) {
        const int *hs = tab, *he = tab + oh, *ws = tab + 2 * oh, *we = tab + 2 * oh + ow;
        GRID_LOOP(t, total) {
          int o = t % ow; int r = (t / ow) % oh; long long p = t / ((long long) ow * oh);
          const T* xp = x + p * (long long) ih * iw;
          T mv = (T) -__int_as_float(0x7f800000); int mi = hs[r] * iw + ws[o];
          for (int a = hs[r]; a < he[r]; a += dh)
            for (int c = ws[o]; c < we[o]; c += dw) {
              T v = xp[a * iw + c];
              if (v > mv || v != v) { mv = v; mi = a * iw + c; }
            }
          y[t] = mv;
          if (arg) arg[t] = mi;
        }
      }
      template <typename T> __device__ void max_bwd(const T* g, const int* arg, T* dx, int inPlane, int outPlane, long long planes) {
        GRID_LOOP(p, planes) {
          for (int o = 0; o < outPlane; o++) {
            int a = arg[p * outPlane + o];
            if (a >= 0 && a < inPlane) dx[p * inPlane + a] += g[p * outPlane + o];
          }
        }
      }
      template <typename T> __device__ void avg_fwd(const T* x, T* y, const int* tab, const double* div, int ih, int iw,
          int oh, int ow, long long total) {
        const int *hs = tab, *he = tab + oh, *ws = tab + 2 * oh, *we = tab + 2 * oh + ow;
        GRID_LOOP(t, total) {
          int o = t % ow; int r = (t / ow) % oh; long long p = t / ((long long) ow * oh);
          const T* xp = x + p * (long long) ih * iw;
          double s = 0;
          for (int a = hs[r]; a < he[r]; a++) for (int c = ws[o]; c < we[o]; c++) s += (double) xp[a * iw + c];
          y[t] = (hs[r] >= he[r] || ws[o] >= we[o]) ? (T) 0 : (T) (s / (div[r] * div[oh + o]));
        }
      }
      template <typename T> __device__ void avg_bwd(const T* g, T* dx, const int* tab, const double* div, int ih, int iw,
          int oh, int ow, long long planes) {
        const int *hs = tab, *he = tab + oh, *ws = tab + 2 * oh, *we = tab + 2 * oh + ow;
        GRID_LOOP(p, planes) {
          const T* gp = g + p * (long long) oh * ow;
          T* dp = dx + p * (long long) ih * iw;
          for (int r = 0; r < oh; r++)
            for (int o = 0; o < ow; o++) {
              if (hs[r] >= he[r] || ws[o] >= we[o]) continue;
              T v = (T) ((double) gp[r * ow + o] / (div[r] * div[oh + o]));
              for (int a = hs[r]; a < he[r]; a++) for (int c = ws[o]; c < we[o]; c++) dp[a * iw + c] += v;
            }
        }
      }
      #define BOTH(T, S) \\
      extern "C" __global__ void max_fwd_##S(const T* x, T* y, int* arg, const int* tab, int ih, int iw, int oh, int ow, int dh, int dw, long long n) { max_fwd<T>(x, y, arg, tab, ih, iw, oh, ow, dh, dw, n); } \\
      extern "C" __global__ void max_bwd_##S(const T* g, const int* arg, T* dx, int inPlane, int outPlane, long long planes) { max_bwd<T>(g, arg, dx, inPlane, outPlane, planes); } \\
      extern "C" __global__ void avg_fwd_##S(const T* x, T* y, const int* tab, const double* div, int ih, int iw, int oh, int ow, long long n) { avg_fwd<T>(x, y, tab, div, ih, iw, oh, ow, n); } \\
      extern "C" __global__ void avg_bwd_##S(const T* g, T* dx, const int* tab, const double* div, int ih, int iw, int oh, int ow, long long planes) { avg_bwd<T>(g, dx, tab, div, ih, iw, oh, ow, planes); }
      BOTH(float, f32)
      BOTH(double, f64)
      """;

  private final KernelCache cache;
  private final CudaContext ctx;
  private final Workspace tables;

  public CudaPooling(CudaContext ctx, KernelCache cache) {
    this.ctx = ctx;
    this.cache = cache;
    this.tables = new Workspace(ctx);
  }

  private long fn(String name, DType t) {
    return cache.function("pooling", SOURCE, name + (t == DType.F32 ? "_f32" : "_f64"));
  }

  /** Uploads {hs, he, ws, we} as ints, then (for averages) the divisors as doubles; returns {ints, doubles}. */
  private long[] upload(PoolAxis h, PoolAxis w) {
    int oh = h.out();
    int ow = w.out();
    int[] ints = new int[2 * oh + 2 * ow];
    System.arraycopy(h.start(), 0, ints, 0, oh);
    System.arraycopy(h.end(), 0, ints, oh, oh);
    System.arraycopy(w.start(), 0, ints, 2 * oh, ow);
    System.arraycopy(w.end(), 0, ints, 2 * oh + ow, ow);
    double[] div = null;
    if (h.div() != null && w.div() != null) {
      div = new double[oh + ow];
      System.arraycopy(h.div(), 0, div, 0, oh);
      System.arraycopy(w.div(), 0, div, oh, ow);
    }
    long intBytes = (4L * ints.length + 15) / 16 * 16;
    long bytes = intBytes + (div == null ? 0 : 8L * div.length);
    long base = tables.get(Math.max(16, bytes));
    ctx.makeCurrent();
    ctx.driver().memcpyHtoDSync(base, MemorySegment.ofArray(ints), 4L * ints.length);
    if (div != null) ctx.driver().memcpyHtoDSync(base + intBytes, MemorySegment.ofArray(div), 8L * div.length);
    return new long[] {base, div == null ? 0 : base + intBytes};
  }

  @Override
  public void maxForward(View x, int planes, PoolAxis h, PoolAxis w, View out, View argmax) {
    long total = (long) planes * h.out() * w.out();
    if (total == 0) return;
    long[] t = upload(h, w);
    cache.launch1d(fn("max_fwd", x.dtype()), total, KernelArgs.begin().ptr(KernelArgs.address(x))
        .ptr(KernelArgs.address(out)).ptr(argmax == null ? 0 : KernelArgs.address(argmax)).ptr(t[0]).i32(h.in())
        .i32(w.in()).i32(h.out()).i32(w.out()).i32(h.step()).i32(w.step()).i64(total));
  }

  @Override
  public void maxBackward(View g, View argmax, int planes, int inPlane, int outPlane, View dx) {
    if (planes == 0 || outPlane == 0) return;
    cache.launch1d(fn("max_bwd", g.dtype()), planes, KernelArgs.begin().ptr(KernelArgs.address(g))
        .ptr(KernelArgs.address(argmax)).ptr(KernelArgs.address(dx)).i32(inPlane).i32(outPlane).i64(planes));
  }

  @Override
  public void avgForward(View x, int planes, PoolAxis h, PoolAxis w, View out) {
    long total = (long) planes * h.out() * w.out();
    if (total == 0) return;
    long[] t = upload(h, w);
    cache.launch1d(fn("avg_fwd", x.dtype()), total, KernelArgs.begin().ptr(KernelArgs.address(x))
        .ptr(KernelArgs.address(out)).ptr(t[0]).ptr(t[1]).i32(h.in()).i32(w.in()).i32(h.out()).i32(w.out()).i64(total));
  }

  @Override
  public void avgBackward(View g, int planes, PoolAxis h, PoolAxis w, View dx) {
    if (planes == 0 || h.out() * w.out() == 0) return;
    long[] t = upload(h, w);
    cache.launch1d(fn("avg_bwd", g.dtype()), planes, KernelArgs.begin().ptr(KernelArgs.address(g))
        .ptr(KernelArgs.address(dx)).ptr(t[0]).ptr(t[1]).i32(h.in()).i32(w.in()).i32(h.out()).i32(w.out())
        .i64(planes));
  }
}
