// Runs CudaConvolution's 16-bit kernels (im2col_u16, bias_fill_u16, col2im_bf16/f16, sum_batches_bf16/f16,
// channel_sums_bf16/f16) under emu.h and compares them to the bit with the float32 kernels on the widened values,
// rounded once by the compiler's own conversions (_Float16; bfloat16 by nearest-even rounding in double). Built and
// run by ConvolutionHalfSourceTest: g++ -std=c++20 -pthread -I<cuda-emu> -I<dir of convolution.cu>.
#include "emu.h"
inline float __uint_as_float(unsigned int v) { return std::bit_cast<float>(v); }
inline unsigned int __float_as_uint(float v) { return std::bit_cast<unsigned int>(v); }
#include "convolution.cu"
#include <random>

// the references: widening and one rounding to nearest even, independent of the source's bit code
static float ref_widen(cbf16 h) { return std::bit_cast<float>((unsigned int) h.bits << 16); }
static float ref_widen(cf16 h) { return (float) std::bit_cast<_Float16>(h.bits); }
static cbf16 ref_narrow(float f, cbf16*) {
  double v = f;
  cbf16 h;
  if (v == 0) { h.bits = (unsigned short) (std::bit_cast<unsigned int>(f) >> 16); return h; }
  int e = std::ilogb(v);
  double q = std::ldexp(std::nearbyint(std::ldexp(v, 7 - std::max(e, -126))), std::max(e, -126) - 7);
  h.bits = (unsigned short) (std::bit_cast<unsigned int>((float) q) >> 16);
  return h;
}
static cf16 ref_narrow(float f, cf16*) { cf16 h; h.bits = std::bit_cast<unsigned short>((_Float16) f); return h; }

template <typename H> static H make(float f) { return ref_narrow(f, (H*) nullptr); }

template <typename H> static void run(const char* name, void (*col2im_h)(const float*, H*, const H*, G, long long),
    void (*sums_h)(const float*, H*, int, long long), void (*chan_h)(const H*, double*, int, int, long long),
    std::mt19937& rng) {
  std::uniform_real_distribution<float> U(-2, 2);
  // a 2-image, 3-channel 7x6 input, 3x2 kernel, stride (2, 1), padding (1, 1), dilation (1, 2): oh 4, ow 4
  G g{3, 7, 6, 3, 2, 2, 1, 1, 1, 1, 2, 4, 4};
  int n = 2;
  long long xs = (long long) n * g.c * g.h * g.w, cs = (long long) n * g.c * g.kh * g.kw * g.oh * g.ow;
  std::vector<H> x(xs);
  std::vector<float> xf(xs);
  for (long long i = 0; i < xs; i++) { x[i] = make<H>(U(rng)); xf[i] = ref_widen(x[i]); }
  std::vector<unsigned short> c16(cs, 0xBEEF);
  std::vector<float> cf(cs, -9);
  launch(im2col_u16, 3, 256, (const unsigned short*) x.data(), c16.data(), g, cs);
  launch(im2col_f32, 3, 256, xf.data(), cf.data(), g, cs);
  int bad = 0;
  for (long long i = 0; i < cs; i++) { H h; h.bits = c16[i]; if (std::bit_cast<unsigned int>(ref_widen(h)) != std::bit_cast<unsigned int>(cf[i])) bad++; }
  CHECK(bad == 0, "%s im2col_u16: %d of %lld columns are not the f32 columns' bits", name, bad, cs);
  // col2im: float32 columns into a half dx, with and without a bias, against col2im_f32 (+ bias) rounded once
  std::vector<float> cols(cs);
  for (auto& v : cols) v = U(rng) * 3;
  std::vector<H> bias(g.c);
  std::vector<float> biasf(g.c);
  for (int c = 0; c < g.c; c++) { bias[c] = make<H>(U(rng)); biasf[c] = ref_widen(bias[c]); }
  std::vector<float> dxf(xs, -9);
  launch(col2im_f32, 2, 256, cols.data(), dxf.data(), g, xs);
  for (int withBias = 0; withBias < 2; withBias++) {
    std::vector<H> dx(xs, make<H>(-7));
    launch(col2im_h, 2, 256, cols.data(), dx.data(), withBias ? bias.data() : (const H*) nullptr, g, xs);
    bad = 0;
    for (long long i = 0; i < xs; i++) {
      float want = dxf[i] + (withBias ? biasf[(i / (g.h * g.w)) % g.c] : 0.0f);
      if (dx[i].bits != make<H>(want).bits) bad++;
    }
    CHECK(bad == 0, "%s col2im bias %d: %d of %lld elements are not col2im_f32's rounded once", name, withBias, bad, xs);
  }
  // sum_batches: 5 partials of 300 summed in float in image order, rounded once
  int batches = 5; long long count = 300;
  std::vector<float> parts(batches * count);
  for (auto& v : parts) v = U(rng);
  std::vector<H> summed(count, make<H>(-7));
  launch(sums_h, 2, 256, parts.data(), summed.data(), batches, count);
  bad = 0;
  for (long long e = 0; e < count; e++) {
    float acc = 0;
    for (int b = 0; b < batches; b++) acc += parts[b * count + e];
    if (summed[e].bits != make<H>(acc).bits) bad++;
  }
  CHECK(bad == 0, "%s sum_batches: %d of %lld sums differ", name, bad, count);
  // channel sums of a half gradient: channel_sums_f32's bits on the widened values (same tree)
  int cn = 3, cc = 4; long long s = 700;
  std::vector<H> gh(cn * cc * s);
  std::vector<float> gf(cn * cc * s);
  for (size_t i = 0; i < gh.size(); i++) { gh[i] = make<H>(U(rng)); gf[i] = ref_widen(gh[i]); }
  std::vector<double> sh(cc, -1), sf(cc, -2);
  launch(chan_h, cc, 256, gh.data(), sh.data(), cn, cc, s);
  launch(channel_sums_f32, cc, 256, gf.data(), sf.data(), cn, cc, s);
  CHECK(std::memcmp(sh.data(), sf.data(), cc * 8) == 0, "%s channel_sums differ from channel_sums_f32's", name);
  // bias_fill_u16 moves the bias's bits
  std::vector<unsigned short> filled(n * g.c * 5, 0);
  launch(bias_fill_u16, 1, 256, filled.data(), (const unsigned short*) bias.data(), g.c, 5LL, (long long) filled.size());
  bad = 0;
  for (size_t i = 0; i < filled.size(); i++) if (filled[i] != bias[(i / 5) % g.c].bits) bad++;
  CHECK(bad == 0, "%s bias_fill_u16: %d elements are not the bias's bits", name, bad);
}

int main() {
  std::mt19937 rng(7);
  // the narrowing itself, over float32 patterns that cover ties, subnormal halves, overflow and zeros
  int bad16 = 0, badbf = 0;
  std::uniform_int_distribution<unsigned int> bitsU;
  for (int i = 0; i < 2000000; i++) {
    unsigned int b = i < 65536 ? ((unsigned int) i << 16) | (i & 1 ? 0x8000u : 0x7FFFu) : bitsU(rng);
    float f = std::bit_cast<float>(b);
    if (f != f) continue;
    if (cv_narrow<cf16>(f).bits != make<cf16>(f).bits) bad16++;
    if (std::fabs(f) < 3.0e38f && cv_narrow<cbf16>(f).bits != make<cbf16>(f).bits) badbf++;
  }
  CHECK(bad16 == 0, "cv_narrow<cf16>: %d floats round differently from _Float16", bad16);
  CHECK(badbf == 0, "cv_narrow<cbf16>: %d floats round differently from nearest even", badbf);
  int badw = 0;
  for (unsigned int h = 0; h < 65536; h++) {
    cf16 v; v.bits = (unsigned short) h;
    float a = cv_widen(v), r = ref_widen(v);
    if (a == a && std::bit_cast<unsigned int>(a) != std::bit_cast<unsigned int>(r)) badw++;
  }
  CHECK(badw == 0, "cv_widen(cf16): %d patterns widen differently from _Float16", badw);
  // restride: 3 batches of 50 elements from a stride of 60 to 128 and back
  {
    std::vector<unsigned short> src(3 * 60), mid(3 * 128, 0), back(3 * 60, 0);
    for (size_t i = 0; i < src.size(); i++) src[i] = (unsigned short) (i * 7 + 1);
    launch(restride_u16, 1, 256, (const unsigned short*) src.data(), 60LL, mid.data(), 128LL, 50LL, 150LL);
    launch(restride_u16, 1, 256, (const unsigned short*) mid.data(), 128LL, back.data(), 60LL, 50LL, 150LL);
    int bad = 0;
    for (int b = 0; b < 3; b++) for (int e = 0; e < 60; e++) {
      if (e < 50 && (mid[b * 128 + e] != src[b * 60 + e] || back[b * 60 + e] != src[b * 60 + e])) bad++;
      if (e >= 50 && back[b * 60 + e] != 0) bad++;
    }
    std::vector<unsigned int> s32(2 * 5), d32(2 * 64, 0);
    for (size_t i = 0; i < s32.size(); i++) s32[i] = 0x12345678u + (unsigned int) i;
    launch(restride_u32, 1, 256, (const unsigned int*) s32.data(), 5LL, d32.data(), 64LL, 5LL, 10LL);
    for (int b = 0; b < 2; b++) for (int e = 0; e < 5; e++) if (d32[b * 64 + e] != s32[b * 5 + e]) bad++;
    CHECK(bad == 0, "restride moved %d elements wrong", bad);
  }
  run<cbf16>("bf16", col2im_bf16, sum_batches_bf16, channel_sums_bf16, rng);
  run<cf16>("f16", col2im_f16, sum_batches_f16, channel_sums_f16, rng);
  printf("ok (%d failures)\n", fails);
  return fails != 0;
}
