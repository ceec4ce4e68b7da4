// Runs CudaAttention's kernels (fwd, bwd_q, bwd_kv for float and double) under emu.h on small problems (keys
// past one chunk of 128, causal with a window, an additive mask at a storage offset, dropout) against plain loops
// in double: outputs, logsumexps, dq, dk, dv and the mask's gradient, the latter added through a pointer moved back
// by the mask data's offset as CudaAttention.backwardFrom passes it. Also checks struct P's layout against the
// offsets CudaAttention.problem() writes. Built and run by AttentionOnCudaTest: g++ -std=c++20 -pthread
// -I<cuda-emu> -I<dir of attention.cu, CudaAttention.SOURCE with the dynamic shared array made a static buffer>.
#include "emu.h"
#include <algorithm>
#include <cstddef>
using std::max;
using std::min;
static double emu_smem[1 << 14];
#include "attention.cu"
#include <random>

static_assert(offsetof(P, B) == 0 && offsetof(P, EV) == 16 && offsetof(P, scale) == 24 && offsetof(P, causal) == 32
    && offsetof(P, window) == 36 && offsetof(P, dropP) == 40 && offsetof(P, seed) == 48 && offsetof(P, mask) == 56
    && offsetof(P, maskBase) == 64 && offsetof(P, si) == 72 && offsetof(P, sj) == 76 && sizeof(P) == 80,
    "struct P as CudaAttention.problem() lays it out");

template <class F, class... A> void launch2(F f, unsigned gx, unsigned gy, unsigned block, A... args) {
  gridDim.x = gx; gridDim.y = gy; blockDim.x = block;
  for (unsigned by = 0; by < gy; by++) {
    for (unsigned bx = 0; bx < gx; bx++) {
      std::barrier<> bar(block);
      g_bar = &bar;
      std::vector<std::thread> ts;
      for (unsigned t = 0; t < block; t++) ts.emplace_back([=] { threadIdx.x = t; blockIdx.x = bx; blockIdx.y = by; f(args...); });
      for (auto& th : ts) th.join();
    }
  }
}

static bool close(double a, double b, double tol) { return std::fabs(a - b) <= tol * (1 + std::fabs(b)); }

template <typename T> static void run(const char* name, int B, int L, int S, int E, int EV, int causal, int window,
    double dropP, bool withMask, double tol, std::mt19937& rng) {
  std::uniform_real_distribution<double> U(-1, 1);
  auto vec = [&](size_t n) { std::vector<T> v(n); for (auto& e : v) e = (T) U(rng); return v; };
  auto q = vec((size_t) B * L * E), k = vec((size_t) B * S * E), v = vec((size_t) B * S * EV), dout = vec((size_t) B * L * EV);
  int shift = 7; // the mask data starts 7 elements into its storage; the bases include it
  std::vector<double> maskStore(shift + (size_t) B * L * S);
  for (auto& m : maskStore) m = U(rng);
  std::vector<int> base(B);
  for (int b = 0; b < B; b++) base[b] = shift + b * L * S;
  P p{B, L, S, E, EV, 1 / std::sqrt((double) E), causal, window, dropP, 12345ULL, withMask ? maskStore.data() : nullptr,
      withMask ? base.data() : nullptr, S, 1};
  std::vector<T> out((size_t) B * L * EV, (T) -9);
  std::vector<double> lse((size_t) B * L, -9);
  const int TH = 128;
  auto fwdK = std::is_same_v<T, float> ? (void (*)(P, const T*, const T*, const T*, T*, double*)) (void*) fwd_f32
                                       : (void (*)(P, const T*, const T*, const T*, T*, double*)) (void*) fwd_f64;
  launch2(fwdK, L, B, TH, p, q.data(), k.data(), v.data(), out.data(), lse.data());
  std::vector<T> dq(q.size(), 0), dk(k.size(), 0), dv(v.size(), 0);
  std::vector<double> dbuf((size_t) B * L, 0), dmask((size_t) B * L * S, 0);
  double* dmaskArg = withMask ? dmask.data() - shift : nullptr; // as backwardFrom: the view's address less the offset
  auto bq = std::is_same_v<T, float>
      ? (void (*)(P, const T*, const T*, const T*, const T*, const double*, const T*, T*, double*, double*)) (void*) bwd_q_f32
      : (void (*)(P, const T*, const T*, const T*, const T*, const double*, const T*, T*, double*, double*)) (void*) bwd_q_f64;
  auto bkv = std::is_same_v<T, float>
      ? (void (*)(P, const T*, const T*, const T*, const double*, const T*, const double*, T*, T*)) (void*) bwd_kv_f32
      : (void (*)(P, const T*, const T*, const T*, const double*, const T*, const double*, T*, T*)) (void*) bwd_kv_f64;
  launch2(bq, L, B, TH, p, q.data(), k.data(), v.data(), (const T*) out.data(), (const double*) lse.data(), dout.data(),
      dq.data(), dbuf.data(), dmaskArg);
  launch2(bkv, S, B, TH, p, q.data(), k.data(), v.data(), (const double*) lse.data(), dout.data(),
      (const double*) dbuf.data(), dk.data(), dv.data());

  // the reference, in double from the same inputs
  std::vector<double> rdq(q.size(), 0), rdk(k.size(), 0), rdv(v.size(), 0), rdm(dmask.size(), 0);
  for (int b = 0; b < B; b++) {
    for (int i = 0; i < L; i++) {
      std::vector<double> s(S, -INFINITY), pr(S, 0), kp(S, 1);
      double m = -INFINITY;
      for (int j = 0; j < S; j++) {
        if (!allowed(p, i, j)) continue;
        double d = 0;
        for (int c = 0; c < E; c++) d += (double) q[((size_t) b * L + i) * E + c] * (double) k[((size_t) b * S + j) * E + c];
        s[j] = d * p.scale + (withMask ? maskStore[base[b] + i * S + j] : 0);
        m = std::max(m, s[j]);
        kp[j] = keep(p, b, i, j);
      }
      double sum = 0;
      for (int j = 0; j < S; j++) if (s[j] != -INFINITY) sum += pr[j] = std::exp(s[j] - m);
      for (int j = 0; j < S; j++) pr[j] /= sum;
      double l = m + std::log(sum);
      CHECK(close(lse[(size_t) b * L + i], l, 1e-12), "%s lse (%d, %d): %.17g vs %.17g", name, b, i, lse[(size_t) b * L + i], l);
      std::vector<double> o(EV, 0);
      for (int c = 0; c < EV; c++) {
        for (int j = 0; j < S; j++) o[c] += pr[j] * kp[j] * (double) v[((size_t) b * S + j) * EV + c];
        double got = out[((size_t) b * L + i) * EV + c];
        CHECK(close(got, o[c], tol), "%s out (%d, %d, %d): %.17g vs %.17g", name, b, i, c, got, o[c]);
      }
      double D = 0;
      for (int c = 0; c < EV; c++) D += (double) dout[((size_t) b * L + i) * EV + c] * (double) out[((size_t) b * L + i) * EV + c];
      for (int j = 0; j < S; j++) {
        if (pr[j] == 0) continue;
        double dp = 0;
        for (int c = 0; c < EV; c++) dp += (double) dout[((size_t) b * L + i) * EV + c] * (double) v[((size_t) b * S + j) * EV + c];
        double ds = pr[j] * (dp * kp[j] - D);
        for (int c = 0; c < E; c++) {
          rdq[((size_t) b * L + i) * E + c] += p.scale * ds * (double) k[((size_t) b * S + j) * E + c];
          rdk[((size_t) b * S + j) * E + c] += p.scale * ds * (double) q[((size_t) b * L + i) * E + c];
        }
        for (int c = 0; c < EV; c++) rdv[((size_t) b * S + j) * EV + c] += pr[j] * kp[j] * (double) dout[((size_t) b * L + i) * EV + c];
        if (withMask) rdm[base[b] - shift + i * S + j] += ds;
      }
    }
  }
  auto cmp = [&](const char* what, const std::vector<T>& got, const std::vector<double>& want) {
    int bad = 0;
    for (size_t t = 0; t < got.size(); t++) {
      if (!close(got[t], want[t], tol) && bad++ < 3) CHECK(false, "%s %s[%zu]: %.17g vs %.17g", name, what, t, (double) got[t], want[t]);
    }
    if (bad > 3) CHECK(false, "%s %s: %d elements differ", name, what, bad);
  };
  cmp("dq", dq, rdq);
  cmp("dk", dk, rdk);
  cmp("dv", dv, rdv);
  if (withMask) {
    for (size_t t = 0; t < dmask.size(); t++) {
      CHECK(close(dmask[t], rdm[t], tol), "%s dmask[%zu]: %.17g vs %.17g", name, t, dmask[t], rdm[t]);
    }
  }
}

int main() {
  std::mt19937 rng(5);
  run<double>("f64 mask dropout", 2, 9, 140, 5, 3, 0, -1, 0.2, true, 1e-11, rng);
  run<double>("f64 causal window", 1, 30, 30, 4, 6, 1, 4, 0, false, 1e-11, rng);
  run<float>("f32 mask", 2, 6, 131, 8, 4, 0, -1, 0, true, 2e-6, rng);
  run<float>("f32 causal dropout", 1, 20, 24, 4, 4, 1, -1, 0.3, false, 2e-6, rng);
  printf("ok (%d failures)\n", fails);
  return fails == 0 ? 0 : 1;
}
