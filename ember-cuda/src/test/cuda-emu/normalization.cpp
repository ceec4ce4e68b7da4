// Runs CudaNormalization's view-path kernels (row_normalize, group_normalize, bn_train_stats, bn_eval_stats,
// bn_affine, channel_bwd_gx_w, row_bwd_gx_w) under emu.h on small inputs and compares them to the bit with the
// double-array path's kernels (row_stats, row_affine, channel_stats, channel_affine, update_running, channel_bwd_gx,
// row_bwd_gx) fed what the host computes between them, and the statistics with plain loops. Built and run by
// NormalizationEmulationTest: g++ -std=c++20 -pthread -I<cuda-emu> -I<dir of normalization.cu, CudaNormalization.SOURCE>.
#include "emu.h"
#include "normalization.cu"
#include <random>
#include <vector>

template <typename T> static bool same(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}
template <typename T> static std::vector<double> wide(const std::vector<T>& a) { return std::vector<double>(a.begin(), a.end()); }

#define KERNELS(S, T)                                                                                         \
  static void run_##S(std::mt19937& rng) {                                                                    \
    std::uniform_real_distribution<double> U(-1, 1);                                                          \
    auto vec = [&](size_t n, double scale, double shift) { std::vector<T> v(n); for (auto& e : v) e = (T) (U(rng) * scale + shift); return v; }; \
    /* layer and RMS norm: 5 rows of 300 (more than a block of 256 threads) */                                \
    {                                                                                                          \
      int rows = 5; long long m = 300; double eps = 1e-5;                                                      \
      auto x = vec(rows * m, 3, 0.5); auto w = vec(m, 1, 1); auto b = vec(m, 1, 0);                           \
      for (int rms = 0; rms < 2; rms++) {                                                                      \
        std::vector<double> st(2 * rows, -7); std::vector<T> ref(rows * m, -9), out(rows * m, -9);            \
        std::vector<double> mean(rows, -7), rstd(rows, -7);                                                    \
        launch(row_stats_##S, rows, 256, x.data(), st.data(), m, eps, rms, rows);                              \
        auto wd = wide(w); auto bd = wide(b);                                                                  \
        launch(row_affine_##S, 3, 256, x.data(), rms ? nullptr : st.data(), st.data() + rows, wd.data(),      \
            rms ? nullptr : bd.data(), ref.data(), m, rows * m);                                               \
        launch(row_normalize_##S, rows, 256, x.data(), w.data(), rms ? nullptr : b.data(), out.data(),         \
            rms ? nullptr : mean.data(), rstd.data(), m, eps, rms);                                            \
        CHECK(same(ref, out), #S " row_normalize rms %d: output differs from row_stats + row_affine", rms);     \
        CHECK(std::memcmp(rstd.data(), st.data() + rows, rows * 8) == 0, #S " row_normalize rstd rms %d", rms); \
        if (!rms) CHECK(std::memcmp(mean.data(), st.data(), rows * 8) == 0, #S " row_normalize mean");        \
        else CHECK(mean[0] == -7, #S " rms writes no mean");                                                  \
        for (int r = 0; r < rows; r++) {                                                                       \
          double mu = 0, ss = 0;                                                                               \
          if (!rms) { for (int i = 0; i < m; i++) mu += x[r * m + i]; mu /= m; }                              \
          for (int i = 0; i < m; i++) ss += (x[r * m + i] - mu) * (x[r * m + i] - mu);                         \
          double rs = 1 / std::sqrt(ss / m + eps);                                                             \
          CHECK(std::fabs(rstd[r] - rs) <= 1e-12 * rs, #S " rstd row %d: %.17g vs %.17g", r, rstd[r], rs);     \
          if (!rms) CHECK(std::fabs(mean[r] - mu) <= 1e-12, #S " mean row %d", r);                            \
        }                                                                                                      \
        /* the backward with the weight in x's type equals the one with it in double */                        \
        auto g = vec(rows * m, 1, 0); std::vector<T> gx1(rows * m, -9), gx2(rows * m, -9);                    \
        launch(row_bwd_gx_##S, rows, 256, x.data(), g.data(), rms ? nullptr : mean.data(), rstd.data(),        \
            wd.data(), gx1.data(), m, 1, 1);                                                                   \
        launch(row_bwd_gx_w_##S, rows, 256, x.data(), g.data(), rms ? nullptr : mean.data(), rstd.data(),      \
            w.data(), gx2.data(), m, 1, 1);                                                                    \
        CHECK(same(gx1, gx2), #S " row_bwd_gx_w rms %d", rms);                                                \
        launch(row_bwd_gx_w_##S, rows, 256, x.data(), g.data(), rms ? nullptr : mean.data(), rstd.data(),      \
            (const T*) nullptr, gx2.data(), m, 1, 1);                                                          \
        launch(row_bwd_gx_##S, rows, 256, x.data(), g.data(), rms ? nullptr : mean.data(), rstd.data(),        \
            (const double*) nullptr, gx1.data(), m, 1, 1);                                                     \
        CHECK(same(gx1, gx2), #S " row_bwd_gx_w without weight rms %d", rms);                                 \
      }                                                                                                        \
    }                                                                                                          \
    /* group norm: [n 2, c 6, s 50] in 3 groups: rows of 2 * 50 */                                             \
    {                                                                                                          \
      int n = 2, c = 6, groups = 3, cpg = 2; long long s = 50, m = cpg * s; int rows = n * groups; double eps = 1e-5; \
      auto x = vec(n * c * s, 2, -0.3); auto w = vec(c, 1, 1); auto b = vec(c, 1, 0);                         \
      for (int affine = 0; affine < 2; affine++) {                                                             \
        std::vector<double> st(2 * rows), scale(n * c), shift(n * c), mean(rows, -7), rstd(rows, -7);         \
        std::vector<T> ref(n * c * s, -9), out(n * c * s, -9);                                                \
        launch(row_stats_##S, rows, 256, x.data(), st.data(), m, eps, 0, rows);                                \
        for (int bi = 0; bi < n; bi++) for (int ch = 0; ch < c; ch++) {                                        \
          int r = bi * groups + ch / cpg;                                                                      \
          double sc = st[rows + r] * (affine ? (double) w[ch] : 1.0);                                          \
          scale[bi * c + ch] = sc; shift[bi * c + ch] = (affine ? (double) b[ch] : 0.0) - st[r] * sc;         \
        }                                                                                                      \
        launch(channel_affine_##S, 4, 256, x.data(), scale.data(), shift.data(), ref.data(), s, n * c * s);    \
        launch(group_normalize_##S, rows, 256, x.data(), affine ? w.data() : nullptr, affine ? b.data() : nullptr, \
            out.data(), mean.data(), rstd.data(), m, c, groups, s, eps);                                       \
        CHECK(same(ref, out), #S " group_normalize affine %d: output differs from row_stats + channel_affine", affine); \
        CHECK(std::memcmp(mean.data(), st.data(), rows * 8) == 0 && std::memcmp(rstd.data(), st.data() + rows, rows * 8) == 0, \
            #S " group_normalize statistics");                                                                 \
      }                                                                                                        \
    }                                                                                                          \
    /* batch norm: [n 3, c 4, s 70], running statistics with stride 2 */                                       \
    {                                                                                                          \
      int n = 3, c = 4; long long s = 70, total = n * c * s; double eps = 1e-5, mom = 0.1, count = (double) n * s; \
      auto x = vec(total, 2, 0.7); auto w = vec(c, 1, 1); auto b = vec(c, 1, 0);                              \
      auto run0 = vec(2 * c, 0.2, 0); auto runv0 = vec(2 * c, 0.2, 1);                                         \
      /* the double-array path: channel_stats, host scale and shift, channel_affine, update_running */         \
      std::vector<double> st(2 * c), rs(c), scale(n * c), shift(n * c), unb(c);                                \
      std::vector<T> ref(total, -9), rmRef = run0, rvRef = runv0;                                             \
      launch(channel_stats_##S, c, 256, x.data(), st.data(), n, c, s);                                         \
      for (int ch = 0; ch < c; ch++) {                                                                         \
        rs[ch] = 1 / std::sqrt(st[c + ch] + eps); unb[ch] = st[c + ch] * count / (count - 1);                 \
        double sc = rs[ch] * (double) w[ch], sh = (double) b[ch] - st[ch] * sc;                               \
        for (int bi = 0; bi < n; bi++) { scale[bi * c + ch] = sc; shift[bi * c + ch] = sh; }                  \
      }                                                                                                        \
      launch(channel_affine_##S, 4, 256, x.data(), scale.data(), shift.data(), ref.data(), s, total);          \
      launch(update_running_##S, 1, 256, rmRef.data(), 2LL, st.data(), mom, c);                                \
      launch(update_running_##S, 1, 256, rvRef.data(), 2LL, unb.data(), mom, c);                               \
      /* the view path */                                                                                      \
      std::vector<double> mean(c, -7), rstd(c, -7); std::vector<T> out(total, -9), rm = run0, rv = runv0;     \
      launch(bn_train_stats_##S, c, 256, x.data(), mean.data(), rstd.data(), rm.data(), 2LL, rv.data(), 2LL, n, c, s, eps, mom); \
      launch(bn_affine_##S, 4, 256, x.data(), mean.data(), rstd.data(), w.data(), b.data(), out.data(), c, s, total); \
      CHECK(same(ref, out), #S " batch norm train: output differs from channel_stats + channel_affine");        \
      CHECK(std::memcmp(mean.data(), st.data(), c * 8) == 0 && same(rs, rstd), #S " batch norm train statistics"); \
      CHECK(same(rm, rmRef) && same(rv, rvRef), #S " batch norm running statistics differ from update_running"); \
      for (int ch = 0; ch < c; ch++) {                                                                         \
        double mu = 0; for (int bi = 0; bi < n; bi++) for (int i = 0; i < s; i++) mu += x[(bi * c + ch) * s + i]; mu /= count; \
        CHECK(std::fabs(mean[ch] - mu) < 1e-12, #S " channel %d mean %.17g vs %.17g", ch, mean[ch], mu);     \
      }                                                                                                        \
      /* without running statistics nothing else is written */                                                 \
      std::vector<T> rmNone = run0;                                                                            \
      launch(bn_train_stats_##S, c, 256, x.data(), mean.data(), rstd.data(), (T*) nullptr, 0LL, (T*) nullptr, 0LL, n, c, s, eps, mom); \
      CHECK(same(rmNone, run0) && std::memcmp(mean.data(), st.data(), c * 8) == 0, #S " batch norm without running statistics"); \
      /* eval: the running statistics normalize */                                                             \
      std::vector<T> refE(total, -9), outE(total, -9); std::vector<double> meanE(c, -7), rstdE(c, -7), rmd(c), rsE(c); \
      for (int ch = 0; ch < c; ch++) {                                                                         \
        rmd[ch] = (double) run0[2 * ch]; rsE[ch] = 1 / std::sqrt((double) runv0[2 * ch] + eps);              \
        double sc = rsE[ch], sh = 0.0 - rmd[ch] * sc;                                                          \
        for (int bi = 0; bi < n; bi++) { scale[bi * c + ch] = sc; shift[bi * c + ch] = sh; }                  \
      }                                                                                                        \
      launch(channel_affine_##S, 4, 256, x.data(), scale.data(), shift.data(), refE.data(), s, total);         \
      launch(bn_eval_stats_##S, 1, 256, run0.data(), 2LL, runv0.data(), 2LL, meanE.data(), rstdE.data(), c, eps); \
      launch(bn_affine_##S, 4, 256, x.data(), meanE.data(), rstdE.data(), (const T*) nullptr, (const T*) nullptr, outE.data(), c, s, total); \
      CHECK(same(refE, outE) && same(meanE, rmd) && same(rstdE, rsE), #S " batch norm eval");                 \
      /* backward's input gradient with the weight in x's type equals the one with it in double */             \
      auto g = vec(total, 1, 0); std::vector<double> sums(2 * c); auto wd = wide(w);                           \
      launch(channel_bwd_sums_##S, c, 256, x.data(), g.data(), st.data(), rs.data(), sums.data(), n, c, s);    \
      for (int train = 0; train < 2; train++) {                                                                \
        std::vector<T> gx1(total, -9), gx2(total, -9);                                                         \
        launch(channel_bwd_gx_##S, 4, 256, x.data(), g.data(), st.data(), rs.data(), wd.data(), sums.data(), gx1.data(), c, s, count, train, total); \
        launch(channel_bwd_gx_w_##S, 4, 256, x.data(), g.data(), st.data(), rs.data(), w.data(), sums.data(), gx2.data(), c, s, count, train, total); \
        CHECK(same(gx1, gx2), #S " channel_bwd_gx_w train %d", train);                                        \
      }                                                                                                        \
    }                                                                                                          \
  }

KERNELS(f32, float)
KERNELS(f64, double)

int main() {
  std::mt19937 rng(5);
  run_f32(rng);
  run_f64(rng);
  printf("%s (%d failures)\n", fails ? "FAILED" : "ok", fails);
  return fails ? 1 : 0;
}
