// Runs the deferred index check kernels (index_check.cu) under emu.h on small inputs and compares them with a plain
// loop: the smallest offending row-major position and its value, over strided int64 and int32 views, with an
// allowed value, several blocks (grid-stride) and no offender. Built and run by IndexCheckTest: g++ -std=c++20
// -pthread -I<kernels dir>.
#include "emu.h"
#include <random>
#include <vector>
template <class T> T atomicMin(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {}
  return old;
}
#include "eg_common.cuh"
#include "index_check.cu"
#include "egeo.h"
// The plain loop: {position, value} of the first offender in row-major order of a 2-d view, or {-1, -1}.
template <class I> std::pair<long long, long long> first(const std::vector<I>& x, long long r, long long c,
    long long sr, long long sc, long long off, long long lo, long long hi, long long allowed) {
  for (long long i = 0; i < r; i++) for (long long j = 0; j < c; j++) {
    long long v = x[off + i * sr + j * sc];
    if ((v < lo || v >= hi) && v != allowed) return {i * c + j, v};
  }
  return {-1, -1};
}
template <class I, class R, class V> void run(R range, V value, std::mt19937& rng, int bad, unsigned grid) {
  // a [40, 30] view, transposed, at offset 7 of a buffer of 7 + 1200
  std::vector<I> x(7 + 1200);
  std::uniform_int_distribution<int> U(0, 9);
  for (auto& v : x) v = U(rng) == 0 ? -100 : U(rng);
  std::uniform_int_distribution<int> P(7, 7 + 1199);
  for (int k = 0; k < bad; k++) x[P(rng)] = (k % 2 == 0) ? 10 + k : -1 - k;
  EGeo g = geo({40, 30}, {1, 40}, 7);
  unsigned long long err[2] = {~0ULL, ~0ULL};
  launch(range, grid, 64, (const I*) x.data(), g, 1200LL, 0LL, 10LL, -100LL, err);
  launch(value, 1, 64, (const I*) x.data(), g, err);
  auto want = first(x, 40, 30, 1, 40, 7, 0, 10, -100);
  CHECK((long long) err[0] == want.first && (long long) err[1] == want.second,
      "bad %d grid %u: got %lld=%lld, want %lld=%lld", bad, grid, (long long) err[0], (long long) err[1],
      want.first, want.second);
}
int main() {
  std::mt19937 rng(3);
  for (int bad : {0, 1, 5, 300}) {
    for (unsigned grid : {1u, 3u}) {
      run<long long>(index_check_range_i64, index_check_value_i64, rng, bad, grid);
      run<int>(index_check_range_i32, index_check_value_i32, rng, bad, grid);
    }
  }
  // a 0-d index (rank 0: the offset alone) that is out of range, and one that is the allowed value
  {
    long long x[3] = {1, 2, 99};
    unsigned long long err[2] = {~0ULL, ~0ULL};
    launch(index_check_range_i64, 1, 32, (const long long*) x, geo({}, {}, 2), 1LL, 0LL, 10LL, 0LL, err);
    launch(index_check_value_i64, 1, 32, (const long long*) x, geo({}, {}, 2), err);
    CHECK(err[0] == 0 && err[1] == 99, "0-d: %llu %llu", err[0], err[1]);
    unsigned long long ok[2] = {~0ULL, ~0ULL};
    launch(index_check_range_i64, 1, 32, (const long long*) x, geo({}, {}, 2), 1LL, 0LL, 10LL, 99LL, ok);
    launch(index_check_value_i64, 1, 32, (const long long*) x, geo({}, {}, 2), ok);
    CHECK(ok[0] == ~0ULL && ok[1] == ~0ULL, "allowed: %llu %llu", ok[0], ok[1]);
  }
  printf("ok (%d failures)\n", fails);
  return fails == 0 ? 0 : 1;
}
