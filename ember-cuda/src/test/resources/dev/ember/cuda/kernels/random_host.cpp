// RandomHostTest's driver: random.cu compiled as host C++ (host_shim.h before it; the test writes random.cu next to
// this file). erfinv is not in the host's libm: Giles' approximation and two Newton steps stand in for CUDA's.
// Requests on stdin, one answer line each, all numbers hex:
//   P c0 c1 c2 c3 k0 k1              -> the 4 words of Philox4x32-10(counter, key)
//   F kind dtype n k0 k1 c2 c3 np p.. -> the n elements' bits of rn_<kind>_<dtype> (kind: uniform normal
//                                        trunc_normal bernoulli; dtype 0 f32, 1 f64; np double parameters as bits)
static double host_erfinv(double y) {
  if (y <= -1) return y == -1 ? -INFINITY : NAN;
  if (y >= 1) return y == 1 ? INFINITY : NAN;
  double w = -std::log((1 - y) * (1 + y)), x;
  if (w < 5) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w; p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w; p = -0.00417768164 + p * w; p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    x = p * y;
  } else {
    w = std::sqrt(w) - 3;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w; p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w; p = 0.00943887047 + p * w; p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    x = p * y;
  }
  for (int i = 0; i < 2; i++) x -= (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  return x;
}
inline float erfinvf(float y) { return (float) host_erfinv(y); }
inline double erfinv(double y) { return host_erfinv(y); }
#include "random.cu"

static double param(unsigned long long b) { double d; std::memcpy(&d, &b, 8); return d; }

template <typename T> static void print(const std::vector<T>& v) {
  for (size_t i = 0; i < v.size(); i++) {
    unsigned long long b = 0;
    std::memcpy(&b, &v[i], sizeof(T));
    std::printf(i ? " %llx" : "%llx", b);
  }
  std::printf("\n");
}

template <typename T> static void fill(const std::string& kind, long long n, unsigned k0, unsigned k1, unsigned c2,
    unsigned c3, const std::vector<double>& p) {
  std::vector<T> out(n);
  if (kind == "uniform") rn_uniform<T>(out.data(), n, k0, k1, c2, c3, p[0], p[1]);
  else if (kind == "normal") rn_normal<T>(out.data(), n, k0, k1, c2, c3, p[0], p[1]);
  else if (kind == "trunc_normal") rn_trunc_normal<T>(out.data(), n, k0, k1, c2, c3, p[0], p[1], p[2], p[3], p[4], p[5]);
  else rn_bernoulli<T>(out.data(), n, k0, k1, c2, c3, p[0], p[1]);
  print(out);
}

int main() {
  std::string req;
  while (std::cin >> req) {
    if (req == "P") {
      unsigned c[4], k[2];
      std::cin >> std::hex >> c[0] >> c[1] >> c[2] >> c[3] >> k[0] >> k[1] >> std::dec;
      rn_u4 ctr{c[0], c[1], c[2], c[3]};
      rn_u4 r = rn_philox(ctr, k[0], k[1]);
      std::printf("%x %x %x %x\n", r.x, r.y, r.z, r.w);
    } else {
      std::string kind;
      int dtype, np;
      long long n;
      unsigned k0, k1, c2, c3;
      std::cin >> kind >> dtype >> n >> std::hex >> k0 >> k1 >> c2 >> c3 >> std::dec >> np;
      std::vector<double> p(np);
      for (double& d : p) { unsigned long long b; std::cin >> std::hex >> b >> std::dec; d = param(b); }
      if (!std::cin) { std::fprintf(stderr, "random_host: malformed request\n"); return 2; }
      if (dtype == 0) fill<float>(kind, n, k0, k1, c2, c3, p);
      else fill<double>(kind, n, k0, k1, c2, c3, p);
    }
    std::fflush(stdout);
  }
  return 0;
}
