package dev.ember.cuda.kernels;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.ConvolutionKernels;
import dev.ember.backend.SavedColumns;
import dev.ember.backend.View;
import dev.ember.cuda.lib.CublasLt;
import dev.ember.cuda.lib.CudaException;
import dev.ember.cuda.lib.Cudnn;
import dev.ember.cuda.lib.Cudnn.Direction;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.CudaSettings;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.runtime.Workspace;
import dev.ember.tensor.DType;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Convolutions on the GPU: through cuDNN where it is installed ({@link CudnnConvolution}: float32, bfloat16 and
 * float16, deterministic algorithms only), and otherwise (float64, shapes or directions cuDNN has no deterministic
 * algorithm for, no cuDNN, or {@link CudaSettings#cudnn()} off) as GEMMs over column matrices: {@code im2col}
 * writes every image's columns [C * kh * kw, oh * ow] into a workspace, one strided-batched cuBLASLt product per
 * group covers the whole batch, and the input gradient goes back through {@code col2im}, which gathers each input
 * element's contributions in a fixed order (no atomics: the same bits every run). The weight gradient is one
 * batched product into per-image partials, summed over the batch in image order. The transposed convolution is the
 * same two halves swapped.
 * Float32 products run in float32 unless {@link CudaSettings#allowTf32()}.
 *
 * <p>BF16/F16 operands ({@link #readsHalf}) go to the tensor cores as they are: {@code im2col} moves their bits,
 * every GEMM reads them with float32 accumulation, the forward product (bias in C, read exactly) and a single
 * image's weight gradient are rounded once as cuBLASLt stores them, and the products that are summed again (the
 * input gradient's columns, the per-image weight-gradient partials) are written in float32, summed in float32 by
 * {@code col2im} / {@code sum_batches} and rounded once (with the transposed convolution's bias added first).
 */
public final class CudaConvolution implements ConvolutionKernels {
  static final String SOURCE = """
      struct G { int c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow; };
      // the 16-bit floats, bit for bit as dev.ember.tensor.HalfFloats (elementwise.cu's ew_widen, ew_to_bf16 and
      // ew_to_f16): widening is exact; narrowing rounds to nearest even, NaN gives BF16 0x7FC0 or F16 sign | 0x7E00
      struct cbf16 { unsigned short bits; };
      struct cf16 { unsigned short bits; };
      __device__ __forceinline__ float cv_widen(float v) { return v; }
      __device__ __forceinline__ double cv_widen(double v) { return v; }
      __device__ __forceinline__ float cv_widen(cbf16 h) { return __uint_as_float(((unsigned int) h.bits) << 16); }
      __device__ __forceinline__ float cv_widen(cf16 h) {
        unsigned int sign = ((unsigned int) h.bits & 0x8000u) << 16;
        unsigned int a = (unsigned int) h.bits & 0x7FFFu;
        if (a >= 0x7C00u) return __uint_as_float(sign | 0x7F800000u | (a > 0x7C00u ? 0x400000u | ((a & 0x3FFu) << 13) : 0u));
        if (a >= 0x400u) return __uint_as_float(sign | ((a << 13) + 0x38000000u));
        float m = (float) a * 5.9604644775390625e-8f;
        return sign ? -m : m;
      }
      template <typename H> __device__ __forceinline__ H cv_narrow(float f);
      template <> __device__ __forceinline__ cbf16 cv_narrow<cbf16>(float f) {
        unsigned int b = __float_as_uint(f);
        cbf16 h;
        if ((b & 0x7FFFFFFFu) > 0x7F800000u) { h.bits = 0x7FC0; return h; }
        h.bits = (unsigned short) ((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
        return h;
      }
      template <> __device__ __forceinline__ cf16 cv_narrow<cf16>(float f) {
        unsigned int b = __float_as_uint(f);
        unsigned int sign = (b >> 16) & 0x8000u;
        unsigned int a = b & 0x7FFFFFFFu;
        cf16 h;
        if (a > 0x7F800000u) { h.bits = (unsigned short) (sign | 0x7E00u); return h; }
        if (a >= 0x477FF000u) { h.bits = (unsigned short) (sign | 0x7C00u); return h; }
        if (a >= 0x38800000u) {
          unsigned int r = a - 0x38000000u;
          h.bits = (unsigned short) (sign | ((r + 0xFFFu + ((r >> 13) & 1u)) >> 13));
          return h;
        }
        if (a <= 0x33000000u) { h.bits = (unsigned short) sign; return h; }
        unsigned int m = (a & 0x7FFFFFu) | 0x800000u;
        unsigned int s = 126u - (a >> 23);
        h.bits = (unsigned short) (sign | ((m + (1u << (s - 1)) - 1u + ((m >> s) & 1u)) >> s));
        return h;
      }
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
      // The sum, in A, of the column entries that read element t of dx [n, c, h, w], kernel taps in order; c is
      // set to t's channel.
      template <typename A, typename T> __device__ A col2im_sum(const T* cols, G g, long long t, int& c) {
        long long r = t;
        int ix = r % g.w; r /= g.w; int iy = r % g.h; r /= g.h; c = r % g.c; long long n = r / g.c;
        A acc = 0;
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
        return acc;
      }
      // dx [n, c, h, w] = the sum of the column entries that read each element, kernel taps in order
      template <typename T> __device__ void col2im(const T* cols, T* dx, G g, long long total) {
        for (long long t = blockIdx.x * (long long) blockDim.x + threadIdx.x; t < total; t += (long long) blockDim.x * gridDim.x) {
          int c;
          dx[t] = col2im_sum<T>(cols, g, t, c);
        }
      }
      // col2im of float32 columns into a 16-bit dx, summed in float32 in col2im's order, plus bias[c] (null for
      // none; the transposed convolution's), rounded once
      template <typename H> __device__ void col2im_round(const float* cols, H* dx, const H* bias, G g, long long total) {
        for (long long t = blockIdx.x * (long long) blockDim.x + threadIdx.x; t < total; t += (long long) blockDim.x * gridDim.x) {
          int c;
          float acc = col2im_sum<float>(cols, g, t, c);
          if (bias) acc += cv_widen(bias[c]);
          dx[t] = cv_narrow<H>(acc);
        }
      }
      // out[e] = the 16-bit rounding of the float32 sum over b of parts[b * count + e], in b order
      template <typename H> __device__ void sum_batches_round(const float* parts, H* out, int batches, long long count) {
        for (long long e = blockIdx.x * (long long) blockDim.x + threadIdx.x; e < count; e += (long long) blockDim.x * gridDim.x) {
          float acc = 0;
          for (int b = 0; b < batches; b++) acc += parts[b * count + e];
          out[e] = cv_narrow<H>(acc);
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
          for (long long k = threadIdx.x; k < s; k += blockDim.x) acc += (double) cv_widen(p[k]);
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
      #define HALF(H, S) \\
      extern "C" __global__ void col2im_##S(const float* cols, H* dx, const H* bias, G g, long long total) { col2im_round<H>(cols, dx, bias, g, total); } \\
      extern "C" __global__ void sum_batches_##S(const float* parts, H* out, int batches, long long count) { sum_batches_round<H>(parts, out, batches, count); } \\
      extern "C" __global__ void channel_sums_##S(const H* g, double* out, int n, int c, long long s) { channel_sums<H>(g, out, n, c, s); }
      HALF(cbf16, bf16)
      HALF(cf16, f16)
      // the 16-bit moves: the columns and the bias fill of a half forward product's C
      extern "C" __global__ void im2col_u16(const unsigned short* x, unsigned short* cols, G g, long long total) { im2col<unsigned short>(x, cols, g, total); }
      extern "C" __global__ void bias_fill_u16(unsigned short* out, const unsigned short* bias, int o, long long s, long long total) { bias_fill<unsigned short>(out, bias, o, s, total); }
      // dst[b * ds + e] = src[b * ss + e] for e < per: a half GEMM's operand moved to (or back from) a 256-byte aligned
      // copy with the same layout
      template <typename T> __device__ void restride(const T* src, long long ss, T* dst, long long ds, long long per, long long total) {
        for (long long t = blockIdx.x * (long long) blockDim.x + threadIdx.x; t < total; t += (long long) blockDim.x * gridDim.x) {
          long long b = t / per, e = t - b * per;
          dst[b * ds + e] = src[b * ss + e];
        }
      }
      extern "C" __global__ void restride_u16(const unsigned short* src, long long ss, unsigned short* dst, long long ds, long long per, long long total) { restride<unsigned short>(src, ss, dst, ds, per, total); }
      extern "C" __global__ void restride_u32(const unsigned int* src, long long ss, unsigned int* dst, long long ds, long long per, long long total) { restride<unsigned int>(src, ss, dst, ds, per, total); }
      """;

  private final CudaContext ctx;
  private final KernelCache cache;
  private final Workspace cols;
  private final Workspace parts;
  private final Workspace sums;
  private final Workspace stageA;
  private final Workspace stageB;
  private final Workspace stageC;

  /** cuDNN on this context once tried: null when absent or switched off ({@link #cudnnState} says why). */
  private CudnnConvolution cudnn;
  private String cudnnState;
  private boolean cudnnTried;

  public CudaConvolution(CudaContext ctx, KernelCache cache) {
    this.ctx = ctx;
    this.cache = cache;
    this.cols = new Workspace(ctx);
    this.parts = new Workspace(ctx);
    this.sums = new Workspace(ctx);
    this.stageA = new Workspace(ctx);
    this.stageB = new Workspace(ctx);
    this.stageC = new Workspace(ctx);
  }

  /**
   * cuDNN for a convolution of an image [n, c, h, w] into a grid [n, k, oh, ow] of dtype t, when it is switched on
   * ({@link CudaSettings#cudnn()}), found, starts on this context and takes the shape ({@link
   * CudnnConvolution#supports}); else null.
   */
  private CudnnConvolution cudnn(DType t, int n, int c, int k, ConvGeometry g) {
    if (!CudaSettings.cudnn() || !CudnnConvolution.supports(t, n, c, k, g)) return null;
    synchronized (this) {
      if (!cudnnTried) {
        cudnnTried = true;
        try {
          cudnn = CudnnConvolution.open(ctx);
          cudnnState = cudnn.name();
        } catch (CudaException e) { // CudaUnavailableException when no cuDNN is found
          cudnnState = e.getMessage();
        }
      }
      return cudnn;
    }
  }

  /**
   * What runs this context's convolutions, for reports: "cuDNN 9.5.1 (float32, bfloat16, float16; float64 on im2col
   * + cuBLASLt)", or "im2col + cuBLASLt" with the reason cuDNN is not used. Before any convolution has run it says
   * whether cuDNN's library is there, without starting it on the device (a handle takes device memory).
   */
  public String engine() {
    if (!CudaSettings.cudnn()) return "im2col + cuBLASLt (cuDNN switched off: ember.cuda.cudnn=false or EMBER_CUDNN=0)";
    String state;
    boolean up;
    synchronized (this) {
      state = cudnnState;
      up = cudnn != null;
      if (!cudnnTried) {
        try {
          state = "cuDNN " + Cudnn.versionText(Cudnn.get().version());
          up = true;
        } catch (CudaException e) {
          state = e.getMessage();
        }
      }
    }
    return up ? state + " (float32, bfloat16, float16; float64 on im2col + cuBLASLt)"
        : "im2col + cuBLASLt (no cuDNN: " + state + ")";
  }

  /** Nothing is kept: the backward pass rebuilds the column matrices, which costs one cheap kernel here. */
  @Override
  public SavedColumns newSavedColumns() {
    return () -> 0;
  }

  /** True: BF16/F16 operands run on the tensor cores (see the class comment). */
  @Override
  public boolean readsHalf() {
    return true;
  }

  /** The kernel bases of {@link #SOURCE}, each launched as {@link #kernelName}(base, dtype). */
  static final List<String> KERNELS = List.of("im2col", "col2im", "bias_fill", "sum_batches", "channel_sums");

  /**
   * The kernel of {@link #SOURCE} that runs {@code base} on {@code t}: f32, f64, bf16 or f16, and u16 for either
   * half where the kernel only moves bits (im2col, bias_fill).
   */
  static String kernelName(String base, DType t) {
    boolean moves = base.equals("im2col") || base.equals("bias_fill");
    String tag;
    if (t == DType.F32) tag = "f32";
    else if (t == DType.F64) tag = "f64";
    else if (t == DType.BF16) tag = moves ? "u16" : "bf16";
    else if (t == DType.F16) tag = moves ? "u16" : "f16";
    else throw new IllegalArgumentException("convolution: no CUDA kernel for dtype " + t.torchName());
    return base + "_" + tag;
  }

  private long fn(String name, DType t) {
    return cache.function("convolution", SOURCE, kernelName(name, t));
  }

  private static int size(DType t) {
    return t.itemSize();
  }

  /** The dtype a product of t operands is written in where it is summed again: float32 for the halves. */
  private static DType wide(DType t) {
    return t.isHalf() ? DType.F32 : t;
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

  /**
   * dx of dtype t from columns of dtype {@link #wide}(t); for a half t, plus {@code bias} (0 for none) before the
   * one rounding.
   */
  private void col2im(DType t, long colsAddr, long dx, long bias, int n, int c, ConvGeometry g) {
    long total = (long) n * c * g.hw();
    KernelArgs args = KernelArgs.begin().ptr(colsAddr).ptr(dx);
    if (t.isHalf()) args = args.ptr(bias);
    cache.launch1d(fn("col2im", t), total, args.bytes(geo(c, g), 4).i64(total));
  }

  private static int compute(DType t) {
    if (t == DType.F64) return CublasLt.COMPUTE_64F;
    if (t.isHalf()) return CublasLt.COMPUTE_32F;
    return CudaSettings.allowTf32() ? CublasLt.COMPUTE_32F_FAST_TF32 : CublasLt.COMPUTE_32F;
  }

  private static int type(DType t) {
    if (t == DType.F64) return CublasLt.R_64F;
    if (t == DType.BF16) return CublasLt.R_16BF;
    if (t == DType.F16) return CublasLt.R_16F;
    return CublasLt.R_32F;
  }

  /** The kernels that move a half GEMM's operands to and from aligned copies, by element size 2 and 4. */
  static final List<String> RESTRIDE = List.of("restride_u16", "restride_u32");

  /** The alignment cuBLASLt's heuristic assumes of every operand ({@link CudaMatmul#ALIGNMENT}). */
  private static final int ALIGN = CudaMatmul.ALIGNMENT;

  /** Whether every batch of an operand at {@code addr} with batch stride {@code stride} is {@link #ALIGN}-aligned. */
  static boolean aligned(long addr, long stride, int batch, int itemSize) {
    return addr % ALIGN == 0 && (batch == 1 || (stride * itemSize) % ALIGN == 0);
  }

  /** A batch stride of at least {@code per} elements whose bytes are a multiple of {@link #ALIGN}. */
  static long alignedStride(long per, int itemSize) {
    long bytes = (per * itemSize + ALIGN - 1) / ALIGN * ALIGN;
    return bytes / itemSize;
  }

  private void restride(long src, long ss, long dst, long ds, long per, int batch, int itemSize) {
    long total = per * batch;
    cache.launch1d(cache.function("convolution", SOURCE, itemSize == 2 ? "restride_u16" : "restride_u32"), total,
        KernelArgs.begin().ptr(src).i64(ss).ptr(dst).i64(ds).i64(per).i64(total));
  }

  /**
   * A GEMM reading A and B of dtype t and C/D of dtype d. A half GEMM (tensor cores) whose operand is not
   * {@link #ALIGN}-aligned in every batch (an odd group offset or image stride) reads and writes it through an
   * aligned copy, as {@link CudaMatmul} does: cuBLASLt picks its algorithm assuming that alignment.
   */
  private void gemm(DType t, DType d, boolean transA, boolean transB, long m, long n, long k, long a, long lda,
      long strideA, long b, long ldb, long strideB, double beta, long c, long ldc, long strideC, int batch) {
    if (m == 0 || n == 0 || batch == 0) return;
    if (!t.isHalf()) {
      product(t, d, transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch);
      return;
    }
    int es = size(t);
    int ed = size(d);
    long perA = lda * (transA ? m : k);
    long perB = ldb * (transB ? k : n);
    long perC = ldc * n;
    if (!aligned(a, strideA, batch, es)) {
      long sa = strideA == 0 ? 0 : alignedStride(perA, es);
      long copy = stageA.get((long) es * (strideA == 0 ? perA : sa * batch));
      restride(a, strideA, copy, sa, perA, strideA == 0 ? 1 : batch, es);
      a = copy;
      strideA = sa;
    }
    if (!aligned(b, strideB, batch, es)) {
      long sb = strideB == 0 ? 0 : alignedStride(perB, es);
      long copy = stageB.get((long) es * (strideB == 0 ? perB : sb * batch));
      restride(b, strideB, copy, sb, perB, strideB == 0 ? 1 : batch, es);
      b = copy;
      strideB = sb;
    }
    if (aligned(c, strideC, batch, ed)) {
      product(t, d, transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch);
      return;
    }
    long sc = alignedStride(perC, ed);
    long copy = stageC.get((long) ed * sc * batch);
    if (beta != 0) restride(c, strideC, copy, sc, perC, batch, ed);
    product(t, d, transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, beta, copy, ldc, sc, batch);
    restride(copy, sc, c, strideC, perC, batch, ed);
  }

  private void product(DType t, DType d, boolean transA, boolean transB, long m, long n, long k, long a, long lda,
      long strideA, long b, long ldb, long strideB, double beta, long c, long ldc, long strideC, int batch) {
    var spec = new CublasLt.MatmulSpec(compute(t), type(t), type(d), transA, transB, m, n, k, lda, ldb, ldc, strideA,
        strideB, strideC, batch, 0);
    ctx.makeCurrent();
    CublasLt.get().matmul(spec, 1, a, b, beta, c, 0, ctx.stream());
  }

  /**
   * Per group: out[n, g] [og, ohw] (+)= w[g] [og, ckk] x cols[n, g] [ckk, ohw] for all images at once; in
   * cuBLAS's column-major terms out^T [ohw, og] = cols^T [ohw, ckk] x w^T [ckk, og]. cols and w have dtype t, out
   * has t too (a half out is rounded once as it is stored).
   */
  private void forwardProduct(DType t, long colsAddr, long w, long out, int n, int cIn, int o, int groups,
      ConvGeometry g, double beta) {
    int cg = cIn / groups;
    int og = o / groups;
    long ckk = (long) cg * g.kk();
    long ohw = g.cols();
    int es = size(t);
    for (int gi = 0; gi < groups; gi++) {
      gemm(t, t, false, false, ohw, og, ckk, colsAddr + es * gi * ckk * ohw, ohw, (long) cIn * g.kk() * ohw,
          w + es * gi * og * ckk, ckk, 0, beta, out + es * gi * og * ohw, ohw, o * ohw, n);
    }
  }

  /**
   * Per group: dcols[n, g] [ckk, ohw] = w[g]^T [ckk, og] x gOut[n, g] [og, ohw]; gOut and w of dtype t, dcols of
   * {@link #wide}(t) (col2im sums them again).
   */
  private void inputProduct(DType t, long gOut, long w, long dcols, int n, int cIn, int o, int groups,
      ConvGeometry g) {
    int cg = cIn / groups;
    int og = o / groups;
    long ckk = (long) cg * g.kk();
    long ohw = g.cols();
    int es = size(t);
    int ed = size(wide(t));
    for (int gi = 0; gi < groups; gi++) {
      // column-major dcols^T [ohw, ckk] = gOut^T [ohw, og] x w [og, ckk]; w row-major [og, ckk] is column-major
      // [ckk, og], used transposed
      gemm(t, wide(t), false, true, ohw, ckk, og, gOut + es * gi * og * ohw, ohw, (long) o * ohw,
          w + es * gi * og * ckk, ckk, 0, 0, dcols + ed * gi * ckk * ohw, ohw, (long) cIn * g.kk() * ohw, n);
    }
  }

  /**
   * Per group: dw[g] [og, ckk] = sum over images of gOut[n, g] [og, ohw] x cols[n, g]^T [ohw, ckk]. One image's
   * product is written into dw (rounded once for a half t); several images' partials in {@link #wide}(t), summed in
   * image order by sum_batches (which rounds a half sum once).
   */
  private void weightProduct(DType t, long gOut, long colsAddr, long dw, int n, int cIn, int o, int groups,
      ConvGeometry g) {
    int cg = cIn / groups;
    int og = o / groups;
    long ckk = (long) cg * g.kk();
    long ohw = g.cols();
    int es = size(t);
    DType pt = wide(t);
    long per = (long) og * ckk;
    long partial = n == 1 ? 0 : parts.get(size(pt) * per * n);
    for (int gi = 0; gi < groups; gi++) {
      long target = n == 1 ? dw + es * gi * per : partial;
      // column-major dw^T [ckk, og] = cols [ckk, ohw] (stored column-major [ohw, ckk], transposed) x gOut^T [ohw, og]
      gemm(t, n == 1 ? t : pt, true, false, ckk, og, ohw, colsAddr + es * gi * ckk * ohw, ohw,
          (long) cIn * g.kk() * ohw, gOut + es * gi * og * ohw, ohw, (long) o * ohw, 0, target, ckk, per, n);
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
    long outAddr = KernelArgs.address(out);
    CudnnConvolution dnn = cudnn(t, n, c, o, g);
    if (dnn != null) {
      if (bias != null) biasFill(t, outAddr, bias, n, o, g.cols());
      if (dnn.run(Direction.FORWARD, t, n, c, o, groups, g, KernelArgs.address(x), KernelArgs.address(w), outAddr,
          bias != null)) {
        return;
      }
    }
    long colsAddr = cols.get((long) size(t) * n * c * g.kk() * g.cols());
    im2col(t, KernelArgs.address(x), colsAddr, n, c, g);
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
    CudnnConvolution dnn = cudnn(t, n, c, o, g);
    if (dnn != null) {
      if (dw != null && dnn.run(Direction.BACKWARD_FILTER, t, n, c, o, groups, g, KernelArgs.address(x),
          KernelArgs.address(dw), KernelArgs.address(gOut), false)) {
        dw = null;
      }
      if (dx != null && dnn.run(Direction.BACKWARD_DATA, t, n, c, o, groups, g, KernelArgs.address(dx),
          KernelArgs.address(w), KernelArgs.address(gOut), false)) {
        dx = null;
      }
      if (dw == null && dx == null) return;
    }
    // one buffer for x's columns (dtype t) and then dx's (wide(t)), in stream order
    long colsAddr = cols.get((long) size(dx == null ? t : wide(t)) * n * c * g.kk() * g.cols());
    if (dw != null) {
      im2col(t, KernelArgs.address(x), colsAddr, n, c, g);
      weightProduct(t, KernelArgs.address(gOut), colsAddr, KernelArgs.address(dw), n, c, o, groups, g);
    }
    if (dx != null) {
      inputProduct(t, KernelArgs.address(gOut), KernelArgs.address(w), colsAddr, n, c, o, groups, g);
      col2im(t, colsAddr, KernelArgs.address(dx), 0, n, c, g);
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
    // the input gradient of the convolution of out [n, o, h, w] by w [cin, o/groups, kh, kw] into x's grid
    CudnnConvolution dnn = cudnn(t, n, o, cin, g);
    if (dnn != null) {
      if (bias != null) biasFill(t, KernelArgs.address(out), bias, n, o, g.hw());
      if (dnn.run(Direction.BACKWARD_DATA, t, n, o, cin, groups, g, KernelArgs.address(out), KernelArgs.address(w),
          KernelArgs.address(x), bias != null)) {
        return;
      }
    }
    long colsAddr = cols.get((long) size(wide(t)) * n * o * g.kk() * g.cols());
    inputProduct(t, KernelArgs.address(x), KernelArgs.address(w), colsAddr, n, o, cin, groups, g);
    if (t.isHalf()) { // the bias added in float32 before col2im's one rounding
      col2im(t, colsAddr, KernelArgs.address(out), bias == null ? 0 : KernelArgs.address(bias), n, o, g);
      return;
    }
    col2im(t, colsAddr, KernelArgs.address(out), 0, n, o, g);
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
    CudnnConvolution dnn = cudnn(t, n, o, cin, g);
    if (dnn != null) {
      // dx: the convolution of gOut [n, o, h, w] by w into x's grid; dw: that convolution's filter gradient
      if (dx != null && dnn.run(Direction.FORWARD, t, n, o, cin, groups, g, KernelArgs.address(gOut),
          KernelArgs.address(w), KernelArgs.address(dx), false)) {
        dx = null;
      }
      if (dw != null && dnn.run(Direction.BACKWARD_FILTER, t, n, o, cin, groups, g, KernelArgs.address(gOut),
          KernelArgs.address(dw), KernelArgs.address(x), false)) {
        dw = null;
      }
      if (dx == null && dw == null) return;
    }
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
