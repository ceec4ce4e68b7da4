// Shared by D2's kernel sources (reduce.cu, indexing.cu): a strided geometry passed by value and the
// accumulator traits. Names carry an eg_ / EG prefix so they never clash with KernelCache's prelude.
#define EG_MAXR 8

// A view's geometry in elements: rank, shape, strides and offset. Written by CudaGeometry.java:
// int rank at byte 0, shape at 8, stride at 72, offset at 136; 144 bytes, 8-aligned.
struct EGeo {
  int rank;
  long long shape[EG_MAXR];
  long long stride[EG_MAXR];
  long long offset;
};

// Row-major linear index -> element offset (offset included).
__device__ __forceinline__ long long eg_at(const EGeo& g, long long i) {
  if (g.rank == 1) return g.offset + i * g.stride[0];
  long long off = g.offset;
  for (int d = g.rank - 1; d >= 0; d--) {
    long long n = g.shape[d];
    long long q = i / n;
    off += (i - q * n) * g.stride[d];
    i = q;
  }
  return off;
}

// Row-major linear index -> coordinates over g's shape.
__device__ __forceinline__ void eg_coords(const EGeo& g, long long i, long long* c) {
  for (int d = g.rank - 1; d >= 0; d--) {
    long long n = g.shape[d];
    long long q = i / n;
    c[d] = i - q * n;
    i = q;
  }
}

// Coordinates -> element offset over g's strides (offset included).
__device__ __forceinline__ long long eg_off(const EGeo& g, const long long* c) {
  long long off = g.offset;
  for (int d = 0; d < g.rank; d++) off += c[d] * g.stride[d];
  return off;
}

// Accumulator type: floating inputs accumulate in double, integer and bool inputs in 64-bit integers.
template <typename T> struct EgAcc { typedef long long type; };
template <> struct EgAcc<float> { typedef double type; };
template <> struct EgAcc<double> { typedef double type; };

template <typename A> struct EgLimits;
template <> struct EgLimits<double> {
  static __device__ __forceinline__ double lowest() { return __longlong_as_double(0xfff0000000000000LL); }
  static __device__ __forceinline__ double highest() { return __longlong_as_double(0x7ff0000000000000LL); }
};
template <> struct EgLimits<long long> {
  static __device__ __forceinline__ long long lowest() { return -9223372036854775807LL - 1; }
  static __device__ __forceinline__ long long highest() { return 9223372036854775807LL; }
};

#define EG_SUM 0
#define EG_PROD 1
#define EG_MAX 2
#define EG_MIN 3

template <int OP, typename A> __device__ __forceinline__ A eg_identity() {
  if (OP == EG_SUM) return (A) 0;
  if (OP == EG_PROD) return (A) 1;
  if (OP == EG_MAX) return EgLimits<A>::lowest();
  return EgLimits<A>::highest();
}

// One step of a reduction; MAX and MIN propagate NaN (v != v holds only for a NaN, never for integers).
template <int OP, typename A> __device__ __forceinline__ A eg_combine(A a, A b) {
  if (OP == EG_SUM) return a + b;
  if (OP == EG_PROD) return a * b;
  if (a != a) return a;
  if (b != b) return b;
  if (OP == EG_MAX) return b > a ? b : a;
  return b < a ? b : a;
}
