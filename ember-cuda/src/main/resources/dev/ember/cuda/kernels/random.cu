// CudaRandom's kernels: random fills from Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and
// Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC'11), as Random123 defines it and as PyTorch's CUDA
// generator (curand's Philox) uses it. No headers (NVRTC compiles it as it is; RandomHostTest compiles the same
// text with g++ behind a small shim): 32-bit words are unsigned int, products unsigned long long.
//
// The stream of a call: key (k0, k1) = the call's seed, block c's counter = (c lo, c hi, offset lo, offset hi);
// block c gives words 4c .. 4c + 3. A float32 element e takes word e, a float64 element words 2e (high half) and
// 2e + 1 (low half). Each thread runs one Philox block and writes the 4 values it gives (float64: two blocks).
#define RN_M0 0xD2511F53u
#define RN_M1 0xCD9E8D57u
#define RN_W0 0x9E3779B9u
#define RN_W1 0xBB67AE85u
#define RN_LOOP(i, n) for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < (n); i += (long long) blockDim.x * gridDim.x)

struct rn_u4 { unsigned int x, y, z, w; };

// Ten rounds; the key is bumped by the Weyl constants between rounds (Random123's philox4x32_R with R = 10).
__device__ __forceinline__ rn_u4 rn_philox(rn_u4 c, unsigned int k0, unsigned int k1) {
  for (int r = 0; r < 10; r++) {
    if (r > 0) { k0 += RN_W0; k1 += RN_W1; }
    unsigned long long p0 = (unsigned long long) RN_M0 * c.x;
    unsigned long long p1 = (unsigned long long) RN_M1 * c.z;
    unsigned int hi0 = (unsigned int) (p0 >> 32), lo0 = (unsigned int) p0;
    unsigned int hi1 = (unsigned int) (p1 >> 32), lo1 = (unsigned int) p1;
    rn_u4 o;
    o.x = hi1 ^ c.y ^ k0;
    o.y = lo1;
    o.z = hi0 ^ c.w ^ k1;
    o.w = lo0;
    c = o;
  }
  return c;
}

// The 4 words of block c of the stream (seed k0, k1; offset c2, c3).
__device__ __forceinline__ void rn_block(unsigned long long c, unsigned int k0, unsigned int k1, unsigned int c2,
    unsigned int c3, unsigned int* w) {
  rn_u4 ctr;
  ctr.x = (unsigned int) c;
  ctr.y = (unsigned int) (c >> 32);
  ctr.z = c2;
  ctr.w = c3;
  rn_u4 r = rn_philox(ctr, k0, k1);
  w[0] = r.x; w[1] = r.y; w[2] = r.z; w[3] = r.w;
}

// Uniform in [0, 1) as the CPU generator makes it: 24 bits of a word for float32, 53 bits of two for float64.
__device__ __forceinline__ float rn_unit(const unsigned int* w, int i, float*) {
  return (float) (w[i] & 0xFFFFFFu) * 5.9604644775390625e-8f; // 2^-24
}
__device__ __forceinline__ double rn_unit(const unsigned int* w, int i, double*) {
  unsigned long long b = ((unsigned long long) w[2 * i] << 32) | w[2 * i + 1];
  return (double) (b & 0x1FFFFFFFFFFFFFull) * 1.1102230246251565e-16; // 2^-53
}

__device__ __forceinline__ float rn_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double rn_fma(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ float rn_log(float x) { return logf(x); }
__device__ __forceinline__ double rn_log(double x) { return log(x); }
__device__ __forceinline__ float rn_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double rn_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float rn_sin(float x) { return sinf(x); }
__device__ __forceinline__ double rn_sin(double x) { return sin(x); }
__device__ __forceinline__ float rn_cos(float x) { return cosf(x); }
__device__ __forceinline__ double rn_cos(double x) { return cos(x); }
__device__ __forceinline__ float rn_erfinv(float x) { return erfinvf(x); }
__device__ __forceinline__ double rn_erfinv(double x) { return erfinv(x); }

// The 4 uniforms of thread t (elements 4t .. 4t + 3): one block for float32, blocks 2t and 2t + 1 for float64.
template <typename T> __device__ __forceinline__ void rn_uniforms(long long t, unsigned int k0, unsigned int k1,
    unsigned int c2, unsigned int c3, T* u) {
  unsigned int w[8];
  if (sizeof(T) == 4) {
    rn_block((unsigned long long) t, k0, k1, c2, c3, w);
    for (int j = 0; j < 4; j++) u[j] = rn_unit(w, j, (T*) 0);
  } else {
    rn_block(2ull * (unsigned long long) t, k0, k1, c2, c3, w);
    rn_block(2ull * (unsigned long long) t + 1, k0, k1, c2, c3, w + 4);
    for (int j = 0; j < 4; j++) u[j] = rn_unit(w, j, (T*) 0);
  }
}

// from + u * (to - from) in T, rounded once (the CPU's fused multiply-add); a value that rounds to `to` or beyond
// becomes `from` (PyTorch's CUDA rule), so every value lies in [from, to).
template <typename T> __device__ __forceinline__ T rn_scale(T u, T from, T range, double to) {
  T v = rn_fma(u, range, from);
  return (double) v >= to && (double) from < to ? from : v;
}

template <typename T> __device__ void rn_uniform(T* out, long long n, unsigned int k0, unsigned int k1,
    unsigned int c2, unsigned int c3, double from, double to) {
  T f = (T) from;
  T range = (T) to - f;
  RN_LOOP(t, (n + 3) / 4) {
    T u[4];
    rn_uniforms<T>(t, k0, k1, c2, c3, u);
    for (int j = 0; j < 4 && 4 * t + j < n; j++) out[4 * t + j] = rn_scale<T>(u[j], f, range, to);
  }
}

// Box-Muller on the pairs (u0, u1), (u2, u3): r = sqrt(-2 log(1 - u_even)), theta = 2 pi u_odd; the pair's values
// are r cos(theta) and r sin(theta), times std plus mean, in T.
template <typename T> __device__ void rn_normal(T* out, long long n, unsigned int k0, unsigned int k1,
    unsigned int c2, unsigned int c3, double mean, double std) {
  T m = (T) mean, s = (T) std;
  RN_LOOP(t, (n + 3) / 4) {
    T u[4];
    rn_uniforms<T>(t, k0, k1, c2, c3, u);
    for (int j = 0; j < 4; j += 2) {
      T r = rn_sqrt((T) -2 * rn_log((T) 1 - u[j]));
      T theta = (T) 6.283185307179586 * u[j + 1];
      long long e = 4 * t + j;
      if (e < n) out[e] = r * rn_cos(theta) * s + m;
      if (e + 1 < n) out[e + 1] = r * rn_sin(theta) * s + m;
    }
  }
}

// CpuRandom's method: uniforms in [2 lo - 1, 2 hi - 1) (lo, hi the normal CDF at the bounds, from the host), the
// inverse error function, times std sqrt(2) plus mean, clamped to [a, b], each step in T.
template <typename T> __device__ void rn_trunc_normal(T* out, long long n, unsigned int k0, unsigned int k1,
    unsigned int c2, unsigned int c3, double from, double to, double scale, double mean, double a, double b) {
  T f = (T) from;
  T range = (T) to - f;
  T sc = (T) scale, m = (T) mean, lo = (T) a, hi = (T) b;
  RN_LOOP(t, (n + 3) / 4) {
    T u[4];
    rn_uniforms<T>(t, k0, k1, c2, c3, u);
    for (int j = 0; j < 4 && 4 * t + j < n; j++) {
      T v = rn_erfinv(rn_scale<T>(u[j], f, range, to)) * sc + m;
      if (v == v) { // as Math.min(b, Math.max(a, v)): a NaN stays NaN
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
      }
      out[4 * t + j] = v;
    }
  }
}

// value where a uniform of T falls below keep, else 0.
template <typename T> __device__ void rn_bernoulli(T* out, long long n, unsigned int k0, unsigned int k1,
    unsigned int c2, unsigned int c3, double keep, double value) {
  T v = (T) value;
  RN_LOOP(t, (n + 3) / 4) {
    T u[4];
    rn_uniforms<T>(t, k0, k1, c2, c3, u);
    for (int j = 0; j < 4 && 4 * t + j < n; j++) out[4 * t + j] = (double) u[j] < keep ? v : (T) 0;
  }
}

// Block c of the stream for c in [first, first + blocks): words 4i .. 4i + 3 of out (the GPU test's reference).
extern "C" __global__ void rn_philox_blocks(unsigned int* out, long long first, long long blocks, unsigned int k0,
    unsigned int k1, unsigned int c2, unsigned int c3) {
  RN_LOOP(i, blocks) rn_block((unsigned long long) (first + i), k0, k1, c2, c3, out + 4 * i);
}

#define RN_KERNELS(T, S)                                                                                            \
  extern "C" __global__ void rn_uniform_##S(T* out, long long n, unsigned int k0, unsigned int k1, unsigned int c2, \
      unsigned int c3, double from, double to) { rn_uniform<T>(out, n, k0, k1, c2, c3, from, to); }                \
  extern "C" __global__ void rn_normal_##S(T* out, long long n, unsigned int k0, unsigned int k1, unsigned int c2,  \
      unsigned int c3, double mean, double std) { rn_normal<T>(out, n, k0, k1, c2, c3, mean, std); }               \
  extern "C" __global__ void rn_trunc_normal_##S(T* out, long long n, unsigned int k0, unsigned int k1,             \
      unsigned int c2, unsigned int c3, double from, double to, double scale, double mean, double a, double b) {   \
    rn_trunc_normal<T>(out, n, k0, k1, c2, c3, from, to, scale, mean, a, b);                                        \
  }                                                                                                                 \
  extern "C" __global__ void rn_bernoulli_##S(T* out, long long n, unsigned int k0, unsigned int k1,                \
      unsigned int c2, unsigned int c3, double keep, double value) {                                                \
    rn_bernoulli<T>(out, n, k0, k1, c2, c3, keep, value);                                                           \
  }
RN_KERNELS(float, f32)
RN_KERNELS(double, f64)
