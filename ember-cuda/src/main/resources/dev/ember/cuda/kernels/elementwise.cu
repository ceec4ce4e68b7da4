// Ember's elementwise kernels: unary, binary, where, fill, the strided convert (copy) and the one-pass unary
// backwards, on strided operands each given as a pointer to its first element and a Geo (KernelCache's prelude:
// rank, numel, shape, stride in elements). Every operand of a launch shares the output's shape (broadcast
// operands carry stride 0), so the linear index is split into coordinates once and dotted with each operand's
// strides.
//
// Elementwise.java prepends the op codes (#define U_NEG 0 ..., B_ADD 0 ..., from the Java enums' ordinals) and
// appends the one instantiation a compilation needs, e.g. EW_UNARY(ew_unary_f32_f32, float, float): each
// (kernel, dtypes) pair is its own small module, compiled on first use and cached.
//
// Semantics are the CPU backend's (dev.ember.backend.cpu.ScalarKernels and CpuBackend): F32 math stays in float
// (expf, tanhf, ... without fast-math) when every operand is F32, anything else computes in double as the CPU's
// generic path does; integer results of binary ops compute in 64-bit integers with Java's wrap-around, and
// float-to-integer conversions are Java's (truncate toward zero, saturate, NaN -> 0). Products whose rounding
// is part of a contract use __fmul_rn/__fadd_rn so that no multiply-add is contracted into an fma.

typedef unsigned char ebool;
// The 16-bit floats are storage types: their bits in a struct, so no C++ arithmetic or comparison applies to them
// by accident. Every kernel widens them to float on load and rounds once on store (ew_cv).
struct ebf16 { unsigned short bits; };
struct ef16 { unsigned short bits; };

template <typename A, typename B> struct ew_same { static constexpr bool value = false; };
template <typename A> struct ew_same<A, A> { static constexpr bool value = true; };
template <typename T> struct ew_floating { static constexpr bool value = ew_same<T, float>::value || ew_same<T, double>::value; };
template <typename T> struct ew_half { static constexpr bool value = ew_same<T, ebf16>::value || ew_same<T, ef16>::value; };

#define EW_LLONG_MAX 9223372036854775807LL
#define EW_LLONG_MIN (-EW_LLONG_MAX - 1LL)
#define EW_INT_MAX 2147483647
#define EW_INT_MIN (-EW_INT_MAX - 1)
#define EW_NAN __longlong_as_double(0x7ff8000000000000LL)

// ------------------------------------------------------------------------------------------ indexing

// Offsets of linear element i in operands that share g0's shape. Rank 1 (every contiguous or evenly strided
// operand set after Elementwise's coalescing) needs no division; below 2^31 elements the coordinates are split
// with 32-bit division, several times cheaper than 64-bit.
#define EW_SPLIT(BODY)                                                                   \
  if (g0.numel <= 2147483647LL) {                                                        \
    unsigned int ii = (unsigned int)i;                                                   \
    for (int d = g0.rank - 1; d >= 0; --d) {                                             \
      unsigned int s = (unsigned int)g0.shape[d];                                        \
      unsigned int q = ii / s;                                                           \
      long long r = (long long)(ii - q * s);                                             \
      BODY;                                                                              \
      ii = q;                                                                            \
    }                                                                                    \
  } else {                                                                               \
    long long ii = i;                                                                    \
    for (int d = g0.rank - 1; d >= 0; --d) {                                             \
      long long s = g0.shape[d];                                                         \
      long long q = ii / s;                                                              \
      long long r = ii - q * s;                                                          \
      BODY;                                                                              \
      ii = q;                                                                            \
    }                                                                                    \
  }

__device__ __forceinline__ void ew_off1(const Geo& g0, long long i, long long& o0) {
  o0 = 0;
  if (g0.rank == 1) { o0 += i * g0.stride[0]; return; }
  EW_SPLIT(o0 += r * g0.stride[d])
}

__device__ __forceinline__ void ew_off2(const Geo& g0, const Geo& g1, long long i, long long& o0, long long& o1) {
  o0 = 0;
  o1 = 0;
  if (g0.rank == 1) { o0 += i * g0.stride[0]; o1 += i * g1.stride[0]; return; }
  EW_SPLIT(o0 += r * g0.stride[d]; o1 += r * g1.stride[d])
}

__device__ __forceinline__ void ew_off3(const Geo& g0, const Geo& g1, const Geo& g2, long long i, long long& o0,
    long long& o1, long long& o2) {
  o0 = 0;
  o1 = 0;
  o2 = 0;
  if (g0.rank == 1) { o0 += i * g0.stride[0]; o1 += i * g1.stride[0]; o2 += i * g2.stride[0]; return; }
  EW_SPLIT(o0 += r * g0.stride[d]; o1 += r * g1.stride[d]; o2 += r * g2.stride[d])
}

__device__ __forceinline__ void ew_off4(const Geo& g0, const Geo& g1, const Geo& g2, const Geo& g3, long long i,
    long long& o0, long long& o1, long long& o2, long long& o3) {
  o0 = 0;
  o1 = 0;
  o2 = 0;
  o3 = 0;
  if (g0.rank == 1) {
    o0 += i * g0.stride[0]; o1 += i * g1.stride[0]; o2 += i * g2.stride[0]; o3 += i * g3.stride[0];
    return;
  }
  EW_SPLIT(o0 += r * g0.stride[d]; o1 += r * g1.stride[d]; o2 += r * g2.stride[d]; o3 += r * g3.stride[d])
}

#define EW_GRID_LOOP(n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)blockDim.x * gridDim.x)

// ------------------------------------------------------------------------------------------ conversions

// Java's (long) and (int) of a double: toward zero, saturating, NaN -> 0.
__device__ __forceinline__ long long ew_d2l(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775807.0) return EW_LLONG_MAX;
  if (d <= -9223372036854775808.0) return EW_LLONG_MIN;
  return (long long)d;
}

__device__ __forceinline__ int ew_d2i(double d) {
  if (d != d) return 0;
  if (d >= 2147483647.0) return EW_INT_MAX;
  if (d <= -2147483648.0) return EW_INT_MIN;
  return (int)d;
}

// The 16-bit floats, bit for bit as dev.ember.tensor.HalfFloats: widening is exact (an F16 NaN keeps sign and
// payload and is made quiet); narrowing a float rounds to nearest even, every NaN gives BF16 0x7FC0 or F16
// sign | 0x7E00, and overflow gives infinity. Integer arithmetic only, so the host test runs the same code.
__device__ __forceinline__ float ew_widen(ebf16 h) { return __uint_as_float(((unsigned int)h.bits) << 16); }

__device__ __forceinline__ float ew_widen(ef16 h) {
  unsigned int sign = ((unsigned int)h.bits & 0x8000u) << 16;
  unsigned int a = (unsigned int)h.bits & 0x7FFFu;
  if (a >= 0x7C00u) return __uint_as_float(sign | 0x7F800000u | (a > 0x7C00u ? 0x400000u | ((a & 0x3FFu) << 13) : 0u));
  if (a >= 0x400u) return __uint_as_float(sign | ((a << 13) + 0x38000000u)); // rebias the exponent: 127 - 15
  float m = (float)a * 5.9604644775390625e-8f; // a subnormal: a * 2^-24, exact
  return sign ? -m : m;
}

__device__ __forceinline__ ebf16 ew_to_bf16(float f) {
  unsigned int b = __float_as_uint(f);
  ebf16 h;
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) { h.bits = 0x7FC0; return h; }
  h.bits = (unsigned short)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16); // a carry into the exponent rounds up to inf
  return h;
}

__device__ __forceinline__ ef16 ew_to_f16(float f) {
  unsigned int b = __float_as_uint(f);
  unsigned int sign = (b >> 16) & 0x8000u;
  unsigned int a = b & 0x7FFFFFFFu;
  ef16 h;
  if (a > 0x7F800000u) { h.bits = (unsigned short)(sign | 0x7E00u); return h; }
  if (a >= 0x477FF000u) { h.bits = (unsigned short)(sign | 0x7C00u); return h; } // 65520 and above round to inf
  if (a >= 0x38800000u) { // a normal F16: drop 13 mantissa bits, to nearest even (a carry moves the exponent)
    unsigned int r = a - 0x38000000u;
    h.bits = (unsigned short)(sign | ((r + 0xFFFu + ((r >> 13) & 1u)) >> 13));
    return h;
  }
  if (a <= 0x33000000u) { h.bits = (unsigned short)sign; return h; } // at most 2^-25: rounds to zero (ties to even)
  unsigned int m = (a & 0x7FFFFFu) | 0x800000u; // a subnormal F16: m * 2^(e - 150) in units of 2^-24
  unsigned int s = 126u - (a >> 23);            // 14..24
  h.bits = (unsigned short)(sign | ((m + (1u << (s - 1)) - 1u + ((m >> s) & 1u)) >> s));
  return h;
}

template <typename H> __device__ __forceinline__ H ew_narrow(float f);
template <> __device__ __forceinline__ ebf16 ew_narrow<ebf16>(float f) { return ew_to_bf16(f); }
template <> __device__ __forceinline__ ef16 ew_narrow<ef16>(float f) { return ew_to_f16(f); }

// v converted to TO as the CPU's Storage.setDouble/setLong and its copy convert: BOOL is v != 0 (NaN -> 1),
// floats to integers as ew_d2l/ew_d2i, long to int wraps, everything else as C++ (round to nearest). A 16-bit
// float is widened to float first; anything stored to one goes through float ((float) v, then one rounding), as
// the CPU's setDouble/setLong store them.
template <typename TO, typename TI>
__device__ __forceinline__ TO ew_cv(TI v) {
  if constexpr (ew_half<TI>::value) {
    return ew_cv<TO>(ew_widen(v));
  } else if constexpr (ew_half<TO>::value) {
    return ew_narrow<TO>((float)v);
  } else if constexpr (ew_same<TO, ebool>::value) {
    return v != (TI)0 ? (ebool)1 : (ebool)0;
  } else if constexpr (ew_floating<TI>::value && ew_same<TO, long long>::value) {
    return ew_d2l((double)v);
  } else if constexpr (ew_floating<TI>::value && ew_same<TO, int>::value) {
    return ew_d2i((double)v);
  } else {
    return (TO)v;
  }
}

// ------------------------------------------------------------------------------------------ math

__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double m_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float m_expm1(float x) { return expm1f(x); }
__device__ __forceinline__ double m_expm1(double x) { return expm1(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_sin(float x) { return sinf(x); }
__device__ __forceinline__ double m_sin(double x) { return sin(x); }
__device__ __forceinline__ float m_cos(float x) { return cosf(x); }
__device__ __forceinline__ double m_cos(double x) { return cos(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_erfc(float x) { return erfcf(x); }
__device__ __forceinline__ double m_erfc(double x) { return erfc(x); }
__device__ __forceinline__ float m_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double m_abs(double x) { return fabs(x); }
__device__ __forceinline__ float m_floor(float x) { return floorf(x); }
__device__ __forceinline__ double m_floor(double x) { return floor(x); }
__device__ __forceinline__ float m_ceil(float x) { return ceilf(x); }
__device__ __forceinline__ double m_ceil(double x) { return ceil(x); }
__device__ __forceinline__ float m_rint(float x) { return rintf(x); }   // round half to even, as Math.rint
__device__ __forceinline__ double m_rint(double x) { return rint(x); }
__device__ __forceinline__ float m_trunc(float x) { return truncf(x); }
__device__ __forceinline__ double m_trunc(double x) { return trunc(x); }
__device__ __forceinline__ float m_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double m_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float m_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double m_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float m_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double m_add(double a, double b) { return __dadd_rn(a, b); }

// C's pow, as PyTorch and the CPU's kernels (which take C99's special cases where Java's Math.pow differs):
// pow(1, y) = 1 for every y, NaN included, and pow(-1, +-inf) = 1.
template <typename T>
__device__ __forceinline__ T ew_pow(T x, T y) {
  return m_pow(x, y);
}

// a^b by repeated squaring, each product wrapping in 64 bits (ScalarKernels.powInteger, PyTorch's powi); a negative
// exponent gives 1 for a base of 1, +-1 for -1 by its parity, else 0.
__device__ __forceinline__ long long ew_powi(long long a, long long b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) == 0 ? 1 : -1) : 0;
  unsigned long long r = 1ULL, x = (unsigned long long)a;
  while (b != 0) {
    if (b & 1) r *= x;
    b >>= 1;
    x *= x;
  }
  return (long long)r;
}

// Java's Math.max/min: NaN wins, and +0 is larger than -0.
template <typename T>
__device__ __forceinline__ T ew_max(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == (T)0 && b == (T)0) return signbit(a) ? b : a;
  return a >= b ? a : b;
}

template <typename T>
__device__ __forceinline__ T ew_min(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == (T)0 && b == (T)0) return signbit(a) ? a : b;
  return a <= b ? a : b;
}

// Two branches so that exp never overflows (ScalarKernels.sigmoid).
template <typename T>
__device__ __forceinline__ T ew_sigmoid(T x) {
  if (x >= (T)0) return (T)1 / ((T)1 + m_exp(-x));
  T e = m_exp(x);
  return e / ((T)1 + e);
}

// The unary ops of dev.ember.backend.UnaryOp, computed in T (float or double); p is the op's parameter.
template <typename T>
__device__ __forceinline__ T ew_unary_op(int op, T x, T p) {
  switch (op) {
    case U_NEG: return -x;
    case U_ABS: return m_abs(x);
    case U_SIGN: return x > (T)0 ? (T)1 : x < (T)0 ? (T)-1 : x;   // keeps NaN and the sign of zero (Math.signum)
    case U_EXP: return m_exp(x);
    case U_LOG: return m_log(x);
    case U_LOG1P: return m_log1p(x);
    case U_EXPM1: return m_expm1(x);
    case U_SQRT: return m_sqrt(x);
    case U_RSQRT: return (T)1 / m_sqrt(x);
    case U_SQUARE: return x * x;
    case U_RECIPROCAL: return (T)1 / x;
    case U_SIN: return m_sin(x);
    case U_COS: return m_cos(x);
    case U_TANH: return m_tanh(x);
    case U_SIGMOID: return ew_sigmoid(x);
    case U_RELU: return x <= (T)0 ? (T)0 : x;                     // NaN stays NaN, -0 becomes +0
    case U_LEAKY_RELU: return x > (T)0 ? x : p * x;
    case U_ELU: return x > (T)0 ? x : p * m_expm1(x);
    case U_GELU: return (T)0.5 * x * m_erfc(-x * (T)0.7071067811865476);   // 0.5 x (1 + erf(x / sqrt2))
    case U_GELU_TANH: {                                                      // 0.5 (1 + tanh(u)) = sigmoid(2u)
      T u = (T)0.7978845608028654 * (x + (T)0.044715 * x * x * x);
      return x * ew_sigmoid((T)2 * u);
    }
    case U_SILU: return x * ew_sigmoid(x);
    case U_SOFTPLUS: {                                                       // PyTorch's threshold 20
      T bx = p * x;
      return bx > (T)20 ? x : m_log1p(m_exp(bx)) / p;
    }
    case U_POW_SCALAR: return ew_pow(x, p);
    case U_FLOOR: return m_floor(x);
    case U_CEIL: return m_ceil(x);
    case U_ROUND: return m_rint(x);
    case U_TRUNC: return m_trunc(x);
    default: return (T)EW_NAN;
  }
}

// Arithmetic binary ops in T (float or double).
template <typename T>
__device__ __forceinline__ T ew_arith(int op, T a, T b) {
  switch (op) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_POW: return ew_pow(a, b);
    case B_MAXIMUM: return ew_max(a, b);
    case B_MINIMUM: return ew_min(a, b);
    default: return (T)EW_NAN;
  }
}

// Arithmetic binary ops on 64-bit integers as ScalarKernels.applyInteger: Java's wrap-around (done in unsigned,
// where C++ defines it), x / 0 = 0, truncating division (MIN / -1 wraps to MIN), pow by squaring (ew_powi).
__device__ __forceinline__ long long ew_arith_l(int op, long long a, long long b) {
  unsigned long long ua = (unsigned long long)a, ub = (unsigned long long)b;
  switch (op) {
    case B_ADD: return (long long)(ua + ub);
    case B_SUB: return (long long)(ua - ub);
    case B_MUL: return (long long)(ua * ub);
    case B_DIV: return b == 0 ? 0 : b == -1 ? (long long)(0ULL - ua) : a / b;
    case B_POW: return ew_powi(a, b);
    case B_MAXIMUM: return a >= b ? a : b;
    case B_MINIMUM: return a <= b ? a : b;
    default: return 0;
  }
}

// Comparisons and logical ops, on the operands as they are (no conversion), as 1 or 0.
template <typename T>
__device__ __forceinline__ int ew_test(int op, T a, T b) {
  switch (op) {
    case B_EQ: return a == b;
    case B_NE: return a != b;
    case B_LT: return a < b;
    case B_LE: return a <= b;
    case B_GT: return a > b;
    case B_GE: return a >= b;
    case B_LOGICAL_AND: return (a != (T)0) & (b != (T)0);
    case B_LOGICAL_OR: return (a != (T)0) | (b != (T)0);
    case B_LOGICAL_XOR: return (a != (T)0) ^ (b != (T)0);
    default: return 0;
  }
}

// ------------------------------------------------------------------------------------------ kernels

// The unary ops defined on integers, in 64-bit two's complement (ScalarKernels.applyInteger): neg and abs of the
// most negative value give it back, a square past the range wraps; the rounding ops leave an integer as it is.
__device__ __forceinline__ bool ew_integer_unary(int op) {
  return op == U_NEG || op == U_ABS || op == U_SIGN || op == U_SQUARE || op == U_RELU || op == U_FLOOR
      || op == U_CEIL || op == U_ROUND || op == U_TRUNC;
}

__device__ __forceinline__ long long ew_unary_l(int op, long long x) {
  unsigned long long ux = (unsigned long long)x;
  switch (op) {
    case U_NEG: return (long long)(0ULL - ux);
    case U_ABS: return x < 0 ? (long long)(0ULL - ux) : x;
    case U_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
    case U_SQUARE: return (long long)(ux * ux);
    case U_RELU: return x <= 0 ? 0 : x;
    default: return x;
  }
}

// out = op(x): in float when both are F32, in 64-bit integers when both are integers (or BOOL) and the op is
// defined on them (the CPU's getLong/applyInteger/setLong: a narrower out keeps the low bits), else in double (the
// CPU's getDouble/apply/setDouble).
template <typename TI, typename TO>
__device__ __forceinline__ void ew_unary(const Geo& go, const Geo& gx, TO* out, const TI* x, int op, double p) {
  EW_GRID_LOOP(go.numel) {
    long long oo, xo;
    ew_off2(go, gx, i, oo, xo);
    if constexpr (ew_same<TI, float>::value && ew_same<TO, float>::value) {
      out[oo] = ew_unary_op<float>(op, x[xo], (float)p);
    } else if constexpr (!ew_floating<TI>::value && !ew_half<TI>::value && !ew_floating<TO>::value
        && !ew_half<TO>::value) {
      if (ew_integer_unary(op)) out[oo] = ew_cv<TO>(ew_unary_l(op, ew_cv<long long>(x[xo])));
      else out[oo] = ew_cv<TO>(ew_unary_op<double>(op, ew_cv<double>(x[xo]), p));
    } else {
      out[oo] = ew_cv<TO>(ew_unary_op<double>(op, ew_cv<double>(x[xo]), p));
    }
  }
}

// out = a op b. Comparisons and logical ops on the values as they are when a and b share a dtype, else as
// doubles (the CPU's getDouble); arithmetic in float when all three are F32, in 64-bit integers when out is an
// integer or BOOL (the CPU's getLong and integerOp), else in double.
template <typename TA, typename TB, typename TO>
__device__ __forceinline__ void ew_binary(const Geo& go, const Geo& ga, const Geo& gb, TO* out, const TA* a,
    const TB* b, int op) {
  EW_GRID_LOOP(go.numel) {
    long long oo, ao, bo;
    ew_off3(go, ga, gb, i, oo, ao, bo);
    TA va = a[ao];
    TB vb = b[bo];
    if (op >= B_EQ) {
      if constexpr (ew_same<TA, TB>::value && !ew_half<TA>::value) out[oo] = ew_cv<TO>(ew_test<TA>(op, va, vb));
      else if constexpr (!ew_floating<TA>::value && !ew_half<TA>::value && !ew_floating<TB>::value
          && !ew_half<TB>::value) { // two integer dtypes: as longs, exact beyond 2^53 (the CPU's applyInteger)
        out[oo] = ew_cv<TO>(ew_test<long long>(op, ew_cv<long long>(va), ew_cv<long long>(vb)));
      }
      else out[oo] = ew_cv<TO>(ew_test<double>(op, ew_cv<double>(va), ew_cv<double>(vb)));
    } else if constexpr (ew_same<TA, float>::value && ew_same<TB, float>::value && ew_same<TO, float>::value) {
      out[oo] = ew_arith<float>(op, va, vb);
    } else if constexpr (!ew_floating<TO>::value) {
      out[oo] = ew_cv<TO>(ew_arith_l(op, ew_cv<long long>(va), ew_cv<long long>(vb)));
    } else {
      out[oo] = ew_cv<TO>(ew_arith<double>(op, ew_cv<double>(va), ew_cv<double>(vb)));
    }
  }
}

// out = cond != 0 ? a : b, the chosen value converted to out's dtype (a no-op when they share it).
template <typename TC, typename TA, typename TB, typename TO>
__device__ __forceinline__ void ew_where(const Geo& go, const Geo& gc, const Geo& ga, const Geo& gb, TO* out,
    const TC* c, const TA* a, const TB* b) {
  EW_GRID_LOOP(go.numel) {
    long long oo, co, ao, bo;
    ew_off4(go, gc, ga, gb, i, oo, co, ao, bo);
    out[oo] = ew_cv<ebool>(c[co]) ? ew_cv<TO>(a[ao]) : ew_cv<TO>(b[bo]);
  }
}

// dst = src converted to dst's dtype (ew_cv).
template <typename TS, typename TD>
__device__ __forceinline__ void ew_convert(const Geo& gd, const Geo& gs, TD* dst, const TS* src) {
  EW_GRID_LOOP(gd.numel) {
    long long d, s;
    ew_off2(gd, gs, i, d, s);
    dst[d] = ew_cv<TD>(src[s]);
  }
}

// Every element of dst = value converted to dst's dtype (F32: rounded to float, as (float) value).
template <typename T>
__device__ __forceinline__ void ew_fill(const Geo& gd, T* dst, double value) {
  T v = ew_cv<T>(value);
  EW_GRID_LOOP(gd.numel) {
    long long d;
    ew_off1(gd, i, d);
    dst[d] = v;
  }
}

// The one-pass backward of RELU (ref = x), TANH or SIGMOID (ref = the output), each product and sum rounded as
// the composite's tensor ops round them (ScalarKernels.unaryBackward).
template <typename T>
__device__ __forceinline__ void ew_unary_backward(const Geo& go, const Geo& gg, const Geo& gr, T* out,
    const T* g, const T* ref, int op) {
  EW_GRID_LOOP(go.numel) {
    long long oo, go_, ro;
    ew_off3(go, gg, gr, i, oo, go_, ro);
    T gv = g[go_], r = ref[ro];
    T v;
    if (op == U_RELU) v = m_mul(gv, r > (T)0 ? (T)1 : (T)0);
    else if (op == U_TANH) v = m_mul(gv, m_add(-m_mul(r, r), (T)1));
    else v = m_mul(gv, m_mul(r, m_add(-r, (T)1)));
    out[oo] = v;
  }
}

#define EW_UNARY(NAME, TI, TO)                                                                          \
  extern "C" __global__ void NAME(Geo go, Geo gx, TO* out, const TI* x, int op, double p) {            \
    ew_unary<TI, TO>(go, gx, out, x, op, p);                                                             \
  }
#define EW_BINARY(NAME, TA, TB, TO)                                                                     \
  extern "C" __global__ void NAME(Geo go, Geo ga, Geo gb, TO* out, const TA* a, const TB* b, int op) { \
    ew_binary<TA, TB, TO>(go, ga, gb, out, a, b, op);                                                    \
  }
#define EW_WHERE(NAME, TC, TA, TB, TO)                                                                  \
  extern "C" __global__ void NAME(Geo go, Geo gc, Geo ga, Geo gb, TO* out, const TC* c, const TA* a,   \
      const TB* b) {                                                                                     \
    ew_where<TC, TA, TB, TO>(go, gc, ga, gb, out, c, a, b);                                              \
  }
#define EW_CONVERT(NAME, TS, TD)                                                                        \
  extern "C" __global__ void NAME(Geo gd, Geo gs, TD* dst, const TS* src) {                            \
    ew_convert<TS, TD>(gd, gs, dst, src);                                                                \
  }
#define EW_FILL(NAME, T)                                                                                \
  extern "C" __global__ void NAME(Geo gd, T* dst, double value) { ew_fill<T>(gd, dst, value); }
#define EW_UNARY_BACKWARD(NAME, T)                                                                      \
  extern "C" __global__ void NAME(Geo go, Geo gg, Geo gr, T* out, const T* g, const T* ref, int op) {  \
    ew_unary_backward<T>(go, gg, gr, out, g, ref, op);                                                   \
  }
