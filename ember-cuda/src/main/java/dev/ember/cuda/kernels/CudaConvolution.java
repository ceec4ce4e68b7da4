package dev.ember.cuda.kernels;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.ConvolutionKernels;
import dev.ember.backend.SavedColumns;
import dev.ember.backend.View;
import dev.ember.cuda.lib.CublasLt;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.CudaSettings;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.runtime.Workspace;
import dev.ember.tensor.DType;
import java.lang.foreign.MemorySegment;

/**
 * Convolutions on the GPU as GEMMs over column matrices: {@code im2col} writes every image's columns
 * [C * kh * kw, oh * ow] into a workspace, one strided-batched cuBLASLt product per group covers the whole batch,
 * and the input gradient goes back through {@code col2im}, which gathers each input element's contributions in a
 * fixed order (no atomics: the same bits every run). The weight gradient is one batched product into per-image
 * partials, summed over the batch in image order. The transposed convolution is the same two halves swapped.
 * Float32 products run in float32 unless {@link CudaSettings#allowTf32()}.
 */
public final class CudaConvolution implements ConvolutionKernels {
  static final String SOURCE = """
      struct G { int c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow; };
      // cols [n, c*kh*kw, oh*ow] from x [n, c, h, w]
      template <typename T> __device__ void im2col(const T* x, T* cols, G g, long long total) {
        for (long long t = blockIdx.x * (long long) blockDim.x + threadIdx.x; t < total; t += (long long) blockDim.x * gridDim.x) {
          long long r = t;
          int ox = r % g.ow; r /= g.ow; int oy = r % g.oh; r /= g.oh;
          int j = r % g.kw; r /= g.kw; int i = r % g.kh; r /= g.kh; int c = r % g.c; long long n = r / g.c;
          int iy = oy * g.sh - g.ph + i * g.dh, ix = ox * g.sw - g.pw + j * g.dw;
          cols[t] = (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) ? x[((n * g.c + c) * g.h + iy) * (long long) g.w + ix] : (T) 0;
        }
      }
      // dx [n, c, h, w] = the sum of the column entries that read each element, kernel taps in order
      template <typename T> __device__ void col2im(const T* cols, T* dx, G g, long long total) {
        for (long long t = blockIdx.x * (long long) blockDim.x + threadIdx.x; t < total; t += (long long) blockDim.x * gridDim.x) {
          long long r = t;
          int ix = r % g.w; r /= g.w; int iy = r % g.h; r /= g.h; int c = r % g.c; long long n = r / g.c;
          T acc = 0;
          for (int i = 0; i < g.kh; i++) {
            int ty = iy + g.ph - i * g.dh;
            if (ty < 0 || ty % g.sh) continue;
            int oy = ty / g.sh;
            if (oy >= g.oh) continue;
            for (int j = 0; j < g.kw; j++) {
              int tx = ix + g.pw - j * g.dw;
              if (tx < 0 || tx % g.sw) continue;
              int ox = tx / g.sw;
              if (ox >= g.ow) continue;
              acc += cols[((n * g.c + c) * g.kh * g.kw + i * g.kw + j) * (long long) (g.oh * g.ow) + oy * g.ow + ox];
            }
          }
          dx[t] = acc;
        }
      }
      // out [n, o, s] = bias[o]
      template <typename T> __device__ void bias_fill(T* out, const T* bias, int o, long long s, long long total) {
        for (long long t = blockIdx.x * (long long) blockDim.x + threadIdx.x; t < total; t += (long long) blockDim.x * gridDim.x)
          out[t] = bias ? bias[(t / s) % o] : (T) 0;
      }
      // out[e] (+)= sum over b of parts[b * count + e], in b order
      template <typename T> __device__ void sum_batches(const T* parts, T* out, int batches, long long count) {
        for (long long e = blockIdx.x * (long long) blockDim.x + threadIdx.x; e < count; e += (long long) blockDim.x * gridDim.x) {
          T acc = 0;
          for (int b = 0; b < batches; b++) acc += parts[b * count + e];
          out[e] = acc;
        }
      }
      // per channel: the sum over images and positions, each plane in a fixed tree, planes added in double
      template <typename T> __device__ void channel_sums(const T* g, double* out, int n, int c, long long s) {
        __shared__ double sh[256];
        int ch = blockIdx.x;
        double acc = 0;
        for (int img = 0; img < n; img++) {
          const T* p = g + ((long long) img * c + ch) * s;
          for (long long k = threadIdx.x; k < s; k += blockDim.x) acc += (double) p[k];
        }
        sh[threadIdx.x] = acc; __syncthreads();
        for (int st = blockDim.x / 2; st > 0; st >>= 1) { if (threadIdx.x < st) sh[threadIdx.x] += sh[threadIdx.x + st]; __syncthreads(); }
        if (threadIdx.x == 0) out[ch] = sh[0];
      }
      #define BOTH(T, S) \\
      extern "C" __global__ void im2col_##S(const T* x, T* cols, G g, long long total) { im2col<T>(x, cols, g, total); } \\
      extern "C" __global__ void col2im_##S(const T* cols, T* dx, G g, long long total) { col2im<T>(cols, dx, g, total); } \\
      extern "C" __global__ void bias_fill_##S(T* out, const T* bias, int o, long long s, long long total) { bias_fill<T>(out, bias, o, s, total); } \\
      extern "C" __global__ void sum_batches_##S(const T* parts, T* out, int batches, long long count) { sum_batches<T>(parts, out, batches, count); } \\
      extern "C" __global__ void channel_sums_##S(const T* g, double* out, int n, int c, long long s) { channel_sums<T>(g, out, n, c, s); }
      BOTH(float, f32)
      BOTH(double, f64)
      """;

  private final CudaContext ctx;
  private final KernelCache cache;
  private final Workspace cols;
  private final Workspace parts;
  private final Workspace sums;

  public CudaConvolution(CudaContext ctx, KernelCache cache) {
    this.ctx = ctx;
    this.cache = cache;
    this.cols = new Workspace(ctx);
    this.parts = new Workspace(ctx);
    this.sums = new Workspace(ctx);
  }

  /** Nothing is kept: the backward pass rebuilds the column matrices, which costs one cheap kernel here. */
  @Override
  public SavedColumns newSavedColumns() {
    return () -> 0;
  }

  private long fn(String name, DType t) {
    return cache.function("convolution", SOURCE, name + (t == DType.F32 ? "_f32" : "_f64"));
  }

  private static int size(DType t) {
    return t.itemSize();
  }

  /** The geometry struct G for {@code channels} image channels. */
  private static MemorySegment geo(int channels, ConvGeometry g) {
    MemorySegment s = MemorySegment.ofArray(new int[] {channels, g.h(), g.w(), g.kh(), g.kw(), g.sh(), g.sw(), g.ph(),
        g.pw(), g.dh(), g.dw(), g.oh(), g.ow()});
    return s;
  }

  private void im2col(DType t, long x, long colsAddr, int n, int c, ConvGeometry g) {
    long total = (long) n * c * g.kk() * g.cols();
    cache.launch1d(fn("im2col", t), total, KernelArgs.begin().ptr(x).ptr(colsAddr).bytes(geo(c, g), 4).i64(total));
  }

  private void col2im(DType t, long colsAddr, long dx, int n, int c, ConvGeometry g) {
    long total = (long) n * c * g.hw();
    cache.launch1d(fn("col2im", t), total, KernelArgs.begin().ptr(colsAddr).ptr(dx).bytes(geo(c, g), 4).i64(total));
  }

  private static int compute(DType t) {
    if (t == DType.F64) return CublasLt.COMPUTE_64F;
    return CudaSettings.allowTf32() ? CublasLt.COMPUTE_32F_FAST_TF32 : CublasLt.COMPUTE_32F;
  }

  private static int type(DType t) {
    return t == DType.F64 ? CublasLt.R_64F : CublasLt.R_32F;
  }

  private void gemm(DType t, boolean transA, boolean transB, long m, long n, long k, long a, long lda, long strideA,
      long b, long ldb, long strideB, double beta, long c, long ldc, long strideC, int batch) {
    if (m == 0 || n == 0 || batch == 0) return;
    var spec = new CublasLt.MatmulSpec(compute(t), type(t), type(t), transA, transB, m, n, k, lda, ldb, ldc, strideA,
        strideB, strideC, batch, 0);
    ctx.makeCurrent();
    CublasLt.get().matmul(spec, 1, a, b, beta, c, 0, ctx.stream());
  }

  /**
   * Per group: out[n, g] [og, ohw] (+)= w[g] [og, ckk] x cols[n, g] [ckk, ohw] for all images at once; in
   * cuBLAS's column-major terms out^T [ohw, og] = cols^T [ohw, ckk] x w^T [ckk, og].
   */
  private void forwardProduct(DType t, long colsAddr, long w, long out, int n, int cIn, int o, int groups,
      ConvGeometry g, double beta) {
    int cg = cIn / groups;
    int og = o / groups;
    long ckk = (long) cg * g.kk();
    long ohw = g.cols();
    int es = size(t);
    for (int gi = 0; gi < groups; gi++) {
      gemm(t, false, false, ohw, og, ckk, colsAddr + es * gi * ckk * ohw, ohw, (long) cIn * g.kk() * ohw,
          w + es * gi * og * ckk, ckk, 0, beta, out + es * gi * og * ohw, ohw, o * ohw, n);
    }
  }

  /** Per group: dcols[n, g] [ckk, ohw] = w[g]^T [ckk, og] x gOut[n, g] [og, ohw]. */
  private void inputProduct(DType t, long gOut, long w, long dcols, int n, int cIn, int o, int groups,
      ConvGeometry g) {
    int cg = cIn / groups;
    int og = o / groups;
    long ckk = (long) cg * g.kk();
    long ohw = g.cols();
    int es = size(t);
    for (int gi = 0; gi < groups; gi++) {
      // column-major dcols^T [ohw, ckk] = gOut^T [ohw, og] x w [og, ckk]; w row-major [og, ckk] is column-major
      // [ckk, og], used transposed
      gemm(t, false, true, ohw, ckk, og, gOut + es * gi * og * ohw, ohw, (long) o * ohw, w + es * gi * og * ckk, ckk,
          0, 0, dcols + es * gi * ckk * ohw, ohw, (long) cIn * g.kk() * ohw, n);
    }
  }

  /** Per group: dw[g] [og, ckk] = sum over images of gOut[n, g] [og, ohw] x cols[n, g]^T [ohw, ckk]. */
  private void weightProduct(DType t, long gOut, long colsAddr, long dw, int n, int cIn, int o, int groups,
      ConvGeometry g) {
    int cg = cIn / groups;
    int og = o / groups;
    long ckk = (long) cg * g.kk();
    long ohw = g.cols();
    int es = size(t);
    long per = (long) og * ckk;
    long partial = n == 1 ? 0 : parts.get(es * per * n);
    for (int gi = 0; gi < groups; gi++) {
      long target = n == 1 ? dw + es * gi * per : partial;
      // column-major dw^T [ckk, og] = cols [ckk, ohw] (stored column-major [ohw, ckk], transposed) x gOut^T [ohw, og]
      gemm(t, true, false, ckk, og, ohw, colsAddr + es * gi * ckk * ohw, ohw, (long) cIn * g.kk() * ohw,
          gOut + es * gi * og * ohw, ohw, (long) o * ohw, 0, target, ckk, per, n);
      if (n > 1) {
        cache.launch1d(fn("sum_batches", t), per, KernelArgs.begin().ptr(partial).ptr(dw + es * gi * per).i32(n)
            .i64(per));
      }
    }
  }

  private void biasFill(DType t, long out, View bias, int n, int o, long s) {
    long total = (long) n * o * s;
    cache.launch1d(fn("bias_fill", t), total, KernelArgs.begin().ptr(out).ptr(bias == null ? 0 : KernelArgs.address(bias))
        .i32(o).i64(s).i64(total));
  }

  @Override
  public void forward(View x, View w, View bias, int groups, ConvGeometry g, View out, SavedColumns keep) {
    DType t = x.dtype();
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    if (out.numel() == 0) return;
    long colsAddr = cols.get((long) size(t) * n * c * g.kk() * g.cols());
    im2col(t, KernelArgs.address(x), colsAddr, n, c, g);
    long outAddr = KernelArgs.address(out);
    double beta = 0;
    if (bias != null) {
      biasFill(t, outAddr, bias, n, o, g.cols());
      beta = 1;
    }
    forwardProduct(t, colsAddr, KernelArgs.address(w), outAddr, n, c, o, groups, g, beta);
  }

  @Override
  public void backward(View x, View w, View gOut, int groups, ConvGeometry g, View dx, View dw, SavedColumns saved) {
    DType t = x.dtype();
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    if (gOut.numel() == 0 || x.numel() == 0) return;
    long colsAddr = cols.get((long) size(t) * n * c * g.kk() * g.cols());
    if (dw != null) {
      im2col(t, KernelArgs.address(x), colsAddr, n, c, g);
      weightProduct(t, KernelArgs.address(gOut), colsAddr, KernelArgs.address(dw), n, c, o, groups, g);
    }
    if (dx != null) {
      inputProduct(t, KernelArgs.address(gOut), KernelArgs.address(w), colsAddr, n, c, o, groups, g);
      col2im(t, colsAddr, KernelArgs.address(dx), n, c, g);
    }
  }

  /**
   * The transposed convolution is the input gradient of a convolution whose image is the output: x [N, Cin, oh,
   * ow] plays the upstream gradient, w [Cin, O/groups, kh, kw] the weight of a convolution from O to Cin channels.
   */
  @Override
  public void transposedForward(View x, View w, View bias, int groups, ConvGeometry g, View out) {
    DType t = x.dtype();
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int o = out.shapeRef()[1];
    if (out.numel() == 0) return;
    long colsAddr = cols.get((long) size(t) * n * o * g.kk() * g.cols());
    inputProduct(t, KernelArgs.address(x), KernelArgs.address(w), colsAddr, n, o, cin, groups, g);
    col2im(t, colsAddr, KernelArgs.address(out), n, o, g);
    if (bias != null) {
      // out += bias: col2im wrote every element, so add the bias in a second pass over the planes
      long total = (long) n * o * g.hw();
      cache.launch1d(cache.function("convolution_bias", BIAS_ADD, "bias_add_" + (t == DType.F32 ? "f32" : "f64")),
          total, KernelArgs.begin().ptr(KernelArgs.address(out)).ptr(KernelArgs.address(bias)).i32(o)
              .i64(g.hw()).i64(total));
    }
  }

  static final String BIAS_ADD = """
      template <typename T> __device__ void bias_add(T* out, const T* bias, int o, long long s, long long total) {
        for (long long t = blockIdx.x * (long long) blockDim.x + threadIdx.x; t < total; t += (long long) blockDim.x * gridDim.x)
          out[t] += bias[(t / s) % o];
      }
      extern "C" __global__ void bias_add_f32(float* out, const float* b, int o, long long s, long long n) { bias_add<float>(out, b, o, s, n); }
      extern "C" __global__ void bias_add_f64(double* out, const double* b, int o, long long s, long long n) { bias_add<double>(out, b, o, s, n); }
      """;

  @Override
  public void transposedBackward(View x, View w, View gOut, int groups, ConvGeometry g, View dx, View dw) {
    DType t = x.dtype();
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int o = gOut.shapeRef()[1];
    if (gOut.numel() == 0 || x.numel() == 0) return;
    long colsAddr = cols.get((long) size(t) * n * o * g.kk() * g.cols());
    im2col(t, KernelArgs.address(gOut), colsAddr, n, o, g);
    if (dx != null) {
      // dx = the forward convolution of gOut with w seen as [Cin, O/groups, kh, kw]
      forwardProduct(t, colsAddr, KernelArgs.address(w), KernelArgs.address(dx), n, o, cin, groups, g, 0);
    }
    if (dw != null) {
      // dw [Cin, O/groups, kk] = the weight gradient of that convolution, with x as its upstream gradient
      weightProduct(t, KernelArgs.address(x), colsAddr, KernelArgs.address(dw), n, o, cin, groups, g);
    }
  }

  @Override
  public double[] channelSums(View g, int n, int c, int s) {
    double[] out = new double[c];
    if (c == 0) return out;
    long dev = sums.get(8L * c);
    cache.launch(fn("channel_sums", g.dtype()), c, 1, 256, 0, KernelArgs.begin().ptr(KernelArgs.address(g)).ptr(dev)
        .i32(n).i32(c).i64(s));
    ctx.makeCurrent();
    ctx.driver().memcpyDtoHSync(MemorySegment.ofArray(out), dev, 8L * c);
    return out;
  }
}
