// Runs the reduction and indexing kernels (reduce.cu, indexing.cu) under emu.h on small inputs and compares them
// with plain loops. Built and run by KernelEmulationTest: g++ -std=c++20 -pthread -I<kernels dir>.
#include "emu.h"
#define EG_TYPE_f32 1
#define EG_TYPE_f64 1
#define EG_TYPE_i64 1
#define EG_TYPE_i32 1
#define EG_TYPE_b8 1
#include "eg_common.cuh"
#include "reduce.cu"
// indexing.cu instantiates moves by element size: float32 and int32 share u32, float64 and int64 u64
#undef EG_TYPE_i32
#undef EG_TYPE_f64
#include "indexing.cu"
#include <cassert>
#include <random>
#include <algorithm>
#include "egeo.h"
int main() {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> U(-1, 1);
  // 1. block sum rows [5, 300] over axis 1, grid 2 (grid-stride)
  {
    std::vector<float> x(5 * 300), out(5, -99);
    for (auto& v : x) v = U(rng);
    launch(reduce_block_sum_f32_f32, 2, 256, x.data(), out.data(), (double*) nullptr, geo({5}, {300}, 0), geo({300}, {1}, 0), geo({5}, {1}, 0), 5LL, 300LL, 300LL, 1LL);
    for (int r = 0; r < 5; r++) { double s = 0; for (int j = 0; j < 300; j++) s += x[r * 300 + j]; CHECK(std::fabs(s - out[r]) < 1e-5, "row %d %f vs %f", r, s, out[r]); }
  }
  // 2. split: 2 rows of 1000, 4 chunks of 250, then finish
  {
    std::vector<float> x(2 * 1000), out(2, -99); std::vector<double> part(8, -7);
    for (auto& v : x) v = U(rng);
    launch(reduce_block_sum_f32_f32, 3, 64, x.data(), out.data(), part.data(), geo({2}, {1000}, 0), geo({1000}, {1}, 0), geo({2}, {1}, 0), 2LL, 1000LL, 250LL, 4LL);
    CHECK(out[0] == -99, "split must not write out");
    launch(reduce_finish_sum_f32_f32, 1, 32, (const double*) part.data(), out.data(), geo({2}, {1}, 0), 2LL, 4LL);
    for (int r = 0; r < 2; r++) { double s = 0; for (int j = 0; j < 1000; j++) s += x[r * 1000 + j]; CHECK(std::fabs(s - out[r]) < 1e-5, "split row %d %f vs %f", r, s, out[r]); }
  }
  // 3. thread max with NaN, columns: x [40, 7] over axis 0 -> outer [7] stride 1, inner [40] stride 7; and block path
  {
    std::vector<float> x(40 * 7), out(7), out2(7);
    for (auto& v : x) v = U(rng);
    x[3 * 7 + 2] = NAN;
    launch(reduce_thread_max_f32_f32, 1, 32, x.data(), out.data(), geo({7}, {1}, 0), geo({40}, {7}, 0), geo({7}, {1}, 0), 7LL, 40LL);
    launch(reduce_block_max_f32_f32, 7, 64, x.data(), out2.data(), (double*) nullptr, geo({7}, {1}, 0), geo({40}, {7}, 0), geo({7}, {1}, 0), 7LL, 40LL, 40LL, 1LL);
    for (int c = 0; c < 7; c++) {
      float m = -INFINITY; bool nan = false;
      for (int r = 0; r < 40; r++) { float v = x[r * 7 + c]; if (std::isnan(v)) nan = true; else m = std::max(m, v); }
      if (nan) { CHECK(std::isnan(out[c]) && std::isnan(out2[c]), "col %d NaN", c); }
      else { CHECK(out[c] == m && out2[c] == m, "col %d max %f %f %f", c, m, out[c], out2[c]); }
    }
  }
  // 3b. bool any/all and int sums
  {
    unsigned char b[6] = {0, 0, 1, 1, 1, 1}; unsigned char any[2], all[2]; long long s[2];
    launch(reduce_thread_max_b8_b8, 1, 32, (const unsigned char*) b, any, geo({2}, {3}, 0), geo({3}, {1}, 0), geo({2}, {1}, 0), 2LL, 3LL);
    launch(reduce_thread_min_b8_b8, 1, 32, (const unsigned char*) b, all, geo({2}, {3}, 0), geo({3}, {1}, 0), geo({2}, {1}, 0), 2LL, 3LL);
    launch(reduce_thread_sum_b8_i64, 1, 32, (const unsigned char*) b, s, geo({2}, {3}, 0), geo({3}, {1}, 0), geo({2}, {1}, 0), 2LL, 3LL);
    CHECK(any[0] == 1 && any[1] == 1 && all[0] == 0 && all[1] == 1 && s[0] == 1 && s[1] == 3, "bool %d %d %d %d %lld %lld", any[0], any[1], all[0], all[1], s[0], s[1]);
    int xi[4] = {5, -7, 2, 9}; long long p[1];
    launch(reduce_thread_prod_i32_i64, 1, 32, (const int*) xi, p, geo({}, {}, 0), geo({4}, {1}, 0), geo({}, {}, 0), 1LL, 4LL);
    CHECK(p[0] == 5LL * -7 * 2 * 9, "prod %lld", p[0]);
  }
  // 4. argmax/argmin with ties and NaN, rows [3, 50] along axis 1, and along axis 0 (step 50)
  {
    std::vector<float> x(3 * 50); for (auto& v : x) v = std::floor(U(rng) * 3);
    x[1 * 50 + 30] = NAN; x[1 * 50 + 40] = NAN;
    long long amax[3], amin[3];
    launch(argmax_f32, 2, 64, (const float*) x.data(), amax, geo({3}, {50}, 0), geo({3}, {1}, 0), 3LL, 50LL, 1LL);
    launch(argmin_f32, 2, 64, (const float*) x.data(), amin, geo({3}, {50}, 0), geo({3}, {1}, 0), 3LL, 50LL, 1LL);
    for (int r = 0; r < 3; r++) {
      int bm = 0, bn = 0; bool nan = false;
      for (int j = 0; j < 50 && !nan; j++) { float v = x[r * 50 + j]; if (std::isnan(v)) { bm = bn = j; nan = true; break; } if (v > x[r * 50 + bm]) bm = j; if (v < x[r * 50 + bn]) bn = j; }
      CHECK(amax[r] == bm && amin[r] == bn, "arg row %d: max %lld vs %d, min %lld vs %d", r, amax[r], bm, amin[r], bn);
    }
    long long cmax[50];
    launch(argmax_f32, 50, 32, (const float*) x.data(), cmax, geo({50}, {1}, 0), geo({50}, {1}, 0), 50LL, 3LL, 50LL);
    for (int c = 0; c < 50; c++) {
      int bm = 0; for (int r = 0; r < 3; r++) { float v = x[r * 50 + c]; if (std::isnan(v)) { bm = r; break; } if (v > x[bm * 50 + c]) bm = r; }
      CHECK(cmax[c] == bm, "col arg %d: %lld vs %d", c, cmax[c], bm);
    }
  }
  // 5. softmax and log_softmax rows [4, 37] along axis 1; axis 0 with strided out
  {
    std::vector<float> x(4 * 37), y(4 * 37), ly(4 * 37);
    for (auto& v : x) v = 5 * U(rng);
    launch(softmax_f32, 3, 64, (const float*) x.data(), y.data(), geo({4}, {37}, 0), geo({4}, {37}, 0), 4LL, 37LL, 1LL, 1LL, 0);
    launch(softmax_f32, 3, 64, (const float*) x.data(), ly.data(), geo({4}, {37}, 0), geo({4}, {37}, 0), 4LL, 37LL, 1LL, 1LL, 1);
    for (int r = 0; r < 4; r++) {
      double m = -1e30, s = 0; for (int j = 0; j < 37; j++) m = std::max(m, (double) x[r * 37 + j]);
      for (int j = 0; j < 37; j++) s += std::exp(x[r * 37 + j] - m);
      for (int j = 0; j < 37; j++) {
        double e = std::exp(x[r * 37 + j] - m) / s;
        CHECK(std::fabs(e - y[r * 37 + j]) < 1e-6, "softmax %d %d", r, j);
        CHECK(std::fabs(std::log(e) - ly[r * 37 + j]) < 1e-5, "log_softmax %d %d %f %f", r, j, std::log(e), ly[r * 37 + j]);
      }
    }
    // axis 0: rows are columns of x (outer [37] stride 1, n 4 step 37), out transposed [37, 4] contiguous
    std::vector<float> yt(37 * 4);
    launch(softmax_f32, 5, 32, (const float*) x.data(), yt.data(), geo({37}, {1}, 0), geo({37}, {4}, 0), 37LL, 4LL, 37LL, 1LL, 0);
    for (int c = 0; c < 37; c++) {
      double m = -1e30, s = 0; for (int r = 0; r < 4; r++) m = std::max(m, (double) x[r * 37 + c]);
      for (int r = 0; r < 4; r++) s += std::exp(x[r * 37 + c] - m);
      for (int r = 0; r < 4; r++) CHECK(std::fabs(std::exp(x[r * 37 + c] - m) / s - yt[c * 4 + r]) < 1e-6, "softmax axis0 %d %d", c, r);
    }
  }
  // 6. softmax backward pieces: prep (g*y), finish y*(g - s)
  {
    float g[6] = {1, 2, 3, 4, 5, 6}, y[6] = {.1f, .2f, .7f, .3f, .3f, .4f}, o[6], s[2];
    launch(softmax_bwd_prep_f32, 1, 32, (const float*) g, (const float*) y, o, 6LL, 0);
    launch(reduce_thread_sum_f32_f32, 1, 32, (const float*) o, s, geo({2}, {3}, 0), geo({3}, {1}, 0), geo({2}, {1}, 0), 2LL, 3LL);
    launch(softmax_bwd_finish_f32, 1, 32, (const float*) g, (const float*) y, (const float*) s, o, 6LL, 3LL, 0);
    for (int r = 0; r < 2; r++) { float ss = 0; for (int j = 0; j < 3; j++) ss += g[r * 3 + j] * y[r * 3 + j];
      for (int j = 0; j < 3; j++) CHECK(std::fabs(y[r * 3 + j] * (g[r * 3 + j] - ss) - o[r * 3 + j]) < 1e-6, "smb %d %d", r, j); }
  }
  // 7. cumsum along axis 0 of [4, 3] (outer [3] stride 1, n 4 step 3) and bool -> i64
  {
    float x[12]; for (int i = 0; i < 12; i++) x[i] = i * 0.5f - 2; float o[12];
    launch(cumsum_f32_f32, 1, 32, (const float*) x, o, geo({3}, {1}, 0), geo({3}, {1}, 0), 3LL, 4LL, 3LL, 3LL);
    for (int c = 0; c < 3; c++) { float acc = 0; for (int r = 0; r < 4; r++) { acc += x[r * 3 + c]; CHECK(o[r * 3 + c] == acc, "cumsum %d %d", r, c); } }
    unsigned char b[4] = {1, 0, 1, 1}; long long ob[4];
    launch(cumsum_b8_i64, 1, 32, (const unsigned char*) b, ob, geo({}, {}, 0), geo({}, {}, 0), 1LL, 4LL, 1LL, 1LL);
    CHECK(ob[0] == 1 && ob[1] == 1 && ob[2] == 2 && ob[3] == 3, "bool cumsum");
  }
  // 8. allfinite
  {
    float x[100]; for (int i = 0; i < 100; i++) x[i] = i; int flag = 1;
    launch(allfinite_f32, 2, 32, (const unsigned int*) x, 100LL, &flag); CHECK(flag == 1, "finite");
    x[99] = INFINITY; launch(allfinite_f32, 2, 32, (const unsigned int*) x, 100LL, &flag); CHECK(flag == 0, "inf");
    double d[3] = {1, NAN, 2}; flag = 1; launch(allfinite_f64, 1, 32, (const unsigned long long*) d, 3LL, &flag); CHECK(flag == 0, "nan64");
  }
  // 9. gather dim 1: x [3, 5] at offset 2, index [3, 4]
  {
    float xs[17]; for (int i = 0; i < 17; i++) xs[i] = i; long long idx[12]; float out[12];
    for (int i = 0; i < 12; i++) idx[i] = (i * 7) % 5;
    launch(gather_u32_i64, 1, 32, (const unsigned int*) xs, (const long long*) idx, (unsigned int*) out, geo({3, 4}, {5, 1}, 2), geo({3, 4}, {4, 1}, 0), geo({3, 4}, {4, 1}, 0), 1, 12LL, 5LL);
    for (int r = 0; r < 3; r++) for (int j = 0; j < 4; j++) CHECK(out[r * 4 + j] == xs[2 + r * 5 + idx[r * 4 + j]], "gather %d %d", r, j);
    // out-of-range indices (which the op layer's check reports) are clamped into the row: no read outside x
    idx[0] = -9; idx[5] = 5; idx[11] = 1LL << 40;
    launch(gather_u32_i64, 1, 32, (const unsigned int*) xs, (const long long*) idx, (unsigned int*) out, geo({3, 4}, {5, 1}, 2), geo({3, 4}, {4, 1}, 0), geo({3, 4}, {4, 1}, 0), 1, 12LL, 5LL);
    CHECK(out[0] == xs[2] && out[5] == xs[2 + 5 + 4] && out[11] == xs[2 + 10 + 4], "gather clamps %f %f %f", out[0], out[5], out[11]);
  }
  // 10. scatter dim 0 into out [4, 3] (distinct), scatter_add with duplicates
  {
    float out[12] = {0}; long long idx[6] = {3, 0, 1, 1, 2, 0}; float src[6] = {1, 2, 3, 4, 5, 6};
    launch(scatter_u32_i64, 1, 32, (unsigned int*) out, (const long long*) idx, (const unsigned int*) src, geo({2, 3}, {3, 1}, 0), geo({2, 3}, {3, 1}, 0), geo({2, 3}, {3, 1}, 0), 0, 6LL, 4LL);
    CHECK(out[3 * 3 + 0] == 1 && out[0 * 3 + 1] == 2 && out[1 * 3 + 2] == 3 && out[1 * 3 + 0] == 4 && out[2 * 3 + 1] == 5 && out[0 * 3 + 2] == 6, "scatter");
    float acc[3] = {10, 20, 30}; long long id2[5] = {0, 2, 0, 0, 2}; float s2[5] = {1, 2, 3, 4, 5};
    launch(scatter_add_f32_i64, 1, 32, acc, (const long long*) id2, (const float*) s2, geo({5}, {1}, 0), geo({5}, {1}, 0), geo({5}, {1}, 0), 0, 5LL, 3LL);
    CHECK(acc[0] == 18 && acc[1] == 20 && acc[2] == 37, "scatter_add %f %f %f", acc[0], acc[1], acc[2]);
    float guard[5] = {10, 20, 30, -1, -1}; long long id3[2] = {-4, 7}; float s3[2] = {1, 2};
    launch(scatter_add_f32_i64, 1, 32, guard, (const long long*) id3, (const float*) s3, geo({2}, {1}, 0), geo({2}, {1}, 0), geo({2}, {1}, 0), 0, 2LL, 3LL);
    CHECK(guard[0] == 11 && guard[2] == 32 && guard[3] == -1 && guard[4] == -1, "scatter_add clamps, no write past the end");
  }
  // 11. index_select dim 1 of x [2, 4] transposed storage, strided index; index_add dim 0
  {
    float xs[8]; for (int i = 0; i < 8; i++) xs[i] = i; // x[r][c] = xs[c * 2 + r] (transposed view)
    int idx[6] = {3, -1, 0, -1, 3, -1}; float out[6];
    launch(index_select_u32_i32, 1, 32, (const unsigned int*) xs, (const int*) idx, (unsigned int*) out, geo({2, 3}, {1, 2}, 0), geo({2, 3}, {3, 1}, 0), 1, 2LL, 0LL, 6LL, 4LL);
    int want[3] = {3, 0, 3};
    for (int r = 0; r < 2; r++) for (int i = 0; i < 3; i++) CHECK(out[r * 3 + i] == xs[want[i] * 2 + r], "index_select %d %d", r, i);
    long long o2[3 * 2] = {0}; long long ia[4] = {2, 0, 2, 2}; long long sa[4 * 2] = {1, 2, 3, 4, 5, 6, 7, 8};
    launch(index_add_i64_i64, 1, 32, o2, (const long long*) ia, (const long long*) sa, geo({4, 2}, {2, 1}, 0), geo({4, 2}, {2, 1}, 0), 0, 1LL, 0LL, 8LL, 3LL);
    CHECK(o2[0] == 3 && o2[1] == 4 && o2[2] == 0 && o2[4] == 1 + 5 + 7 && o2[5] == 2 + 6 + 8, "index_add");
  }
  // 12. copy transposed and scale
  {
    float s[6] = {0, 1, 2, 3, 4, 5}, d[6];
    launch(copy_u32, 2, 32, (const unsigned int*) s, (unsigned int*) d, geo({3, 2}, {1, 3}, 0), geo({3, 2}, {2, 1}, 0), 6LL);
    CHECK(d[0] == 0 && d[1] == 3 && d[2] == 1 && d[3] == 4 && d[4] == 2 && d[5] == 5, "copy");
    float o[3] = {NAN, 2, 4};
    launch(scale_f32, 1, 32, o, geo({3}, {1}, 0), 0.0f, 3LL); CHECK(o[0] == 0 && o[1] == 0 && o[2] == 0, "scale 0");
    float o2[2] = {2, 4}; launch(scale_f32, 1, 32, o2, geo({2}, {1}, 0), 0.5f, 2LL); CHECK(o2[0] == 1 && o2[1] == 2, "scale .5");
  }
  printf("%s (%d failures)\n", fails ? "FAILED" : "ok", fails);
  return fails != 0;
}
