package dev.ember.cuda.kernels;

import dev.ember.backend.NormalizationKernels;
import dev.ember.backend.View;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.runtime.Workspace;
import dev.ember.tensor.DType;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Batch, layer, group and RMS normalization on the GPU. The view methods ({@link #batchNormalizeInto},
 * {@link #rowNormalizeInto}, {@link #groupNormalizeInto}, {@link #channelBackwardFrom}, {@link #rowBackwardFrom}),
 * which the ops call on a device, keep everything there: statistics in F64 device tensors, the weights, biases and
 * running statistics read and written where they are, no host copy and no wait. The double-array methods (the
 * family's older contract, still there for other callers) upload their few per-row or per-channel numbers
 * (asynchronously, from a pinned ring: {@link PinnedUploads}) and their statistics come back in one small copy. Statistics take one block per row or channel, accumulated in double in a fixed
 * tree (the same bits every run; close to, not bitwise, the CPU's float-lane sums); the affine passes compute in
 * double as the CPU's do and give its bits. Weight and bias gradients sum over rows in row order, one thread per
 * weight, without atomics.
 */
public final class CudaNormalization implements NormalizationKernels {
  static final String SOURCE = """
      #define GRID_LOOP(i, n) for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < (n); i += (long long) blockDim.x * gridDim.x)
      __device__ double block_sum(double v) {
        __shared__ double sh[256];
        __syncthreads();
        sh[threadIdx.x] = v; __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s]; __syncthreads(); }
        return sh[0];
      }
      // The mean (0 for RMS) and rstd of the m elements at p, in one block, every thread getting them: the sums
      // in double in block_sum's tree. Shared by the double-array and the view kernels, so both give these bits.
      template <typename T> __device__ void row_moments(const T* p, long long m, double eps, int rms, double& mu,
          double& rs) {
        mu = 0;
        if (!rms) {
          double s = 0;
          for (long long i = threadIdx.x; i < m; i += blockDim.x) s += (double) p[i];
          mu = block_sum(s) / m;
        }
        double ss = 0;
        for (long long i = threadIdx.x; i < m; i += blockDim.x) { double c = (double) p[i] - mu; ss += c * c; }
        ss = block_sum(ss);
        rs = 1.0 / sqrt(ss / m + eps);
      }
      // stats[r] = mean, stats[rows + r] = rstd
      template <typename T> __device__ void row_stats(const T* x, double* stats, long long m, double eps, int rms, int rows) {
        double mu, rs;
        row_moments(x + blockIdx.x * m, m, eps, rms, mu, rs);
        if (threadIdx.x == 0) { stats[blockIdx.x] = mu; stats[rows + blockIdx.x] = rs; }
      }
      // Channel ch's mean and biased variance over [n, c, s], in one block, every thread getting them (as row_moments).
      template <typename T> __device__ void channel_moments(const T* x, int n, int c, long long s, int ch, double& mu,
          double& var) {
        double sum = 0;
        for (int b = 0; b < n; b++) { const T* p = x + ((long long) b * c + ch) * s; for (long long i = threadIdx.x; i < s; i += blockDim.x) sum += (double) p[i]; }
        double count = (double) n * s;
        mu = block_sum(sum) / count;
        double ss = 0;
        for (int b = 0; b < n; b++) { const T* p = x + ((long long) b * c + ch) * s; for (long long i = threadIdx.x; i < s; i += blockDim.x) { double v = (double) p[i] - mu; ss += v * v; } }
        var = block_sum(ss) / count;
      }
      // per channel over [n, c, s]: stats[ch] = mean, stats[c + ch] = biased variance
      template <typename T> __device__ void channel_stats(const T* x, double* stats, int n, int c, long long s) {
        int ch = blockIdx.x;
        double mu, var;
        channel_moments(x, n, c, s, ch, mu, var);
        if (threadIdx.x == 0) { stats[ch] = mu; stats[c + ch] = var; }
      }
      template <typename T> __device__ void row_affine(const T* x, const double* mean, const double* rstd, const double* w,
          const double* b, T* out, long long m, long long total) {
        GRID_LOOP(t, total) {
          long long r = t / m, i = t - r * m;
          double v = ((double) x[t] - (mean ? mean[r] : 0.0)) * rstd[r];
          if (w) v *= w[i];
          if (b) v += b[i];
          out[t] = (T) v;
        }
      }
      template <typename T> __device__ void channel_affine(const T* x, const double* scale, const double* shift, T* out,
          long long s, long long total) {
        GRID_LOOP(t, total) { long long bc = t / s; out[t] = x[t] * (T) scale[bc] + (T) shift[bc]; }
      }
      // per channel: sums[ch] = sum g, sums[c + ch] = sum g * xhat
      template <typename T> __device__ void channel_bwd_sums(const T* x, const T* g, const double* mean, const double* rstd,
          double* sums, int n, int c, long long s) {
        int ch = blockIdx.x;
        double sg = 0, sgx = 0, mu = mean[ch], rs = rstd[ch];
        for (int b = 0; b < n; b++) {
          long long o = ((long long) b * c + ch) * s;
          for (long long i = threadIdx.x; i < s; i += blockDim.x) { double gv = (double) g[o + i]; sg += gv; sgx += gv * ((double) x[o + i] - mu) * rs; }
        }
        sg = block_sum(sg);
        sgx = block_sum(sgx);
        if (threadIdx.x == 0) { sums[ch] = sg; sums[c + ch] = sgx; }
      }
      // P: the weight's type, double (uploaded from an array) or T (the parameter tensor itself)
      template <typename T, typename P> __device__ void channel_bwd_gx(const T* x, const T* g, const double* mean, const double* rstd,
          const P* w, const double* sums, T* gx, int c, long long s, double count, int train, long long total) {
        GRID_LOOP(t, total) {
          int ch = (t / s) % c;
          double mu = mean[ch], rs = rstd[ch];
          double wr = (w ? (double) w[ch] : 1.0) * rs;
          double a = train ? sums[ch] / count : 0.0, bb = train ? sums[c + ch] / count : 0.0;
          double xh = ((double) x[t] - mu) * rs;
          gx[t] = (T) (wr * ((double) g[t] - a - xh * bb));
        }
      }
      template <typename T, typename P> __device__ void row_bwd_gx(const T* x, const T* g, const double* mean, const double* rstd,
          const P* w, T* gx, long long m, int groups, int sDiv) {
        long long r = blockIdx.x;
        const T* xp = x + r * m; const T* gp = g + r * m;
        double mu = mean ? mean[r] : 0.0, rs = rstd[r];
        long long wBase = (r % groups) * (m / sDiv);
        double sgh = 0, sghx = 0;
        for (long long i = threadIdx.x; i < m; i += blockDim.x) {
          double gv = (double) gp[i]; double gh = w ? gv * (double) w[wBase + i / sDiv] : gv; double xh = ((double) xp[i] - mu) * rs;
          sgh += gh; sghx += gh * xh;
        }
        sgh = block_sum(sgh);
        sghx = block_sum(sghx);
        double a = mean ? sgh / m : 0.0, bb = sghx / m;
        for (long long i = threadIdx.x; i < m; i += blockDim.x) {
          double gv = (double) gp[i]; double gh = w ? gv * (double) w[wBase + i / sDiv] : gv; double xh = ((double) xp[i] - mu) * rs;
          gx[r * m + i] = (T) (rs * (gh - a - xh * bb));
        }
      }
      // gw[wi] += sum g * xhat, gb[wi] += sum g over the elements that use weight wi, rows in order
      template <typename T> __device__ void row_bwd_weights(const T* x, const T* g, const double* mean, const double* rstd,
          double* gw, double* gb, int rows, long long m, int groups, int sDiv) {
        long long per = m / sDiv;
        GRID_LOOP(wi, (long long) groups * per) {
          int grp = wi / per; long long k = wi - grp * per;
          double sw = 0, sb = 0;
          for (int r = grp; r < rows; r += groups) {
            double mu = mean ? mean[r] : 0.0, rs = rstd[r];
            for (long long i = k * sDiv; i < (k + 1) * sDiv; i++) {
              double gv = (double) g[r * m + i];
              sw += gv * (((double) x[r * m + i] - mu) * rs);
              sb += gv;
            }
          }
          if (gw) gw[wi] += sw;
          if (gb) gb[wi] += sb;
        }
      }
      template <typename T> __device__ void update_running(T* run, long long stride, const double* stat, double momentum, int n) {
        GRID_LOOP(i, n) { T* p = run + i * stride; *p = (T) ((1 - momentum) * (double) *p + momentum * stat[i]); }
      }
      template <typename T> __device__ void renorm_rows(T* wt, long long s0, long long s1, int dim, const long long* rows,
          int count, double maxNorm, double p, int isInf, int* changed) {
        GRID_LOOP(k, count) {
          T* base = wt + rows[k] * s0;
          double norm = 0;
          for (int j = 0; j < dim; j++) { double v = fabs((double) base[j * s1]); norm = isInf ? fmax(norm, v) : norm + pow(v, p); }
          if (!isInf) norm = pow(norm, 1 / p);
          if (norm > maxNorm) {
            double scale = maxNorm / (norm + 1e-7);
            for (int j = 0; j < dim; j++) base[j * s1] = (T) ((double) base[j * s1] * scale);
            *changed = 1;
          }
        }
      }
      // The view path (statistics, weights, biases and running statistics in device memory, nothing through the host).
      // Layer and RMS norm: one block per row, its statistics (row_stats' tree) then its output (row_affine's formula).
      template <typename T> __device__ void row_normalize(const T* x, const T* w, const T* b, T* out, double* mean,
          double* rstd, long long m, double eps, int rms) {
        long long r = blockIdx.x;
        const T* p = x + r * m; T* o = out + r * m;
        double mu, rs;
        row_moments(p, m, eps, rms, mu, rs);
        if (threadIdx.x == 0) { if (mean) mean[r] = mu; rstd[r] = rs; }
        for (long long i = threadIdx.x; i < m; i += blockDim.x) {
          double v = ((double) p[i] - mu) * rs;
          if (w) v *= (double) w[i];
          if (b) v += (double) b[i];
          o[i] = (T) v;
        }
      }
      // Group norm: one block per (image, group) row of m = (c / groups) * s, its statistics then each element scaled
      // and shifted per channel as channel_affine does (scale = rstd * w[ch], shift = b[ch] - mean * scale in double).
      template <typename T> __device__ void group_normalize(const T* x, const T* w, const T* b, T* out, double* mean,
          double* rstd, long long m, int c, int groups, long long s, double eps) {
        long long r = blockIdx.x;
        const T* p = x + r * m; T* o = out + r * m;
        double mu, rs;
        row_moments(p, m, eps, 0, mu, rs);
        if (threadIdx.x == 0) { mean[r] = mu; rstd[r] = rs; }
        int ch0 = (int) (r % groups) * (c / groups);
        for (long long i = threadIdx.x; i < m; i += blockDim.x) {
          int ch = ch0 + (int) (i / s);
          double sc = rs * (w ? (double) w[ch] : 1.0);
          double sh = (b ? (double) b[ch] : 0.0) - mu * sc;
          o[i] = p[i] * (T) sc + (T) sh;
        }
      }
      // Batch norm in training: per channel (one block) channel_stats' mean and biased variance var, then mean[ch],
      // rstd[ch] = 1 / sqrt(var + eps) and, when run_mean is given, update_running's step on the running mean with
      // the mean and on the running variance with var * count / (count - 1).
      template <typename T> __device__ void bn_train_stats(const T* x, double* mean, double* rstd, T* run_mean,
          long long sm, T* run_var, long long sv, int n, int c, long long s, double eps, double momentum) {
        int ch = blockIdx.x;
        double mu, var;
        channel_moments(x, n, c, s, ch, mu, var);
        double count = (double) n * s;
        if (threadIdx.x == 0) {
          mean[ch] = mu;
          rstd[ch] = 1 / sqrt(var + eps);
          if (run_mean) {
            T* pm = run_mean + ch * sm; T* pv = run_var + ch * sv;
            *pm = (T) ((1 - momentum) * (double) *pm + momentum * mu);
            *pv = (T) ((1 - momentum) * (double) *pv + momentum * (var * count / (count - 1)));
          }
        }
      }
      // Batch norm in eval: mean = the running mean, rstd = 1 / sqrt(running var + eps), per channel.
      template <typename T> __device__ void bn_eval_stats(const T* run_mean, long long sm, const T* run_var, long long sv,
          double* mean, double* rstd, int c, double eps) {
        GRID_LOOP(ch, c) { mean[ch] = (double) run_mean[ch * sm]; rstd[ch] = 1 / sqrt((double) run_var[ch * sv] + eps); }
      }
      // out = x * scale + shift per channel of [n, c, s], scale = rstd * w, shift = b - mean * scale (channel_affine's).
      template <typename T> __device__ void bn_affine(const T* x, const double* mean, const double* rstd, const T* w,
          const T* b, T* out, int c, long long s, long long total) {
        GRID_LOOP(t, total) {
          int ch = (int) ((t / s) % c);
          double sc = rstd[ch] * (w ? (double) w[ch] : 1.0);
          double sh = (b ? (double) b[ch] : 0.0) - mean[ch] * sc;
          out[t] = x[t] * (T) sc + (T) sh;
        }
      }
      #define BOTH(T, S) \\
      extern "C" __global__ void row_stats_##S(const T* x, double* st, long long m, double eps, int rms, int rows) { row_stats<T>(x, st, m, eps, rms, rows); } \\
      extern "C" __global__ void channel_stats_##S(const T* x, double* st, int n, int c, long long s) { channel_stats<T>(x, st, n, c, s); } \\
      extern "C" __global__ void row_affine_##S(const T* x, const double* mean, const double* rstd, const double* w, const double* b, T* out, long long m, long long total) { row_affine<T>(x, mean, rstd, w, b, out, m, total); } \\
      extern "C" __global__ void channel_affine_##S(const T* x, const double* sc, const double* sh, T* out, long long s, long long total) { channel_affine<T>(x, sc, sh, out, s, total); } \\
      extern "C" __global__ void channel_bwd_sums_##S(const T* x, const T* g, const double* mean, const double* rstd, double* sums, int n, int c, long long s) { channel_bwd_sums<T>(x, g, mean, rstd, sums, n, c, s); } \\
      extern "C" __global__ void channel_bwd_gx_##S(const T* x, const T* g, const double* mean, const double* rstd, const double* w, const double* sums, T* gx, int c, long long s, double count, int train, long long total) { channel_bwd_gx<T, double>(x, g, mean, rstd, w, sums, gx, c, s, count, train, total); } \\
      extern "C" __global__ void channel_bwd_gx_w_##S(const T* x, const T* g, const double* mean, const double* rstd, const T* w, const double* sums, T* gx, int c, long long s, double count, int train, long long total) { channel_bwd_gx<T, T>(x, g, mean, rstd, w, sums, gx, c, s, count, train, total); } \\
      extern "C" __global__ void row_bwd_gx_##S(const T* x, const T* g, const double* mean, const double* rstd, const double* w, T* gx, long long m, int groups, int sDiv) { row_bwd_gx<T, double>(x, g, mean, rstd, w, gx, m, groups, sDiv); } \\
      extern "C" __global__ void row_bwd_gx_w_##S(const T* x, const T* g, const double* mean, const double* rstd, const T* w, T* gx, long long m, int groups, int sDiv) { row_bwd_gx<T, T>(x, g, mean, rstd, w, gx, m, groups, sDiv); } \\
      extern "C" __global__ void row_normalize_##S(const T* x, const T* w, const T* b, T* out, double* mean, double* rstd, long long m, double eps, int rms) { row_normalize<T>(x, w, b, out, mean, rstd, m, eps, rms); } \\
      extern "C" __global__ void group_normalize_##S(const T* x, const T* w, const T* b, T* out, double* mean, double* rstd, long long m, int c, int groups, long long s, double eps) { group_normalize<T>(x, w, b, out, mean, rstd, m, c, groups, s, eps); } \\
      extern "C" __global__ void bn_train_stats_##S(const T* x, double* mean, double* rstd, T* rm, long long sm, T* rv, long long sv, int n, int c, long long s, double eps, double momentum) { bn_train_stats<T>(x, mean, rstd, rm, sm, rv, sv, n, c, s, eps, momentum); } \\
      extern "C" __global__ void bn_eval_stats_##S(const T* rm, long long sm, const T* rv, long long sv, double* mean, double* rstd, int c, double eps) { bn_eval_stats<T>(rm, sm, rv, sv, mean, rstd, c, eps); } \\
      extern "C" __global__ void bn_affine_##S(const T* x, const double* mean, const double* rstd, const T* w, const T* b, T* out, int c, long long s, long long total) { bn_affine<T>(x, mean, rstd, w, b, out, c, s, total); } \\
      extern "C" __global__ void row_bwd_weights_##S(const T* x, const T* g, const double* mean, const double* rstd, double* gw, double* gb, int rows, long long m, int groups, int sDiv) { row_bwd_weights<T>(x, g, mean, rstd, gw, gb, rows, m, groups, sDiv); } \\
      extern "C" __global__ void update_running_##S(T* run, long long stride, const double* stat, double mom, int n) { update_running<T>(run, stride, stat, mom, n); } \\
      extern "C" __global__ void renorm_rows_##S(T* wt, long long s0, long long s1, int dim, const long long* rows, int count, double maxNorm, double p, int isInf, int* changed) { renorm_rows<T>(wt, s0, s1, dim, rows, count, maxNorm, p, isInf, changed); }
      BOTH(float, f32)
      BOTH(double, f64)
      """;
  private static final int THREADS = 256;

  private final CudaContext ctx;
  private final KernelCache cache;
  private final Workspace upload;
  private final PinnedUploads uploads;
  private final Workspace results;

  public CudaNormalization(CudaContext ctx, KernelCache cache) {
    this.ctx = ctx;
    this.cache = cache;
    this.upload = new Workspace(ctx);
    this.uploads = PinnedUploads.of(ctx);
    this.results = new Workspace(ctx);
  }

  private long fn(String name, DType t) {
    return cache.function("normalization", SOURCE, name + (t == DType.F32 ? "_f32" : "_f64"));
  }

  /** Uploads the non-null arrays one after another; returns each one's device address (0 for null). */
  private long[] put(double[]... arrays) {
    long bytes = 0;
    for (double[] a : arrays) bytes += a == null ? 0 : 8L * a.length;
    long base = upload.get(Math.max(8, bytes));
    ctx.makeCurrent();
    long[] at = new long[arrays.length];
    long off = 0;
    for (int i = 0; i < arrays.length; i++) {
      double[] a = arrays[i];
      if (a == null || a.length == 0) {
        at[i] = a == null ? 0 : base;
        continue;
      }
      at[i] = base + off;
      uploads.put(at[i], a); // no host wait: ordered on the stream after the kernels that read the buffer before
      off += 8L * a.length;
    }
    return at;
  }

  private double[] fetch(long addr, int count) {
    double[] out = new double[count];
    if (count > 0) {
      ctx.makeCurrent();
      ctx.driver().memcpyDtoHSync(MemorySegment.ofArray(out), addr, 8L * count);
    }
    return out;
  }

  @Override
  public double[][] rowStats(View x, int rows, int m, double eps, boolean rms) {
    if (rows == 0) return new double[][] {rms ? null : new double[0], new double[0]};
    long st = results.get(16L * rows);
    cache.launch(fn("row_stats", x.dtype()), rows, 1, THREADS, 0, KernelArgs.begin().ptr(KernelArgs.address(x)).ptr(st)
        .i64(m).f64(eps).i32(rms ? 1 : 0).i32(rows));
    double[] both = fetch(st, 2 * rows);
    return new double[][] {rms ? null : Arrays.copyOf(both, rows), Arrays.copyOfRange(both, rows, 2 * rows)};
  }

  @Override
  public double[][] channelStats(View x, int n, int c, int s) {
    if (c == 0) return new double[][] {new double[0], new double[0]};
    long st = results.get(16L * c);
    cache.launch(fn("channel_stats", x.dtype()), c, 1, THREADS, 0, KernelArgs.begin().ptr(KernelArgs.address(x))
        .ptr(st).i32(n).i32(c).i64(s));
    double[] both = fetch(st, 2 * c);
    return new double[][] {Arrays.copyOf(both, c), Arrays.copyOfRange(both, c, 2 * c)};
  }

  @Override
  public void rowAffine(View x, double[] mean, double[] rstd, double[] w, double[] b, View out, int rows, int m) {
    long total = (long) rows * m;
    if (total == 0) return;
    long[] a = put(mean, rstd, w, b);
    cache.launch1d(fn("row_affine", x.dtype()), total, KernelArgs.begin().ptr(KernelArgs.address(x)).ptr(a[0])
        .ptr(a[1]).ptr(a[2]).ptr(a[3]).ptr(KernelArgs.address(out)).i64(m).i64(total));
  }

  @Override
  public void channelAffine(View x, double[] scale, double[] shift, View out, int n, int c, int s) {
    long total = (long) n * c * s;
    if (total == 0) return;
    long[] a = put(scale, shift);
    cache.launch1d(fn("channel_affine", x.dtype()), total, KernelArgs.begin().ptr(KernelArgs.address(x)).ptr(a[0])
        .ptr(a[1]).ptr(KernelArgs.address(out)).i64(s).i64(total));
  }

  @Override
  public void channelBackward(View x, View g, double[] mean, double[] rstd, double[] w, int n, int c, int s,
      boolean train, View gx, View gw, View gb) {
    if (c == 0) return;
    long[] a = put(mean, rstd, w);
    long sums = results.get(16L * c);
    cache.launch(fn("channel_bwd_sums", x.dtype()), c, 1, THREADS, 0, KernelArgs.begin().ptr(KernelArgs.address(x))
        .ptr(KernelArgs.address(g)).ptr(a[0]).ptr(a[1]).ptr(sums).i32(n).i32(c).i64(s));
    if (gw != null || gb != null) {
      ctx.makeCurrent();
      if (gb != null) ctx.driver().memcpyDtoD(KernelArgs.address(gb), sums, 8L * c, ctx.stream());
      if (gw != null) ctx.driver().memcpyDtoD(KernelArgs.address(gw), sums + 8L * c, 8L * c, ctx.stream());
    }
    if (gx == null) return;
    long total = (long) n * c * s;
    cache.launch1d(fn("channel_bwd_gx", x.dtype()), total, KernelArgs.begin().ptr(KernelArgs.address(x))
        .ptr(KernelArgs.address(g)).ptr(a[0]).ptr(a[1]).ptr(a[2]).ptr(sums).ptr(KernelArgs.address(gx)).i32(c).i64(s)
        .f64((double) n * s).i32(train ? 1 : 0).i64(total));
  }

  @Override
  public void rowBackward(View x, View g, double[] mean, double[] rstd, double[] w, int rows, int m, int groups,
      int sDiv, View gx, View gw, View gb) {
    if (rows == 0 || m == 0) return;
    long[] a = put(mean, rstd, w);
    if (gx != null) {
      cache.launch(fn("row_bwd_gx", x.dtype()), rows, 1, THREADS, 0, KernelArgs.begin().ptr(KernelArgs.address(x))
          .ptr(KernelArgs.address(g)).ptr(a[0]).ptr(a[1]).ptr(a[2]).ptr(KernelArgs.address(gx)).i64(m).i32(groups)
          .i32(sDiv));
    }
    if (gw != null || gb != null) {
      long weights = (long) groups * (m / sDiv);
      cache.launch1d(fn("row_bwd_weights", x.dtype()), weights, KernelArgs.begin().ptr(KernelArgs.address(x))
          .ptr(KernelArgs.address(g)).ptr(a[0]).ptr(a[1]).ptr(gw == null ? 0 : KernelArgs.address(gw))
          .ptr(gb == null ? 0 : KernelArgs.address(gb)).i32(rows).i64(m).i32(groups).i32(sDiv));
    }
  }

  @Override
  public void updateRunning(View running, double[] stat, double momentum) {
    if (stat.length == 0) return;
    long[] a = put(stat);
    cache.launch1d(fn("update_running", running.dtype()), stat.length, KernelArgs.begin()
        .ptr(KernelArgs.address(running)).i64(running.stridesRef()[0]).ptr(a[0]).f64(momentum).i32(stat.length));
  }

  private static long addr(View v) {
    return v == null ? 0 : KernelArgs.address(v);
  }

  @Override
  public void rowNormalizeInto(View x, int rows, int m, double eps, boolean rms, View w, View b, View out, View mean,
      View rstd) {
    if (rows == 0) return;
    cache.launch(fn("row_normalize", x.dtype()), rows, 1, THREADS, 0, KernelArgs.begin().ptr(addr(x)).ptr(addr(w))
        .ptr(addr(b)).ptr(addr(out)).ptr(rms ? 0 : addr(mean)).ptr(addr(rstd)).i64(m).f64(eps).i32(rms ? 1 : 0));
  }

  @Override
  public void groupNormalizeInto(View x, int n, int c, int s, int groups, double eps, View w, View b, View out,
      View mean, View rstd) {
    int rows = n * groups;
    if (rows == 0) return;
    cache.launch(fn("group_normalize", x.dtype()), rows, 1, THREADS, 0, KernelArgs.begin().ptr(addr(x)).ptr(addr(w))
        .ptr(addr(b)).ptr(addr(out)).ptr(addr(mean)).ptr(addr(rstd)).i64((long) (c / groups) * s).i32(c).i32(groups)
        .i64(s).f64(eps));
  }

  @Override
  public void batchNormalizeInto(View x, int n, int c, int s, boolean train, double eps, double momentum,
      View runningMean, View runningVar, View w, View b, View out, View mean, View rstd) {
    if (c == 0) return;
    long sm = runningMean == null ? 0 : runningMean.stridesRef()[0];
    long sv = runningVar == null ? 0 : runningVar.stridesRef()[0];
    if (train) {
      cache.launch(fn("bn_train_stats", x.dtype()), c, 1, THREADS, 0, KernelArgs.begin().ptr(addr(x)).ptr(addr(mean))
          .ptr(addr(rstd)).ptr(addr(runningMean)).i64(sm).ptr(addr(runningVar)).i64(sv).i32(n).i32(c).i64(s).f64(eps)
          .f64(momentum));
    } else {
      cache.launch1d(fn("bn_eval_stats", x.dtype()), c, KernelArgs.begin().ptr(addr(runningMean)).i64(sm)
          .ptr(addr(runningVar)).i64(sv).ptr(addr(mean)).ptr(addr(rstd)).i32(c).f64(eps));
    }
    long total = (long) n * c * s;
    cache.launch1d(fn("bn_affine", x.dtype()), total, KernelArgs.begin().ptr(addr(x)).ptr(addr(mean)).ptr(addr(rstd))
        .ptr(addr(w)).ptr(addr(b)).ptr(addr(out)).i32(c).i64(s).i64(total));
  }

  @Override
  public void channelBackwardFrom(View x, View g, View mean, View rstd, View w, int n, int c, int s, boolean train,
      View gx, View gw, View gb) {
    if (c == 0) return;
    long sums = results.get(16L * c);
    cache.launch(fn("channel_bwd_sums", x.dtype()), c, 1, THREADS, 0, KernelArgs.begin().ptr(addr(x)).ptr(addr(g))
        .ptr(addr(mean)).ptr(addr(rstd)).ptr(sums).i32(n).i32(c).i64(s));
    if (gw != null || gb != null) {
      ctx.makeCurrent();
      if (gb != null) ctx.driver().memcpyDtoD(addr(gb), sums, 8L * c, ctx.stream());
      if (gw != null) ctx.driver().memcpyDtoD(addr(gw), sums + 8L * c, 8L * c, ctx.stream());
    }
    if (gx == null) return;
    long total = (long) n * c * s;
    cache.launch1d(fn("channel_bwd_gx_w", x.dtype()), total, KernelArgs.begin().ptr(addr(x)).ptr(addr(g))
        .ptr(addr(mean)).ptr(addr(rstd)).ptr(addr(w)).ptr(sums).ptr(addr(gx)).i32(c).i64(s).f64((double) n * s)
        .i32(train ? 1 : 0).i64(total));
  }

  @Override
  public void rowBackwardFrom(View x, View g, View mean, View rstd, View w, int rows, int m, int groups, int sDiv,
      View gx, View gw, View gb) {
    if (rows == 0 || m == 0) return;
    if (gx != null) {
      cache.launch(fn("row_bwd_gx_w", x.dtype()), rows, 1, THREADS, 0, KernelArgs.begin().ptr(addr(x)).ptr(addr(g))
          .ptr(addr(mean)).ptr(addr(rstd)).ptr(addr(w)).ptr(addr(gx)).i64(m).i32(groups).i32(sDiv));
    }
    if (gw != null || gb != null) {
      long weights = (long) groups * (m / sDiv);
      cache.launch1d(fn("row_bwd_weights", x.dtype()), weights, KernelArgs.begin().ptr(addr(x)).ptr(addr(g))
          .ptr(addr(mean)).ptr(addr(rstd)).ptr(addr(gw)).ptr(addr(gb)).i32(rows).i64(m).i32(groups).i32(sDiv));
    }
  }

  /** Every kernel name {@code SOURCE} defines, for both dtypes: what the Java side launches. */
  static java.util.List<String> kernelNames() {
    java.util.List<String> names = new java.util.ArrayList<>();
    for (String k : new String[] {"row_stats", "channel_stats", "row_affine", "channel_affine", "channel_bwd_sums",
        "channel_bwd_gx", "channel_bwd_gx_w", "row_bwd_gx", "row_bwd_gx_w", "row_bwd_weights", "update_running",
        "renorm_rows", "row_normalize", "group_normalize", "bn_train_stats", "bn_eval_stats", "bn_affine"}) {
      names.add(k + "_f32");
      names.add(k + "_f64");
    }
    return names;
  }

  @Override
  public boolean renormRows(View weight, long[] rows, double maxNorm, double p) {
    long[] distinct = Arrays.stream(rows).distinct().toArray();
    if (distinct.length == 0) return false;
    long base = upload.get(8L * distinct.length);
    long flag = results.get(8);
    ctx.makeCurrent();
    uploads.put(base, distinct);
    ctx.driver().memsetD32(flag, 0, 1, ctx.stream());
    boolean inf = p == Double.POSITIVE_INFINITY;
    cache.launch1d(fn("renorm_rows", weight.dtype()), distinct.length, KernelArgs.begin()
        .ptr(KernelArgs.address(weight)).i64(weight.stridesRef()[0]).i64(weight.stridesRef()[1])
        .i32(weight.shapeRef()[1]).ptr(base).i32(distinct.length).f64(maxNorm).f64(p).i32(inf ? 1 : 0).ptr(flag));
    int[] changed = new int[1];
    ctx.driver().memcpyDtoHSync(MemorySegment.ofArray(changed), flag, 4);
    return changed[0] != 0;
  }
}
