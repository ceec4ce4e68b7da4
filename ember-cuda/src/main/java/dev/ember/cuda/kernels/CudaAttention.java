package dev.ember.cuda.kernels;

import dev.ember.backend.AttentionKernels;
import dev.ember.backend.View;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.runtime.Workspace;
import dev.ember.tensor.DType;
import java.lang.foreign.MemorySegment;

/**
 * Memory-efficient attention on the GPU (FlashAttention's online softmax): the forward runs one block per
 * (batch, query row), walking the visible keys in chunks of {@link #CHUNK} with a running maximum and sum, so no
 * [L, S] score matrix exists; it keeps the row's logsumexp. The backward recomputes the probabilities from it in
 * two passes: one block per query row for dq (and the row's {@code D = dO . O}), one block per key row for dk and
 * dv, each summing in a fixed order (no atomics; only a broadcast mask's gradient adds atomically). Scores,
 * probabilities and sums are in double; causality, the sliding window, the additive mask and the counter-based
 * dropout are the CPU kernels' ({@link Problem#allowed}, {@link Problem#keep}), so both drop the same weights.
 * The view methods ({@link #forwardInto}, {@link #backwardFrom}) read and write the logsumexps and the mask's
 * gradient in device memory, so neither direction waits for the queue; the double-array methods copy them through
 * the host as the SPI's arrays require.
 */
public final class CudaAttention implements AttentionKernels {
  static final int CHUNK = 128;

  static final String SOURCE = """
      #define CH 128
      struct P { int B, L, S, E, EV; double scale; int causal, window; double dropP; unsigned long long seed;
                 const double* mask; const int* maskBase; int si, sj; };
      __device__ __forceinline__ bool allowed(const P& p, int i, int j) {
        if (p.causal && j > i) return false;
        if (p.window >= 0 && (j < i - p.window || (!p.causal && j > i + p.window))) return false;
        return true;
      }
      __device__ __forceinline__ double keep(const P& p, int b, int i, int j) {
        if (p.dropP == 0) return 1;
        if (p.dropP >= 1) return 0;
        unsigned long long idx = ((unsigned long long) b * p.L + i) * p.S + j;
        unsigned long long z = p.seed + (idx + 1ULL) * 0x9E3779B97F4A7C15ULL;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        double u = (double) (z >> 11) * 0x1.0p-53;
        return u < p.dropP ? 0.0 : 1.0 / (1.0 - p.dropP);
      }
      __device__ __forceinline__ int key_lo(const P& p, int i) { return p.window >= 0 ? max(0, i - p.window) : 0; }
      __device__ __forceinline__ int key_hi(const P& p, int i) {
        if (p.causal) return min(p.S, i + 1);
        if (p.window >= 0) return min(p.S, i + 1 + p.window);
        return p.S;
      }
      __device__ double bmax(double v, double* red) {
        __syncthreads(); red[threadIdx.x] = v; __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + s]); __syncthreads(); }
        return red[0];
      }
      __device__ double bsum(double v, double* red) {
        __syncthreads(); red[threadIdx.x] = v; __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s]; __syncthreads(); }
        return red[0];
      }
      // shared: qrow[E], acc[EV], pj[CH], red[blockDim]
      template <typename T> __device__ void fwd(P p, const T* q, const T* k, const T* v, T* out, double* lse) {
        extern __shared__ double sm[];
        double* qrow = sm; double* acc = qrow + p.E; double* pj = acc + p.EV; double* red = pj + CH;
        int i = blockIdx.x, b = blockIdx.y;
        const T* qi = q + ((long long) b * p.L + i) * p.E;
        for (int c = threadIdx.x; c < p.E; c += blockDim.x) qrow[c] = (double) qi[c];
        for (int c = threadIdx.x; c < p.EV; c += blockDim.x) acc[c] = 0;
        double m = -INFINITY_D, sum = 0;
        int lo = key_lo(p, i), hi = key_hi(p, i);
        for (int j0 = lo; j0 < hi; j0 += CH) {
          __syncthreads();
          int j = j0 + threadIdx.x;
          double s = -INFINITY_D;
          if (threadIdx.x < CH && j < hi && allowed(p, i, j)) {
            const T* kj = k + ((long long) b * p.S + j) * p.E;
            double d = 0;
            for (int c = 0; c < p.E; c++) d += qrow[c] * (double) kj[c];
            s = d * p.scale;
            if (p.mask) s += p.mask[p.maskBase[b] + (long long) i * p.si + (long long) j * p.sj];
          }
          double cmax = bmax(s, red);
          double nm = fmax(m, cmax);
          if (nm == -INFINITY_D) continue;
          double e = (s == -INFINITY_D) ? 0.0 : exp(s - nm);
          double alpha = (m == -INFINITY_D) ? 0.0 : exp(m - nm);
          double csum = bsum(e, red);
          sum = sum * alpha + csum;
          m = nm;
          if (threadIdx.x < CH) pj[threadIdx.x] = e * (j < hi ? keep(p, b, i, j) : 0.0);
          __syncthreads();
          int n = min(CH, hi - j0);
          for (int c = threadIdx.x; c < p.EV; c += blockDim.x) {
            double a = acc[c] * alpha;
            for (int t = 0; t < n; t++) if (pj[t] != 0) a += pj[t] * (double) v[((long long) b * p.S + j0 + t) * p.EV + c];
            acc[c] = a;
          }
        }
        __syncthreads();
        T* oi = out + ((long long) b * p.L + i) * p.EV;
        for (int c = threadIdx.x; c < p.EV; c += blockDim.x) oi[c] = (T) (acc[c] / sum);
        if (threadIdx.x == 0) lse[(long long) b * p.L + i] = m + log(sum);
      }
      // per query row: D_i = dO_i . O_i (kept for the key pass), dq_i += scale * sum_j dS_ij k_j
      template <typename T> __device__ void bwd_q(P p, const T* q, const T* k, const T* v, const T* out, const double* lse,
          const T* dout, T* dq, double* dbuf, double* dmask) {
        extern __shared__ double sm[];
        double* qrow = sm; double* dorow = qrow + p.E; double* acc = dorow + p.EV; double* ds = acc + p.E; double* red = ds + CH;
        int i = blockIdx.x, b = blockIdx.y;
        long long qi = (long long) b * p.L + i;
        for (int c = threadIdx.x; c < p.E; c += blockDim.x) { qrow[c] = (double) q[qi * p.E + c]; acc[c] = 0; }
        double dpart = 0;
        for (int c = threadIdx.x; c < p.EV; c += blockDim.x) { dorow[c] = (double) dout[qi * p.EV + c]; dpart += dorow[c] * (double) out[qi * p.EV + c]; }
        double D = bsum(dpart, red);
        if (threadIdx.x == 0) dbuf[qi] = D;
        double li = lse[qi];
        int lo = key_lo(p, i), hi = key_hi(p, i);
        for (int j0 = lo; j0 < hi; j0 += CH) {
          __syncthreads();
          int j = j0 + threadIdx.x;
          double d = 0;
          if (threadIdx.x < CH && j < hi && allowed(p, i, j) && li != -INFINITY_D) {
            const T* kj = k + ((long long) b * p.S + j) * p.E;
            const T* vj = v + ((long long) b * p.S + j) * p.EV;
            double s = 0, dp = 0;
            for (int c = 0; c < p.E; c++) s += qrow[c] * (double) kj[c];
            for (int c = 0; c < p.EV; c++) dp += dorow[c] * (double) vj[c];
            s *= p.scale;
            if (p.mask) s += p.mask[p.maskBase[b] + (long long) i * p.si + (long long) j * p.sj];
            double pij = exp(s - li);
            d = pij * (dp * keep(p, b, i, j) - D);
            if (dmask && pij != 0) atomicAdd(dmask + p.maskBase[b] + (long long) i * p.si + (long long) j * p.sj, d);
          }
          if (threadIdx.x < CH) ds[threadIdx.x] = d;
          __syncthreads();
          int n = min(CH, hi - j0);
          for (int c = threadIdx.x; c < p.E; c += blockDim.x) {
            double a = acc[c];
            for (int t = 0; t < n; t++) if (ds[t] != 0) a += ds[t] * (double) k[((long long) b * p.S + j0 + t) * p.E + c];
            acc[c] = a;
          }
        }
        __syncthreads();
        for (int c = threadIdx.x; c < p.E; c += blockDim.x) dq[qi * p.E + c] += (T) (acc[c] * p.scale);
      }
      // per key row: dv_j += sum_i P_ij keep_ij dO_i, dk_j += scale * sum_i dS_ij q_i
      template <typename T> __device__ void bwd_kv(P p, const T* q, const T* k, const T* v, const double* lse,
          const T* dout, const double* dbuf, T* dk, T* dv) {
        extern __shared__ double sm[];
        double* krow = sm; double* vrow = krow + p.E; double* accK = vrow + p.EV; double* accV = accK + p.E;
        double* pk = accV + p.EV; double* ds = pk + CH;
        int j = blockIdx.x, b = blockIdx.y;
        long long kj = (long long) b * p.S + j;
        for (int c = threadIdx.x; c < p.E; c += blockDim.x) { krow[c] = (double) k[kj * p.E + c]; accK[c] = 0; }
        for (int c = threadIdx.x; c < p.EV; c += blockDim.x) { vrow[c] = (double) v[kj * p.EV + c]; accV[c] = 0; }
        for (int i0 = 0; i0 < p.L; i0 += CH) {
          __syncthreads();
          int i = i0 + threadIdx.x;
          double pkeep = 0, d = 0;
          if (threadIdx.x < CH && i < p.L && j >= key_lo(p, i) && j < key_hi(p, i) && allowed(p, i, j)) {
            long long qi = (long long) b * p.L + i;
            double li = lse[qi];
            if (li != -INFINITY_D) {
              double s = 0, dp = 0;
              for (int c = 0; c < p.E; c++) s += (double) q[qi * p.E + c] * krow[c];
              for (int c = 0; c < p.EV; c++) dp += (double) dout[qi * p.EV + c] * vrow[c];
              s *= p.scale;
              if (p.mask) s += p.mask[p.maskBase[b] + (long long) i * p.si + (long long) j * p.sj];
              double pij = exp(s - li);
              double kp = keep(p, b, i, j);
              pkeep = pij * kp;
              d = pij * (dp * kp - dbuf[qi]);
            }
          }
          if (threadIdx.x < CH) { pk[threadIdx.x] = pkeep; ds[threadIdx.x] = d; }
          __syncthreads();
          int n = min(CH, p.L - i0);
          for (int c = threadIdx.x; c < p.EV; c += blockDim.x) {
            double a = accV[c];
            for (int t = 0; t < n; t++) if (pk[t] != 0) a += pk[t] * (double) dout[((long long) b * p.L + i0 + t) * p.EV + c];
            accV[c] = a;
          }
          for (int c = threadIdx.x; c < p.E; c += blockDim.x) {
            double a = accK[c];
            for (int t = 0; t < n; t++) if (ds[t] != 0) a += ds[t] * (double) q[((long long) b * p.L + i0 + t) * p.E + c];
            accK[c] = a;
          }
        }
        __syncthreads();
        for (int c = threadIdx.x; c < p.E; c += blockDim.x) dk[kj * p.E + c] += (T) (accK[c] * p.scale);
        for (int c = threadIdx.x; c < p.EV; c += blockDim.x) dv[kj * p.EV + c] += (T) accV[c];
      }
      extern "C" __global__ void band_mask(P p, unsigned char* out) {
        for (long long t = blockIdx.x * (long long) blockDim.x + threadIdx.x; t < (long long) p.L * p.S; t += (long long) blockDim.x * gridDim.x)
          out[t] = allowed(p, (int) (t / p.S), (int) (t % p.S)) ? 1 : 0;
      }
      template <typename T> __device__ void dropout_keep(P p, T* out) {
        long long n = (long long) p.B * p.L * p.S;
        for (long long t = blockIdx.x * (long long) blockDim.x + threadIdx.x; t < n; t += (long long) blockDim.x * gridDim.x) {
          int j = t % p.S; long long r = t / p.S; int i = r % p.L; int b = r / p.L;
          out[t] = (T) keep(p, b, i, j);
        }
      }
      #define BOTH(T, S) \\
      extern "C" __global__ void fwd_##S(P p, const T* q, const T* k, const T* v, T* out, double* lse) { fwd<T>(p, q, k, v, out, lse); } \\
      extern "C" __global__ void bwd_q_##S(P p, const T* q, const T* k, const T* v, const T* out, const double* lse, const T* dout, T* dq, double* dbuf, double* dmask) { bwd_q<T>(p, q, k, v, out, lse, dout, dq, dbuf, dmask); } \\
      extern "C" __global__ void bwd_kv_##S(P p, const T* q, const T* k, const T* v, const double* lse, const T* dout, const double* dbuf, T* dk, T* dv) { bwd_kv<T>(p, q, k, v, lse, dout, dbuf, dk, dv); } \\
      extern "C" __global__ void dropout_keep_##S(P p, T* out) { dropout_keep<T>(p, out); }
      BOTH(float, f32)
      BOTH(double, f64)
      """.replace("INFINITY_D", "__longlong_as_double(0x7ff0000000000000LL)");

  private static final int THREADS = 128;

  private final CudaContext ctx;
  private final KernelCache cache;
  private final Workspace scratch;
  private final Workspace bases;
  private final PinnedUploads uploads;

  public CudaAttention(CudaContext ctx, KernelCache cache) {
    this.ctx = ctx;
    this.cache = cache;
    this.scratch = new Workspace(ctx);
    this.bases = new Workspace(ctx);
    this.uploads = PinnedUploads.of(ctx);
  }

  /** The kernels {@link #fn} and {@link #bandMask} launch, for compile checks: every one is in the cubin. */
  static java.util.List<String> kernelNames() {
    java.util.List<String> names = new java.util.ArrayList<>();
    for (String k : new String[] {"fwd", "bwd_q", "bwd_kv", "dropout_keep"}) {
      names.add(k + "_f32");
      names.add(k + "_f64");
    }
    names.add("band_mask");
    return names;
  }

  private long fn(String name, DType t) {
    return cache.function("attention", SOURCE, name + (t == DType.F32 ? "_f32" : "_f64"));
  }

  /** The struct P: shapes, scale, band, dropout, and the mask's device data and per-batch bases. */
  private MemorySegment problem(Problem p) {
    MemorySegment s = MemorySegment.ofArray(new long[11]);
    s.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, p.batch());
    s.set(java.lang.foreign.ValueLayout.JAVA_INT, 4, p.l());
    s.set(java.lang.foreign.ValueLayout.JAVA_INT, 8, p.s());
    s.set(java.lang.foreign.ValueLayout.JAVA_INT, 12, p.e());
    s.set(java.lang.foreign.ValueLayout.JAVA_INT, 16, p.ev());
    s.set(java.lang.foreign.ValueLayout.JAVA_DOUBLE, 24, p.scale());
    s.set(java.lang.foreign.ValueLayout.JAVA_INT, 32, p.causal() ? 1 : 0);
    s.set(java.lang.foreign.ValueLayout.JAVA_INT, 36, p.window());
    s.set(java.lang.foreign.ValueLayout.JAVA_DOUBLE, 40, p.dropoutP());
    s.set(java.lang.foreign.ValueLayout.JAVA_LONG, 48, p.dropSeed());
    if (p.mask() != null) {
      Mask m = p.mask();
      int[] base = m.base();
      long dev = bases.get(4L * Math.max(1, base.length));
      ctx.makeCurrent();
      // ordered on the stream after the kernels that may still read the previous bases, without waiting for them
      uploads.put(dev, base);
      // the bases index the storage from its start, offset included, as on the CPU
      s.set(java.lang.foreign.ValueLayout.JAVA_LONG, 56, m.data().storage().memory().address());
      s.set(java.lang.foreign.ValueLayout.JAVA_LONG, 64, dev);
      s.set(java.lang.foreign.ValueLayout.JAVA_INT, 72, m.si());
      s.set(java.lang.foreign.ValueLayout.JAVA_INT, 76, m.sj());
    }
    return s.asSlice(0, 80);
  }

  @Override
  public void forward(Problem p, View q, View k, View v, View out, double[] lse) {
    if (p.batch() == 0 || p.l() == 0) return;
    long lseDev = scratch.get(8L * p.batch() * p.l());
    launchForward(p, q, k, v, out, lseDev);
    ctx.driver().memcpyDtoHSync(MemorySegment.ofArray(lse), lseDev, 8L * p.batch() * p.l());
  }

  /** fwd_*: one block per (query row, batch element), the row's logsumexp into the device address {@code lseDev}. */
  private void launchForward(Problem p, View q, View k, View v, View out, long lseDev) {
    int shared = 8 * (p.e() + p.ev() + CHUNK + THREADS);
    cache.launch3(fn("fwd", q.dtype()), p.l(), p.batch(), THREADS, shared, KernelArgs.begin().bytes(problem(p), 8)
        .ptr(KernelArgs.address(q)).ptr(KernelArgs.address(k)).ptr(KernelArgs.address(v)).ptr(KernelArgs.address(out))
        .ptr(lseDev));
  }

  @Override
  public void backward(Problem p, View q, View k, View v, View out, double[] lse, View dout, View dq, View dk,
      View dv, double[] dmask) {
    if (p.batch() == 0 || p.l() == 0 || p.s() == 0) return;
    long rowsBytes = 8L * p.batch() * p.l();
    long maskBytes = dmask == null ? 0 : 8L * dmask.length;
    long base = scratch.get(2 * rowsBytes + maskBytes);
    long lseDev = base;
    long dDev = base + rowsBytes;
    long dmaskDev = dmask == null ? 0 : base + 2 * rowsBytes;
    ctx.makeCurrent();
    ctx.driver().memcpyHtoDSync(lseDev, MemorySegment.ofArray(lse), rowsBytes);
    if (dmask != null) ctx.driver().memcpyHtoDSync(dmaskDev, MemorySegment.ofArray(dmask), maskBytes);
    launchBackward(p, q, k, v, out, lseDev, dout, dq, dk, dv, dDev, dmaskDev);
    if (dmask != null) ctx.driver().memcpyDtoHSync(MemorySegment.ofArray(dmask), dmaskDev, maskBytes);
  }

  /**
   * bwd_q_* (one block per query row: dq, the rows' D = dO . O into {@code dDev}, the mask's gradient into
   * {@code dmaskDev} when not 0) then bwd_kv_* (one block per key row: dk, dv), the logsumexps read from
   * {@code lseDev}.
   */
  private void launchBackward(Problem p, View q, View k, View v, View out, long lseDev, View dout, View dq, View dk,
      View dv, long dDev, long dmaskDev) {
    MemorySegment prob = problem(p);
    int sharedQ = 8 * (2 * p.e() + p.ev() + CHUNK + THREADS);
    cache.launch3(fn("bwd_q", q.dtype()), p.l(), p.batch(), THREADS, sharedQ, KernelArgs.begin().bytes(prob, 8)
        .ptr(KernelArgs.address(q)).ptr(KernelArgs.address(k)).ptr(KernelArgs.address(v))
        .ptr(KernelArgs.address(out)).ptr(lseDev).ptr(KernelArgs.address(dout)).ptr(KernelArgs.address(dq)).ptr(dDev)
        .ptr(dmaskDev));
    int sharedKv = 8 * (2 * p.e() + 2 * p.ev() + 2 * CHUNK);
    cache.launch3(fn("bwd_kv", q.dtype()), p.s(), p.batch(), THREADS, sharedKv, KernelArgs.begin().bytes(prob, 8)
        .ptr(KernelArgs.address(q)).ptr(KernelArgs.address(k)).ptr(KernelArgs.address(v)).ptr(lseDev)
        .ptr(KernelArgs.address(dout)).ptr(dDev).ptr(KernelArgs.address(dk)).ptr(KernelArgs.address(dv)));
  }

  /** The forward writing the rows' logsumexps straight into the device view {@code lse}: nothing comes back. */
  @Override
  public void forwardInto(Problem p, View q, View k, View v, View out, View lse) {
    AttentionKernels.requireF64(lse, (long) p.batch() * p.l(), "forwardInto", "lse");
    if (p.batch() == 0 || p.l() == 0) return;
    launchForward(p, q, k, v, out, KernelArgs.address(lse));
  }

  /**
   * The backward reading the logsumexps from the device view {@code lse} and adding the mask's gradient into the
   * device view {@code dmask} (its data's offset taken off the pointer, as the bases include it): no upload, no copy
   * back.
   */
  @Override
  public void backwardFrom(Problem p, View q, View k, View v, View out, View lse, View dout, View dq, View dk,
      View dv, View dmask) {
    AttentionKernels.requireF64(lse, (long) p.batch() * p.l(), "backwardFrom", "lse");
    long dmaskDev = 0;
    if (dmask != null) {
      if (p.mask() == null) {
        throw new IllegalArgumentException("scaled_dot_product_attention: backwardFrom got a mask gradient view "
            + java.util.Arrays.toString(dmask.shapeRef()) + " for a problem without a mask");
      }
      AttentionKernels.requireF64(dmask, p.mask().data().numel(), "backwardFrom", "dmask");
      dmaskDev = KernelArgs.address(dmask) - 8L * p.mask().data().offset();
    }
    if (p.batch() == 0 || p.l() == 0 || p.s() == 0) return;
    long dDev = scratch.get(8L * p.batch() * p.l());
    launchBackward(p, q, k, v, out, KernelArgs.address(lse), dout, dq, dk, dv, dDev, dmaskDev);
  }

  @Override
  public void bandMask(Problem p, View out) {
    long n = (long) p.l() * p.s();
    if (n == 0) return;
    cache.launch1d(cache.function("attention", SOURCE, "band_mask"), n, KernelArgs.begin().bytes(problem(p), 8)
        .ptr(KernelArgs.address(out)));
  }

  @Override
  public void dropoutKeep(Problem p, View out) {
    long n = (long) p.batch() * p.l() * p.s();
    if (n == 0) return;
    cache.launch1d(fn("dropout_keep", out.dtype()), n, KernelArgs.begin().bytes(problem(p), 8)
        .ptr(KernelArgs.address(out)));
  }
}
