// A CPU stand-in for the CUDA features D2's kernel sources use, so their logic can be checked where there is no
// GPU: every block runs as blockDim std::threads meeting at a std::barrier for __syncthreads, blocks one after
// another; __shared__ arrays become statics (one block at a time uses them); atomics are std::atomic_ref. It
// checks indexing, trees, NaN rules and chunking, not speed or the GPU's memory model.
#include <thread>
#include <barrier>
#include <atomic>
#include <cmath>
#include <math.h>
#include <cstring>
#include <vector>
#include <bit>
#include <cstdio>
struct dim3e { unsigned x = 0, y = 0, z = 0; };
thread_local dim3e threadIdx, blockIdx;
dim3e blockDim, gridDim;
std::barrier<>* g_bar;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __shared__ static
inline void __syncthreads() { g_bar->arrive_and_wait(); }
inline double __longlong_as_double(long long v) { return std::bit_cast<double>(v); }
inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
inline float __fsub_rn(float a, float b) { volatile float r = a - b; return r; }
inline double __dsub_rn(double a, double b) { volatile double r = a - b; return r; }
template <class T> T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <class F, class... A> void launch(F f, unsigned grid, unsigned block, A... args) {
  gridDim.x = grid; blockDim.x = block;
  for (unsigned b = 0; b < grid; b++) {
    std::barrier<> bar(block);
    g_bar = &bar;
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < block; t++) ts.emplace_back([=] { threadIdx.x = t; blockIdx.x = b; f(args...); });
    for (auto& th : ts) th.join();
  }
}
// The drivers' checks: a failed one prints where and why and counts; a driver ends printing "ok (N failures)".
static int fails = 0;
#define CHECK(c, ...) do { if (!(c)) { fails++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)
