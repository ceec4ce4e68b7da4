package dev.ember.cuda.kernels;

import dev.ember.backend.OptimizerKernels;
import dev.ember.backend.View;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.tensor.DType;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The fused optimizer updates on the GPU: one kernel per rule, each element's update in one thread, parameters and
 * state read and written once per step. The rules are those of the CPU's {@code ScalarUpdateKernels}, operation for
 * operation in the parameter's dtype: compiled without contraction into fused multiply-adds ({@code --fmad=false},
 * see {@link KernelCache#options}), every {@code +}, {@code *}, {@code /} and {@code sqrt} rounds as the CPU's
 * does, so an update has the CPU's bits. The coefficients arrive in the parameter's dtype, as the CPU's do.
 *
 * <p>The reductions (LAMB's norms, SAM's and gradient clipping's sums) accumulate in double over a fixed grid of
 * {@link #REDUCE_BLOCKS} blocks and combine the block sums in block order: the same bits on every run and every
 * GPU, close to (not bitwise) the CPU's chunked sums.
 */
public final class CudaOptimizer implements OptimizerKernels {
  static final int REDUCE_BLOCKS = 264;
  static final int REDUCE_THREADS = 256;

  static final String SOURCE = """
      #define LD(p) (p)[i]
      template <typename T> __device__ __forceinline__ T jmax(T a, T b) { return a != a ? a : (b != b ? b : (a >= b ? a : b)); }
      template <typename T> __device__ __forceinline__ T jmin(T a, T b) { return a != a ? a : (b != b ? b : (a <= b ? a : b)); }
      template <typename T> __device__ __forceinline__ T jsignum(T a) { return a > (T) 0 ? (T) 1 : (a < (T) 0 ? (T) -1 : a); }
      __device__ __forceinline__ float jsqrt(float a) { return sqrtf(a); }
      __device__ __forceinline__ double jsqrt(double a) { return sqrt(a); }
      __device__ __forceinline__ float jabs(float a) { return fabsf(a); }
      __device__ __forceinline__ double jabs(double a) { return fabs(a); }
      #define LOOP for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) blockDim.x * gridDim.x)

      template <typename T> __device__ void sgd(T* p, const T* g, T lr, T wd, T sign, long long n) {
        LOOP { T x = p[i]; T d = sign * g[i] + wd * x; p[i] = x - lr * d; }
      }
      template <typename T> __device__ void sgd_momentum(T* p, const T* g, T* b, T lr, T wd, T sign, T keep, T add,
          int nesterov, T mom, long long n) {
        LOOP {
          T x = p[i]; T d = sign * g[i] + wd * x; T buf = keep * b[i] + add * d; b[i] = buf;
          T step = nesterov ? d + mom * buf : buf; p[i] = x - lr * step;
        }
      }
      template <typename T> __device__ void adam(T* p, const T* g, T* m, T* v, T* vmax, int plain, T sign, T l2,
          T decay, T b1, T b2, T c1, T c2, T eps, T stepSize, T invBc2Sqrt, long long n) {
        LOOP {
          T x = p[i];
          T gi = plain ? g[i] : sign * g[i] + l2 * x;
          T mi = b1 * m[i] + c1 * gi;
          T vi = b2 * v[i] + (c2 * gi) * gi;
          m[i] = mi; v[i] = vi;
          if (vmax) { vi = jmax(vmax[i], vi); vmax[i] = vi; }
          p[i] = x * decay - (stepSize * mi) / (jsqrt(vi) * invBc2Sqrt + eps);
        }
      }
      template <typename T> __device__ void adamax(T* p, const T* g, T* m, T* u, T sign, T wd, T b1, T b2, T c1,
          T eps, T clr, long long n) {
        LOOP {
          T x = p[i]; T gi = sign * g[i] + wd * x; T mi = b1 * m[i] + c1 * gi;
          T ui = jmax(b2 * u[i], jabs(gi) + eps); m[i] = mi; u[i] = ui; p[i] = x - (clr * mi) / ui;
        }
      }
      template <typename T> __device__ void adadelta(T* p, const T* g, T* s, T* u, T sign, T wd, T rho, T c, T eps,
          T lr, long long n) {
        LOOP {
          T x = p[i]; T gi = sign * g[i] + wd * x; T si = rho * s[i] + (c * gi) * gi; s[i] = si;
          T ui = u[i]; T d = (jsqrt(ui + eps) / jsqrt(si + eps)) * gi;
          u[i] = rho * ui + (c * d) * d; p[i] = x - lr * d;
        }
      }
      template <typename T> __device__ void adagrad(T* p, const T* g, T* s, T sign, T wd, T eps, T clr, long long n) {
        LOOP { T x = p[i]; T gi = sign * g[i] + wd * x; T si = s[i] + gi * gi; s[i] = si; p[i] = x - (clr * gi) / (jsqrt(si) + eps); }
      }
      template <typename T> __device__ void rmsprop(T* p, const T* g, T* s, T* a, T* b, T sign, T wd, T alpha, T c,
          T eps, T mom, T lr, long long n) {
        LOOP {
          T x = p[i]; T gi = sign * g[i] + wd * x; T si = alpha * s[i] + (c * gi) * gi; s[i] = si; T var = si;
          if (a) { T ai = alpha * a[i] + c * gi; a[i] = ai; var = si - ai * ai; }
          T d = jsqrt(var) + eps;
          if (b) { T bi = mom * b[i] + gi / d; b[i] = bi; p[i] = x - lr * bi; } else { p[i] = x - (lr * gi) / d; }
        }
      }
      template <typename T> __device__ void nadam(T* p, const T* g, T* m, T* v, T sign, T wd, T b1, T b2, T c1, T c2,
          T bc2, T eps, T cg, T cm, long long n) {
        LOOP {
          T x = p[i]; T gi = sign * g[i] + wd * x; T mi = b1 * m[i] + c1 * gi; T vi = b2 * v[i] + (c2 * gi) * gi;
          m[i] = mi; v[i] = vi; T denom = jsqrt(vi / bc2) + eps; p[i] = (x - (cg * gi) / denom) - (cm * mi) / denom;
        }
      }
      template <typename T> __device__ void radam(T* p, const T* g, T* m, T* v, T sign, T wd, T b1, T b2, T c1, T c2,
          T eps, T scale, int adaptive, long long n) {
        LOOP {
          T x = p[i]; T gi = sign * g[i] + wd * x; T mi = b1 * m[i] + c1 * gi; T vi = b2 * v[i] + (c2 * gi) * gi;
          m[i] = mi; v[i] = vi; T step = adaptive ? mi / (jsqrt(vi) + eps) : mi; p[i] = x - scale * step;
        }
      }
      template <typename T> __device__ void lion(T* p, const T* g, T* m, T sign, T decay, T lr, T b1, T c1, T b2, T c2,
          long long n) {
        LOOP { T gi = sign * g[i]; T mi = m[i]; p[i] = p[i] * decay - lr * jsignum(b1 * mi + c1 * gi); m[i] = b2 * mi + c2 * gi; }
      }
      template <typename T> __device__ void lamb_apply(T* p, const T* m, const T* v, T bc1, T bc2, T eps, T wd, T scale,
          long long n) {
        LOOP { T x = p[i]; T r = (m[i] / bc1) / (jsqrt(v[i] / bc2) + eps) + wd * x; p[i] = x - scale * r; }
      }
      template <typename T> __device__ void sophia(T* p, const T* g, T* m, const T* h, T decay, T lr, T b1, T sc1,
          T rhoBs, T tiny, long long n) {
        LOOP {
          T mi = b1 * m[i] + sc1 * g[i]; m[i] = mi;
          T ratio = jmin(jabs(mi) / (rhoBs * h[i] + tiny), (T) 1);
          p[i] = p[i] * decay - (lr * jsignum(mi)) * ratio;
        }
      }
      template <typename T> __device__ void sophia_ema(T* h, const T* g, T b2, T c, long long n) {
        LOOP { h[i] = b2 * h[i] + (c * g[i]) * g[i]; }
      }
      template <typename T> __device__ void sam_ascend(T* p, const T* g, T scale, int adaptive, long long n) {
        LOOP { T x = p[i]; p[i] = x + ((adaptive ? x * x : (T) 1) * g[i]) * scale; }
      }

      // Reductions: each block writes k double partials; block order is fixed by the grid.
      __device__ void block_sum(double* out, double v) {
        __shared__ double sh[256];
        sh[threadIdx.x] = v; __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s]; __syncthreads(); }
        if (threadIdx.x == 0) *out = sh[0];
        __syncthreads();
      }
      __device__ void block_max(double* out, double v) {
        __shared__ double sh[256];
        sh[threadIdx.x] = v; __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
          if (threadIdx.x < s) { double o = sh[threadIdx.x + s]; double a = sh[threadIdx.x]; sh[threadIdx.x] = (o > a || o != o) && a == a ? o : a; }
          __syncthreads();
        }
        if (threadIdx.x == 0) *out = sh[0];
        __syncthreads();
      }
      template <typename T> __device__ void lamb_moments(const T* p, const T* g, T* m, T* v, T b1, T b2, T c1, T c2,
          T bc1, T bc2, T eps, T wd, double* partial, long long n) {
        double pp = 0, rr = 0;
        LOOP {
          T gi = g[i]; T mi = b1 * m[i] + c1 * gi; T vi = b2 * v[i] + (c2 * gi) * gi; m[i] = mi; v[i] = vi;
          T x = p[i]; T r = (mi / bc1) / (jsqrt(vi / bc2) + eps) + wd * x;
          pp += (double) x * (double) x; rr += (double) r * (double) r;
        }
        block_sum(partial + 2 * blockIdx.x, pp);
        block_sum(partial + 2 * blockIdx.x + 1, rr);
      }
      template <typename T> __device__ void sam_squares(const T* p, const T* g, int adaptive, double* partial, long long n) {
        double s = 0;
        LOOP { T v = (adaptive ? jabs(p[i]) : (T) 1) * g[i]; s += (double) v * (double) v; }
        block_sum(partial + blockIdx.x, s);
      }
      template <typename T> __device__ void power_sum(const T* x, double pw, double* partial, long long n) {
        double s = 0;
        LOOP { double a = fabs((double) x[i]); s += pw == 2.0 ? a * a : (pw == 1.0 ? a : pow(a, pw)); }
        block_sum(partial + blockIdx.x, s);
      }
      template <typename T> __device__ void abs_max(const T* x, double* partial, long long n) {
        T m = 0;
        LOOP { T a = jabs(x[i]); m = (a > m || a != a) ? a : m; }
        block_max(partial + blockIdx.x, (double) m);
      }
      extern "C" __global__ void combine(const double* partial, int blocks, int k, int isMax, double* out) {
        if (threadIdx.x != 0 || blockIdx.x != 0) return;
        for (int j = 0; j < k; j++) {
          double acc = 0;
          for (int b = 0; b < blocks; b++) {
            double v = partial[b * k + j];
            if (isMax) acc = (v > acc || v != v) && acc == acc ? v : acc; else acc += v;
          }
          out[j] = acc;
        }
      }
      """;

  /** The whole source: the rules and one {@code extern "C"} wrapper per rule and dtype. */
  static final String FULL_SOURCE = SOURCE + instantiations();

  private final CudaContext ctx;
  private final KernelCache cache;
  private final String source = FULL_SOURCE;
  private long scratch; // REDUCE_BLOCKS * 2 partials + 2 results, doubles

  public CudaOptimizer(CudaContext ctx, KernelCache cache) {
    this.ctx = ctx;
    this.cache = cache;
  }

  /** One {@code extern "C"} wrapper per rule and dtype: {@code sgd_f32}, {@code sgd_f64}, ... */
  static String instantiations() {
    String[][] rules = {
        {"sgd", "T* p, const T* g, T lr, T wd, T sign, long long n", "p, g, lr, wd, sign, n"},
        {"sgd_momentum", "T* p, const T* g, T* b, T lr, T wd, T sign, T keep, T add, int nesterov, T mom, long long n",
            "p, g, b, lr, wd, sign, keep, add, nesterov, mom, n"},
        {"adam", "T* p, const T* g, T* m, T* v, T* vmax, int plain, T sign, T l2, T decay, T b1, T b2, T c1, T c2, T eps,"
            + " T stepSize, T invBc2Sqrt, long long n",
            "p, g, m, v, vmax, plain, sign, l2, decay, b1, b2, c1, c2, eps, stepSize, invBc2Sqrt, n"},
        {"adamax", "T* p, const T* g, T* m, T* u, T sign, T wd, T b1, T b2, T c1, T eps, T clr, long long n",
            "p, g, m, u, sign, wd, b1, b2, c1, eps, clr, n"},
        {"adadelta", "T* p, const T* g, T* s, T* u, T sign, T wd, T rho, T c, T eps, T lr, long long n",
            "p, g, s, u, sign, wd, rho, c, eps, lr, n"},
        {"adagrad", "T* p, const T* g, T* s, T sign, T wd, T eps, T clr, long long n", "p, g, s, sign, wd, eps, clr, n"},
        {"rmsprop", "T* p, const T* g, T* s, T* a, T* b, T sign, T wd, T alpha, T c, T eps, T mom, T lr, long long n",
            "p, g, s, a, b, sign, wd, alpha, c, eps, mom, lr, n"},
        {"nadam", "T* p, const T* g, T* m, T* v, T sign, T wd, T b1, T b2, T c1, T c2, T bc2, T eps, T cg, T cm, long long n",
            "p, g, m, v, sign, wd, b1, b2, c1, c2, bc2, eps, cg, cm, n"},
        {"radam", "T* p, const T* g, T* m, T* v, T sign, T wd, T b1, T b2, T c1, T c2, T eps, T scale, int adaptive,"
            + " long long n", "p, g, m, v, sign, wd, b1, b2, c1, c2, eps, scale, adaptive, n"},
        {"lion", "T* p, const T* g, T* m, T sign, T decay, T lr, T b1, T c1, T b2, T c2, long long n",
            "p, g, m, sign, decay, lr, b1, c1, b2, c2, n"},
        {"lamb_apply", "T* p, const T* m, const T* v, T bc1, T bc2, T eps, T wd, T scale, long long n",
            "p, m, v, bc1, bc2, eps, wd, scale, n"},
        {"sophia", "T* p, const T* g, T* m, const T* h, T decay, T lr, T b1, T sc1, T rhoBs, T tiny, long long n",
            "p, g, m, h, decay, lr, b1, sc1, rhoBs, tiny, n"},
        {"sophia_ema", "T* h, const T* g, T b2, T c, long long n", "h, g, b2, c, n"},
        {"sam_ascend", "T* p, const T* g, T scale, int adaptive, long long n", "p, g, scale, adaptive, n"},
        {"lamb_moments", "const T* p, const T* g, T* m, T* v, T b1, T b2, T c1, T c2, T bc1, T bc2, T eps, T wd,"
            + " double* partial, long long n", "p, g, m, v, b1, b2, c1, c2, bc1, bc2, eps, wd, partial, n"},
        {"sam_squares", "const T* p, const T* g, int adaptive, double* partial, long long n", "p, g, adaptive, partial, n"},
        {"power_sum", "const T* x, double pw, double* partial, long long n", "x, pw, partial, n"},
        {"abs_max", "const T* x, double* partial, long long n", "x, partial, n"}};
    StringBuilder sb = new StringBuilder();
    for (String[] r : rules) {
      for (String[] t : new String[][] {{"f32", "float"}, {"f64", "double"}}) {
        sb.append("extern \"C\" __global__ void ").append(r[0]).append('_').append(t[0]).append('(')
            .append(r[1].replace("T*", t[1] + "*").replace("T ", t[1] + " ")).append(") { ").append(r[0]).append('<')
            .append(t[1]).append(">(").append(r[2]).append("); }\n");
      }
    }
    return sb.toString();
  }

  private static boolean f32(View p) {
    if (p.dtype() != DType.F32 && p.dtype() != DType.F64) {
      throw new IllegalArgumentException("optimizer update: parameters must be float32 or float64, got "
          + p.dtype() + " of shape " + Arrays.toString(p.shapeRef()));
    }
    return p.dtype() == DType.F32;
  }

  private long fn(String rule, boolean f32) {
    return cache.function("optimizer", source, rule + (f32 ? "_f32" : "_f64"));
  }

  /** Starts a launch's arguments; coefficients then go in through {@link #c}. */
  private static KernelArgs args() {
    return KernelArgs.begin();
  }

  private static KernelArgs c(KernelArgs a, boolean f32, double v) {
    return f32 ? a.f32((float) v) : a.f64(v);
  }

  private static long ptr(View v) {
    return v == null ? 0L : KernelArgs.address(v);
  }

  private void run(String rule, boolean f32, long n, KernelArgs a) {
    cache.launch1d(fn(rule, f32), n, a.i64(n));
  }

  @Override
  public void sgd(View param, View grad, double lr, double wd, double sign) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad));
    c(c(c(a, f, lr), f, wd), f, sign);
    run("sgd", f, param.numel(), a);
  }

  @Override
  public void sgdMomentum(View param, View grad, View buf, double lr, double wd, double sign, double keep, double add,
      boolean nesterov, double momentum) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).ptr(ptr(buf));
    c(c(c(c(c(a, f, lr), f, wd), f, sign), f, keep), f, add).i32(nesterov ? 1 : 0);
    c(a, f, momentum);
    run("sgd_momentum", f, param.numel(), a);
  }

  @Override
  public void adam(View param, View grad, View m, View v, View vmax, double sign, double l2, double decay, double b1,
      double b2, double eps, double stepSize, double invBc2Sqrt) {
    boolean f = f32(param);
    boolean plain = f && (float) sign == 1f && (float) l2 == 0f;
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).ptr(ptr(m)).ptr(ptr(v)).ptr(ptr(vmax)).i32(plain ? 1 : 0);
    for (double x : new double[] {sign, l2, decay, b1, b2, co(f, 1 - b1), co(f, 1 - b2), eps, stepSize, invBc2Sqrt}) {
      c(a, f, x);
    }
    run("adam", f, param.numel(), a);
  }

  /** A coefficient computed in double and rounded to the dtype, as the CPU's {@code c(p, 1 - b1)}. */
  private static double co(boolean f32, double v) {
    return f32 ? (float) v : v;
  }

  @Override
  public void adamax(View param, View grad, View m, View u, double sign, double wd, double b1, double b2, double eps,
      double clr) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).ptr(ptr(m)).ptr(ptr(u));
    for (double x : new double[] {sign, wd, b1, b2, 1 - b1, eps, clr}) c(a, f, x);
    run("adamax", f, param.numel(), a);
  }

  @Override
  public void adadelta(View param, View grad, View s, View u, double sign, double wd, double rho, double eps,
      double lr) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).ptr(ptr(s)).ptr(ptr(u));
    for (double x : new double[] {sign, wd, rho, 1 - rho, eps, lr}) c(a, f, x);
    run("adadelta", f, param.numel(), a);
  }

  @Override
  public void adagrad(View param, View grad, View s, double sign, double wd, double eps, double clr) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).ptr(ptr(s));
    for (double x : new double[] {sign, wd, eps, clr}) c(a, f, x);
    run("adagrad", f, param.numel(), a);
  }

  @Override
  public void rmsprop(View param, View grad, View s, View a0, View b, double sign, double wd, double alpha, double eps,
      double momentum, double lr) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).ptr(ptr(s)).ptr(ptr(a0)).ptr(ptr(b));
    for (double x : new double[] {sign, wd, alpha, 1 - alpha, eps, momentum, lr}) c(a, f, x);
    run("rmsprop", f, param.numel(), a);
  }

  @Override
  public void nadam(View param, View grad, View m, View v, double sign, double wd, double b1, double b2, double bc2,
      double eps, double cg, double cm) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).ptr(ptr(m)).ptr(ptr(v));
    for (double x : new double[] {sign, wd, b1, b2, 1 - b1, 1 - b2, bc2, eps, cg, cm}) c(a, f, x);
    run("nadam", f, param.numel(), a);
  }

  @Override
  public void radam(View param, View grad, View m, View v, double sign, double wd, double b1, double b2, double eps,
      double scale, boolean adaptive) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).ptr(ptr(m)).ptr(ptr(v));
    for (double x : new double[] {sign, wd, b1, b2, 1 - b1, 1 - b2, eps, scale}) c(a, f, x);
    a.i32(adaptive ? 1 : 0);
    run("radam", f, param.numel(), a);
  }

  @Override
  public void lion(View param, View grad, View m, double sign, double decay, double lr, double b1, double b2) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).ptr(ptr(m));
    for (double x : new double[] {sign, decay, lr, b1, 1 - b1, b2, 1 - b2}) c(a, f, x);
    run("lion", f, param.numel(), a);
  }

  @Override
  public double[] lambMoments(View param, View grad, View m, View v, double b1, double b2, double bc1, double bc2,
      double eps, double wd) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).ptr(ptr(m)).ptr(ptr(v));
    for (double x : new double[] {b1, b2, 1 - b1, 1 - b2, bc1, bc2, eps, wd}) c(a, f, x);
    return reduce("lamb_moments", f, param.numel(), a, 2, false);
  }

  @Override
  public void lambApply(View param, View m, View v, double bc1, double bc2, double eps, double wd, double scale) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(m)).ptr(ptr(v));
    for (double x : new double[] {bc1, bc2, eps, wd, scale}) c(a, f, x);
    run("lamb_apply", f, param.numel(), a);
  }

  @Override
  public void sophia(View param, View grad, View m, View h, double sign, double decay, double lr, double b1,
      double rhoBs) {
    boolean f = f32(param);
    double sc1 = co(f, co(f, 1 - b1) * co(f, sign));
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).ptr(ptr(m)).ptr(ptr(h));
    for (double x : new double[] {decay, lr, b1, sc1, rhoBs, co(f, 1e-15)}) c(a, f, x);
    run("sophia", f, param.numel(), a);
  }

  @Override
  public void sophiaHessian(View h, View grad, double b2) {
    boolean f = f32(h);
    KernelArgs a = args().ptr(ptr(h)).ptr(ptr(grad));
    c(c(a, f, b2), f, 1 - b2);
    run("sophia_ema", f, h.numel(), a);
  }

  @Override
  public double samSquares(View param, View grad, boolean adaptive) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad)).i32(adaptive ? 1 : 0);
    return reduce("sam_squares", f, param.numel(), a, 1, false)[0];
  }

  @Override
  public void samAscend(View param, View grad, double scale, boolean adaptive) {
    boolean f = f32(param);
    KernelArgs a = args().ptr(ptr(param)).ptr(ptr(grad));
    c(a, f, scale).i32(adaptive ? 1 : 0);
    run("sam_ascend", f, param.numel(), a);
  }

  @Override
  public double powerSum(View x, double p) {
    boolean f = f32(x);
    KernelArgs a = args().ptr(ptr(x)).f64(p);
    return reduce("power_sum", f, x.numel(), a, 1, false)[0];
  }

  @Override
  public double absMax(View x) {
    boolean f = f32(x);
    KernelArgs a = args().ptr(ptr(x));
    return reduce("abs_max", f, x.numel(), a, 1, true)[0];
  }

  /**
   * Runs a reduction rule over a fixed grid: every block writes {@code k} partials, {@code combine} adds (or takes
   * the maximum of) them in block order, and the {@code k} results come back to the host.
   */
  private synchronized double[] reduce(String rule, boolean f32, long n, KernelArgs a, int k, boolean max) {
    if (n == 0) return new double[k];
    ctx.makeCurrent();
    if (scratch == 0) scratch = ctx.driver().memAlloc(8L * (REDUCE_BLOCKS * 2 + 2));
    long results = scratch + 8L * REDUCE_BLOCKS * 2;
    a.ptr(scratch).i64(n);
    cache.launch(fn(rule, f32), REDUCE_BLOCKS, 1, REDUCE_THREADS, 0, a);
    long combine = cache.function("optimizer", source, "combine");
    cache.launch(combine, 1, 1, 1, 0, KernelArgs.begin().ptr(scratch).i32(REDUCE_BLOCKS).i32(k).i32(max ? 1 : 0)
        .ptr(results));
    double[] out = new double[k];
    ctx.driver().memcpyDtoHSync(MemorySegment.ofArray(out), results, 8L * k);
    return out;
  }
}
