// Lets elementwise.cu compile as host C++ (g++ -std=c++17 -ffp-contract=off) for ElementwiseHostTest: the CUDA
// qualifiers vanish, the grid is one thread that loops over every element, and the intrinsics are their IEEE
// operations (volatile keeps them from being contracted).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
struct ew_dim { unsigned x; };
static ew_dim blockIdx{0}, threadIdx{0}, blockDim{1}, gridDim{1};
inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
inline float __uint_as_float(unsigned int v) { float f; std::memcpy(&f, &v, 4); return f; }
inline unsigned int __float_as_uint(float f) { unsigned int v; std::memcpy(&v, &f, 4); return v; }
using std::isinf;
using std::signbit;
