// Reductions, arg-reductions, softmax, cumsum and allFinite (dev.ember.cuda.kernels.CudaReduce).
// The host compiles this source once per input dtype, defining EG_TYPE_<tag> (f32, f64, i64, i32, b8): only
// that dtype's kernels are instantiated, so a first use compiles a fifth of them.
// Every result is computed in an order fixed by the shape alone (never by timing), so reruns give the
// same bits. Blocks have a power-of-two size of at most 256 threads, chosen by the host from the shape.

// Tree over a block's partials in shared memory, fixed order: after it sh[0] holds the block's value.
template <int OP, typename A> __device__ __forceinline__ void eg_tree(A* sh) {
  __syncthreads();
  for (unsigned s = blockDim.x >> 1; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] = eg_combine<OP, A>(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
}

// One block per (output element, chunk of the reduced positions): thread t combines positions
// p0 + t, p0 + t + blockDim, ... in order, then the block combines the threads' values as a tree.
// With one chunk the block writes the output; with several it writes its partial (the accumulator
// type) to partial[o * nChunks + c], which reduce_finish combines in chunk order.
template <int OP, typename T, typename O>
__device__ void eg_reduce_block(const T* __restrict__ x, O* __restrict__ out, typename EgAcc<T>::type* __restrict__ partial,
    EGeo outerX, EGeo inner, EGeo outerO, long long nOuter, long long nInner, long long chunk, long long nChunks) {
  typedef typename EgAcc<T>::type A;
  __shared__ A sh[256];
  long long total = nOuter * nChunks;
  for (long long b = blockIdx.x; b < total; b += gridDim.x) {
    long long o = b / nChunks;
    long long c = b - o * nChunks;
    long long xb = eg_at(outerX, o);
    long long p0 = c * chunk;
    long long p1 = p0 + chunk < nInner ? p0 + chunk : nInner;
    A acc = eg_identity<OP, A>();
    for (long long p = p0 + threadIdx.x; p < p1; p += blockDim.x) acc = eg_combine<OP, A>(acc, (A) x[xb + eg_at(inner, p)]);
    sh[threadIdx.x] = acc;
    eg_tree<OP, A>(sh);
    if (threadIdx.x == 0) {
      if (nChunks == 1) out[eg_at(outerO, o)] = (O) sh[0];
      else partial[b] = sh[0];
    }
    __syncthreads();
  }
}

// One thread per output element, the reduced positions combined in order (short reductions).
template <int OP, typename T, typename O>
__device__ void eg_reduce_thread(const T* __restrict__ x, O* __restrict__ out, EGeo outerX, EGeo inner, EGeo outerO,
    long long nOuter, long long nInner) {
  typedef typename EgAcc<T>::type A;
  for (long long o = blockIdx.x * (long long) blockDim.x + threadIdx.x; o < nOuter; o += (long long) gridDim.x * blockDim.x) {
    long long xb = eg_at(outerX, o);
    A acc = eg_identity<OP, A>();
    for (long long p = 0; p < nInner; p++) acc = eg_combine<OP, A>(acc, (A) x[xb + eg_at(inner, p)]);
    out[eg_at(outerO, o)] = (O) acc;
  }
}

// Combines the chunk partials of each output (rows of nChunks, contiguous) as eg_reduce_block does.
template <int OP, typename A, typename O>
__device__ void eg_reduce_finish(const A* __restrict__ partial, O* __restrict__ out, EGeo outerO, long long nOuter,
    long long nChunks) {
  __shared__ A sh[256];
  for (long long o = blockIdx.x; o < nOuter; o += gridDim.x) {
    A acc = eg_identity<OP, A>();
    for (long long c = threadIdx.x; c < nChunks; c += blockDim.x) acc = eg_combine<OP, A>(acc, partial[o * nChunks + c]);
    sh[threadIdx.x] = acc;
    eg_tree<OP, A>(sh);
    if (threadIdx.x == 0) out[eg_at(outerO, o)] = (O) sh[0];
    __syncthreads();
  }
}

#define EG_REDUCE(OPN, OP, TN, T, ON, O) \
  extern "C" __global__ void reduce_block_##OPN##_##TN##_##ON(const T* x, O* out, EgAcc<T>::type* partial, EGeo outerX, \
      EGeo inner, EGeo outerO, long long nOuter, long long nInner, long long chunk, long long nChunks) { \
    eg_reduce_block<OP, T, O>(x, out, partial, outerX, inner, outerO, nOuter, nInner, chunk, nChunks); \
  } \
  extern "C" __global__ void reduce_thread_##OPN##_##TN##_##ON(const T* x, O* out, EGeo outerX, EGeo inner, \
      EGeo outerO, long long nOuter, long long nInner) { \
    eg_reduce_thread<OP, T, O>(x, out, outerX, inner, outerO, nOuter, nInner); \
  } \
  extern "C" __global__ void reduce_finish_##OPN##_##TN##_##ON(const EgAcc<T>::type* partial, O* out, EGeo outerO, \
      long long nOuter, long long nChunks) { \
    eg_reduce_finish<OP, EgAcc<T>::type, O>(partial, out, outerO, nOuter, nChunks); \
  }

#define EG_REDUCE_TYPES(TN, T, ON, O) \
  EG_REDUCE(sum, EG_SUM, TN, T, ON, O) \
  EG_REDUCE(prod, EG_PROD, TN, T, ON, O) \
  EG_REDUCE(max, EG_MAX, TN, T, ON, O) \
  EG_REDUCE(min, EG_MIN, TN, T, ON, O)

#ifdef EG_TYPE_f32
EG_REDUCE_TYPES(f32, float, f32, float)
#endif
#ifdef EG_TYPE_f64
EG_REDUCE_TYPES(f64, double, f64, double)
#endif
#ifdef EG_TYPE_i64
EG_REDUCE_TYPES(i64, long long, i64, long long)
#endif
#ifdef EG_TYPE_i32
EG_REDUCE_TYPES(i32, int, i64, long long)
EG_REDUCE_TYPES(i32, int, i32, int)
#endif
#ifdef EG_TYPE_b8
EG_REDUCE_TYPES(b8, unsigned char, i64, long long)
EG_REDUCE_TYPES(b8, unsigned char, b8, unsigned char)
#endif

// ---------------------------------------------------------------- argmax / argmin

// Whether candidate (bv, bi) beats (av, ai): the first NaN wins (NaN counts as the largest, for argmin
// too, as the CPU backend and PyTorch), then the larger (smaller) value, ties to the lower index.
template <bool MAX> __device__ __forceinline__ bool eg_arg_better(double bv, long long bi, double av, long long ai) {
  if (bi < 0) return false;
  if (ai < 0) return true;
  bool bn = bv != bv;
  bool an = av != av;
  if (an || bn) return an && bn ? bi < ai : bn;
  if (bv == av) return bi < ai;
  return MAX ? bv > av : bv < av;
}

// One block per output; values compared in double, as the CPU backend compares them.
template <bool MAX, typename T>
__device__ void eg_arg_reduce(const T* __restrict__ x, long long* __restrict__ out, EGeo outerX, EGeo outerO,
    long long nOuter, long long n, long long step) {
  __shared__ double shv[256];
  __shared__ long long shi[256];
  for (long long o = blockIdx.x; o < nOuter; o += gridDim.x) {
    long long xb = eg_at(outerX, o);
    double bv = 0;
    long long bi = -1;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      double v = (double) x[xb + j * step];
      if (eg_arg_better<MAX>(v, j, bv, bi)) {
        bv = v;
        bi = j;
      }
    }
    shv[threadIdx.x] = bv;
    shi[threadIdx.x] = bi;
    __syncthreads();
    for (unsigned s = blockDim.x >> 1; s > 0; s >>= 1) {
      if (threadIdx.x < s && eg_arg_better<MAX>(shv[threadIdx.x + s], shi[threadIdx.x + s], shv[threadIdx.x], shi[threadIdx.x])) {
        shv[threadIdx.x] = shv[threadIdx.x + s];
        shi[threadIdx.x] = shi[threadIdx.x + s];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) out[eg_at(outerO, o)] = shi[0] < 0 ? 0 : shi[0];
    __syncthreads();
  }
}

#define EG_ARG(TN, T) \
  extern "C" __global__ void argmax_##TN(const T* x, long long* out, EGeo outerX, EGeo outerO, long long nOuter, \
      long long n, long long step) { eg_arg_reduce<true, T>(x, out, outerX, outerO, nOuter, n, step); } \
  extern "C" __global__ void argmin_##TN(const T* x, long long* out, EGeo outerX, EGeo outerO, long long nOuter, \
      long long n, long long step) { eg_arg_reduce<false, T>(x, out, outerX, outerO, nOuter, n, step); }

#ifdef EG_TYPE_f32
EG_ARG(f32, float)
#endif
#ifdef EG_TYPE_f64
EG_ARG(f64, double)
#endif
#ifdef EG_TYPE_i64
EG_ARG(i64, long long)
#endif
#ifdef EG_TYPE_i32
EG_ARG(i32, int)
#endif
#ifdef EG_TYPE_b8
EG_ARG(b8, unsigned char)
#endif

// ---------------------------------------------------------------- softmax

__device__ __forceinline__ float eg_exp(float v) { return expf(v); }
__device__ __forceinline__ double eg_exp(double v) { return exp(v); }
__device__ __forceinline__ float eg_log(float v) { return logf(v); }
__device__ __forceinline__ double eg_log(double v) { return log(v); }

// One block per row along the axis: the row's max (NaN propagates), the sum of exp(x - max) in double,
// then exp(x - max) / sum or x - max - log(sum). Subtracting the max keeps exp from overflowing.
template <typename T>
__device__ void eg_softmax(const T* __restrict__ x, T* __restrict__ out, EGeo outerX, EGeo outerO, long long rows,
    long long n, long long sx, long long so, int logSoftmax) {
  __shared__ double sh[256];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    long long xb = eg_at(outerX, r);
    long long ob = eg_at(outerO, r);
    double m = EgLimits<double>::lowest();
    for (long long j = threadIdx.x; j < n; j += blockDim.x) m = eg_combine<EG_MAX, double>(m, (double) x[xb + j * sx]);
    sh[threadIdx.x] = m;
    eg_tree<EG_MAX, double>(sh);
    T mx = (T) sh[0];
    __syncthreads();
    double s = 0;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) s += (double) eg_exp((T) (x[xb + j * sx] - mx));
    sh[threadIdx.x] = s;
    eg_tree<EG_SUM, double>(sh);
    T sum = (T) sh[0];
    T logSum = eg_log(sum);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      T d = x[xb + j * sx] - mx;
      out[ob + j * so] = logSoftmax ? d - logSum : eg_exp(d) / sum;
    }
    __syncthreads();
  }
}

// softmaxBackward in three launches that are the composite's own ops, so its bits are the composite's:
// prep writes g * y (softmax) or exp(y) (log_softmax); the host then sums rows with reduce (of g * y,
// or of g); finish writes y * (g - s) or g - exp(y) * s. The _rn intrinsics keep each op rounded on
// its own, never fused into an FMA, as the elementwise kernels round them.
__device__ __forceinline__ float eg_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double eg_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float eg_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double eg_sub(double a, double b) { return __dsub_rn(a, b); }

template <typename T>
__device__ void eg_softmax_bwd_prep(const T* __restrict__ g, const T* __restrict__ y, T* __restrict__ out, long long n,
    int logSoftmax) {
  for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
    out[i] = logSoftmax ? eg_exp(y[i]) : eg_mul(g[i], y[i]);
  }
}

template <typename T>
__device__ void eg_softmax_bwd_finish(const T* __restrict__ g, const T* __restrict__ y, const T* __restrict__ s,
    T* __restrict__ out, long long n, long long cols, int logSoftmax) {
  for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
    T sr = s[i / cols];
    out[i] = logSoftmax ? eg_sub(g[i], eg_mul(out[i], sr)) : eg_mul(y[i], eg_sub(g[i], sr));
  }
}

#define EG_SOFTMAX(TN, T) \
  extern "C" __global__ void softmax_##TN(const T* x, T* out, EGeo outerX, EGeo outerO, long long rows, long long n, \
      long long sx, long long so, int logSoftmax) { eg_softmax<T>(x, out, outerX, outerO, rows, n, sx, so, logSoftmax); } \
  extern "C" __global__ void softmax_bwd_prep_##TN(const T* g, const T* y, T* out, long long n, int logSoftmax) { \
    eg_softmax_bwd_prep<T>(g, y, out, n, logSoftmax); } \
  extern "C" __global__ void softmax_bwd_finish_##TN(const T* g, const T* y, const T* s, T* out, long long n, \
      long long cols, int logSoftmax) { eg_softmax_bwd_finish<T>(g, y, s, out, n, cols, logSoftmax); }

#ifdef EG_TYPE_f32
EG_SOFTMAX(f32, float)
#endif
#ifdef EG_TYPE_f64
EG_SOFTMAX(f64, double)
#endif

// ---------------------------------------------------------------- cumsum

// One thread per row, in order from index 0; float32 accumulates in float32 as the CPU backend and
// PyTorch's CPU cumsum do, so the bits match the CPU's.
template <typename T, typename O, typename A>
__device__ void eg_cumsum(const T* __restrict__ x, O* __restrict__ out, EGeo outerX, EGeo outerO, long long rows,
    long long n, long long sx, long long so) {
  for (long long r = blockIdx.x * (long long) blockDim.x + threadIdx.x; r < rows; r += (long long) gridDim.x * blockDim.x) {
    long long xb = eg_at(outerX, r);
    long long ob = eg_at(outerO, r);
    A acc = 0;
    for (long long j = 0; j < n; j++) {
      acc += (A) x[xb + j * sx];
      out[ob + j * so] = (O) acc;
    }
  }
}

#define EG_CUMSUM(TN, T, ON, O, A) \
  extern "C" __global__ void cumsum_##TN##_##ON(const T* x, O* out, EGeo outerX, EGeo outerO, long long rows, \
      long long n, long long sx, long long so) { eg_cumsum<T, O, A>(x, out, outerX, outerO, rows, n, sx, so); }

#ifdef EG_TYPE_f32
EG_CUMSUM(f32, float, f32, float, float)
#endif
#ifdef EG_TYPE_f64
EG_CUMSUM(f64, double, f64, double, double)
#endif
#ifdef EG_TYPE_i64
EG_CUMSUM(i64, long long, i64, long long, long long)
#endif
#ifdef EG_TYPE_i32
EG_CUMSUM(i32, int, i64, long long, long long)
EG_CUMSUM(i32, int, i32, int, long long)
#endif
#ifdef EG_TYPE_b8
EG_CUMSUM(b8, unsigned char, i64, long long, long long)
#endif

// ---------------------------------------------------------------- allFinite

// Clears *flag (set to 1 by the host) when some element's exponent bits are all ones (NaN or infinite).
#ifdef EG_TYPE_f32
extern "C" __global__ void allfinite_f32(const unsigned int* __restrict__ x, long long n, int* flag) {
  for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
    if ((x[i] & 0x7f800000u) == 0x7f800000u) *flag = 0;
  }
}

#endif
#ifdef EG_TYPE_f64
extern "C" __global__ void allfinite_f64(const unsigned long long* __restrict__ x, long long n, int* flag) {
  for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
    if ((x[i] & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) *flag = 0;
  }
}
#endif
