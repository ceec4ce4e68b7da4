// Gather, scatter, index_select, index_add and the strided copy and scale the matmul needs
// (dev.ember.cuda.kernels.CudaIndexing, CudaMatmul). One thread per element, grid-stride loops.
// Plain moves copy the element's bits (by size: u8, u16, u32, u64), so every dtype is moved exactly.
// The host compiles this source once per dtype, defining EG_TYPE_<tag> (f32, f64, i64, i32, b8): only the
// kernels of that dtype (its moves by size, its accumulation, copy and scale) are instantiated.

#define EG_LOOP(i, n) \
  for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < (n); i += (long long) gridDim.x * blockDim.x)

// An index clamped into [0, bound): the op layer checks indices before or (on a device, deferred to the next
// synchronizing point) after the launch, so an out-of-range one only ever reaches a kernel whose result is then
// reported as an error; clamping keeps that kernel's reads and writes inside the tensor instead of faulting the
// context, which would replace the typed error with a sticky CUDA one. bound is at least 1 (a caller skips the
// launch over an empty dimension).
__device__ __forceinline__ long long eg_clamp(long long j, long long bound) {
  return j < 0 ? 0 : j >= bound ? bound - 1 : j;
}

// out[e] = x[coords of e with coordinate dim replaced by index[e]]; ig, og and xg all carry index's shape
// (xg with x's strides and offset).
template <typename E, typename I>
__device__ void eg_gather(const E* __restrict__ x, const I* __restrict__ idx, E* __restrict__ out, EGeo xg, EGeo ig,
    EGeo og, int dim, long long n, long long bound) {
  long long c[EG_MAXR];
  EG_LOOP(e, n) {
    eg_coords(ig, e, c);
    long long io = eg_off(ig, c);
    long long oo = eg_off(og, c);
    c[dim] = eg_clamp((long long) idx[io], bound);
    out[oo] = x[eg_off(xg, c)];
  }
}

// out[coords of e with coordinate dim replaced by index[e]] = src[e]; duplicate targets keep one of the
// written values, which one is unspecified.
template <typename E, typename I>
__device__ void eg_scatter(E* __restrict__ out, const I* __restrict__ idx, const E* __restrict__ src, EGeo og, EGeo ig,
    EGeo sg, int dim, long long n, long long bound) {
  long long c[EG_MAXR];
  EG_LOOP(e, n) {
    eg_coords(ig, e, c);
    long long io = eg_off(ig, c);
    long long so = eg_off(sg, c);
    c[dim] = eg_clamp((long long) idx[io], bound);
    out[eg_off(og, c)] = src[so];
  }
}

// Atomic accumulation per dtype: float and double atomicAdd (the order of additions into one element, and
// so its rounding, varies from run to run), two's-complement integers exactly, bool as logical or.
__device__ __forceinline__ void eg_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void eg_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void eg_add(long long* p, long long v) {
  atomicAdd((unsigned long long*) p, (unsigned long long) v);
}
__device__ __forceinline__ void eg_add(int* p, int v) { atomicAdd(p, v); }
__device__ __forceinline__ void eg_add(unsigned char* p, unsigned char v) {
  if (v != 0) *p = 1;
}

template <typename T, typename I>
__device__ void eg_scatter_add(T* out, const I* __restrict__ idx, const T* __restrict__ src, EGeo og, EGeo ig, EGeo sg,
    int dim, long long n, long long bound) {
  long long c[EG_MAXR];
  EG_LOOP(e, n) {
    eg_coords(ig, e, c);
    long long io = eg_off(ig, c);
    long long so = eg_off(sg, c);
    c[dim] = eg_clamp((long long) idx[io], bound);
    eg_add(out + eg_off(og, c), src[so]);
  }
}

// out[.., i, ..] = x[.., index[i], ..]: og and xg carry out's shape; index is 1-d (istride, ioff).
template <typename E, typename I>
__device__ void eg_index_select(const E* __restrict__ x, const I* __restrict__ idx, E* __restrict__ out, EGeo xg,
    EGeo og, int dim, long long istride, long long ioff, long long n, long long bound) {
  long long c[EG_MAXR];
  EG_LOOP(e, n) {
    eg_coords(og, e, c);
    long long oo = eg_off(og, c);
    c[dim] = eg_clamp((long long) idx[ioff + c[dim] * istride], bound);
    out[oo] = x[eg_off(xg, c)];
  }
}

// out[.., index[i], ..] += src[.., i, ..]: og and sg carry src's shape.
template <typename T, typename I>
__device__ void eg_index_add(T* out, const I* __restrict__ idx, const T* __restrict__ src, EGeo og, EGeo sg, int dim,
    long long istride, long long ioff, long long n, long long bound) {
  long long c[EG_MAXR];
  EG_LOOP(e, n) {
    eg_coords(sg, e, c);
    long long so = eg_off(sg, c);
    c[dim] = eg_clamp((long long) idx[ioff + c[dim] * istride], bound);
    eg_add(out + eg_off(og, c), src[so]);
  }
}

#define EG_MOVE(EN, E, IN, I) \
  extern "C" __global__ void gather_##EN##_##IN(const E* x, const I* idx, E* out, EGeo xg, EGeo ig, EGeo og, int dim, \
      long long n, long long bound) { eg_gather<E, I>(x, idx, out, xg, ig, og, dim, n, bound); } \
  extern "C" __global__ void scatter_##EN##_##IN(E* out, const I* idx, const E* src, EGeo og, EGeo ig, EGeo sg, int dim, \
      long long n, long long bound) { eg_scatter<E, I>(out, idx, src, og, ig, sg, dim, n, bound); } \
  extern "C" __global__ void index_select_##EN##_##IN(const E* x, const I* idx, E* out, EGeo xg, EGeo og, int dim, \
      long long istride, long long ioff, long long n, long long bound) { \
    eg_index_select<E, I>(x, idx, out, xg, og, dim, istride, ioff, n, bound); \
  }

#define EG_ACCUM(TN, T, IN, I) \
  extern "C" __global__ void scatter_add_##TN##_##IN(T* out, const I* idx, const T* src, EGeo og, EGeo ig, EGeo sg, \
      int dim, long long n, long long bound) { eg_scatter_add<T, I>(out, idx, src, og, ig, sg, dim, n, bound); } \
  extern "C" __global__ void index_add_##TN##_##IN(T* out, const I* idx, const T* src, EGeo og, EGeo sg, int dim, \
      long long istride, long long ioff, long long n, long long bound) { \
    eg_index_add<T, I>(out, idx, src, og, sg, dim, istride, ioff, n, bound); \
  }

// ---------------------------------------------------------------- strided copy and scale

// dst = src, same shape, any strides (sg and dg carry the shape), bits moved.
#define EG_COPY(EN, E) \
  extern "C" __global__ void copy_##EN(const E* __restrict__ src, E* __restrict__ dst, EGeo sg, EGeo dg, long long n) { \
    EG_LOOP(e, n) dst[eg_at(dg, e)] = src[eg_at(sg, e)]; \
  }


// out = beta * out (beta 0 writes zeros, whatever out held, NaN included): a matmul with an empty inner dimension.
#define EG_SCALE(TN, T) \
  extern "C" __global__ void scale_##TN(T* out, EGeo og, T beta, long long n) { \
    EG_LOOP(e, n) { long long o = eg_at(og, e); out[o] = beta == (T) 0 ? (T) 0 : beta * out[o]; } \
  }

// One dtype's kernels: moves by its size, accumulation in its type, and (floats) the scale.
#define EG_DTYPE(TN, T, EN, E) \
  EG_MOVE(EN, E, i64, long long) \
  EG_MOVE(EN, E, i32, int) \
  EG_ACCUM(TN, T, i64, long long) \
  EG_ACCUM(TN, T, i32, int) \
  EG_COPY(EN, E)

#ifdef EG_TYPE_f32
EG_DTYPE(f32, float, u32, unsigned int)
EG_SCALE(f32, float)
#endif
#ifdef EG_TYPE_f64
EG_DTYPE(f64, double, u64, unsigned long long)
EG_SCALE(f64, double)
#endif
#ifdef EG_TYPE_i64
EG_DTYPE(i64, long long, u64, unsigned long long)
#endif
#ifdef EG_TYPE_i32
EG_DTYPE(i32, int, u32, unsigned int)
#endif
#ifdef EG_TYPE_b8
EG_DTYPE(b8, unsigned char, u8, unsigned char)
#endif
// The 16-bit floats: moves of their bits only (their sums run in float32 in the op layer).
#if defined(EG_TYPE_bf16) || defined(EG_TYPE_f16)
EG_MOVE(u16, unsigned short, i64, long long)
EG_MOVE(u16, unsigned short, i32, int)
EG_COPY(u16, unsigned short)
#endif
