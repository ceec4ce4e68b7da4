// ResamplingHostTest's driver: resampling.cu compiled as host C++ (host_shim.h before it; the test writes
// resampling.cu next to this file). Requests on stdin, one answer line (the output's element bits in hex) each.
// Arrays are a count then values: ints in decimal, elements and doubles as bit patterns in hex.
//   G size h w oh ow planes value mapH mapW x                -> rs_gather_b<size>
//   S dtype h w oh ow planes rows cols g dx                  -> rs_sum (rows, cols: start[n + 1] then the list)
//   BF dtype ih iw oh ow planes tab wt x                     -> rs_bilinear_fwd
//   BB dtype ih iw oh ow planes rows cols wt g dx            -> rs_bilinear_bwd
// dtype 0 is float32, 1 float64.
#include "resampling.cu"

static std::vector<int> ints() {
  long long n;
  std::cin >> n;
  std::vector<int> v(n + 1);
  for (long long i = 0; i < n; i++) std::cin >> v[i];
  return v;
}

template <typename T> static std::vector<T> elems() {
  long long n;
  std::cin >> n;
  std::vector<T> v(n + 1);
  for (long long i = 0; i < n; i++) {
    unsigned long long b;
    std::cin >> std::hex >> b >> std::dec;
    std::memcpy(&v[i], &b, sizeof(T));
  }
  v.resize(n);
  return v;
}

template <typename T> static void print(const std::vector<T>& v) {
  for (size_t i = 0; i < v.size(); i++) {
    unsigned long long b = 0;
    std::memcpy(&b, &v[i], sizeof(T));
    std::printf(i ? " %llx" : "%llx", b);
  }
  std::printf("\n");
}

template <typename T> static void gather(int h, int w, int oh, int ow, int planes, long long value) {
  std::vector<int> mh = ints(), mw = ints();
  std::vector<T> x = elems<T>();
  std::vector<T> out((size_t) planes * oh * ow);
  rs_gather<T>(x.data(), out.data(), mh.data(), mw.data(), value, h, w, oh, ow, (long long) out.size());
  print(out);
}

template <typename T> static void sum(int h, int w, int oh, int ow, int planes) {
  std::vector<int> rows = ints(), cols = ints();
  std::vector<T> g = elems<T>(), dx = elems<T>();
  rs_sum<T>(g.data(), dx.data(), rows.data(), rows.data() + h + 1, cols.data(), cols.data() + w + 1, h, w, oh, ow,
      (long long) planes * h * w);
  print(dx);
}

template <typename T> static void bfwd(int ih, int iw, int oh, int ow, int planes) {
  std::vector<int> tab = ints();
  std::vector<double> wt = elems<double>();
  std::vector<T> x = elems<T>();
  std::vector<T> y((size_t) planes * oh * ow);
  rs_bilinear_fwd<T>(x.data(), y.data(), tab.data(), wt.data(), ih, iw, oh, ow, (long long) y.size());
  print(y);
}

template <typename T> static void bbwd(int ih, int iw, int oh, int ow, int planes) {
  std::vector<int> rows = ints(), cols = ints();
  std::vector<double> wt = elems<double>();
  std::vector<T> g = elems<T>(), dx = elems<T>();
  rs_bilinear_bwd<T>(g.data(), dx.data(), rows.data(), rows.data() + ih + 1, cols.data(), cols.data() + iw + 1,
      wt.data(), ih, iw, oh, ow, (long long) planes * ih * iw);
  print(dx);
}

int main() {
  std::string req;
  while (std::cin >> req) {
    int t, h, w, oh, ow, planes;
    std::cin >> t >> h >> w >> oh >> ow >> planes;
    if (req == "G") {
      unsigned long long value;
      std::cin >> std::hex >> value >> std::dec;
      if (t == 1) gather<unsigned char>(h, w, oh, ow, planes, (long long) value);
      else if (t == 2) gather<unsigned short>(h, w, oh, ow, planes, (long long) value);
      else if (t == 4) gather<unsigned int>(h, w, oh, ow, planes, (long long) value);
      else gather<unsigned long long>(h, w, oh, ow, planes, (long long) value);
    } else if (req == "S") {
      if (t == 0) sum<float>(h, w, oh, ow, planes); else sum<double>(h, w, oh, ow, planes);
    } else if (req == "BF") {
      if (t == 0) bfwd<float>(h, w, oh, ow, planes); else bfwd<double>(h, w, oh, ow, planes);
    } else {
      if (t == 0) bbwd<float>(h, w, oh, ow, planes); else bbwd<double>(h, w, oh, ow, planes);
    }
    if (!std::cin) { std::fprintf(stderr, "resampling_host: malformed request\n"); return 2; }
    std::fflush(stdout);
  }
  return 0;
}
