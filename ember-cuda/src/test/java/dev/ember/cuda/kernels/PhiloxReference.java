package dev.ember.cuda.kernels;

/**
 * Philox4x32-10 in Java, written from Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3"
 * (SC'11) and Random123's philox.h, and CudaRandom's stream and transforms on top of it: the reference random.cu is
 * checked against, on the host (RandomHostTest) and on the GPU (CudaRandomGpuTest).
 */
final class PhiloxReference {
  private static final long M0 = 0xD2511F53L;
  private static final long M1 = 0xCD9E8D57L;
  private static final int W0 = 0x9E3779B9;
  private static final int W1 = 0xBB67AE85;

  private PhiloxReference() {}

  /** The 4 output words of Philox4x32-10 for counter c[0..3] and key k0, k1. */
  static int[] philox(int[] c, int k0, int k1) {
    int x = c[0], y = c[1], z = c[2], w = c[3];
    for (int r = 0; r < 10; r++) {
      if (r > 0) {
        k0 += W0;
        k1 += W1;
      }
      long p0 = M0 * (x & 0xFFFFFFFFL); // the full unsigned 64-bit product: both factors are below 2^32
      long p1 = M1 * (z & 0xFFFFFFFFL);
      int nx = (int) (p1 >>> 32) ^ y ^ k0;
      int ny = (int) p1;
      int nz = (int) (p0 >>> 32) ^ w ^ k1;
      int nw = (int) p0;
      x = nx;
      y = ny;
      z = nz;
      w = nw;
    }
    return new int[] {x, y, z, w};
  }

  /** Word i of the stream of key {k0, k1, c2, c3}: word i % 4 of block i / 4, whose counter is (i / 4, c2, c3). */
  static int word(int[] key, long i) {
    long c = i >>> 2;
    return philox(new int[] {(int) c, (int) (c >>> 32), key[2], key[3]}, key[0], key[1])[(int) (i & 3)];
  }

  /** The float32 uniform of element e: 24 bits of word e. */
  static float unitF32(int[] key, long e) {
    return (word(key, e) & 0xFFFFFF) * 0x1.0p-24f;
  }

  /** The float64 uniform of element e: 53 bits of words 2e (high) and 2e + 1 (low). */
  static double unitF64(int[] key, long e) {
    long b = ((long) word(key, 2 * e) << 32) | (word(key, 2 * e + 1) & 0xFFFFFFFFL);
    return (b & ((1L << 53) - 1)) * 0x1.0p-53;
  }

  /** CudaRandom's float32 uniform element e in [from, to). */
  static float uniformF32(int[] key, long e, double from, double to) {
    float f = (float) from;
    float v = Math.fma(unitF32(key, e), (float) to - f, f);
    return v >= to && f < to ? f : v;
  }

  /** CudaRandom's float64 uniform element e in [from, to). */
  static double uniformF64(int[] key, long e, double from, double to) {
    double v = Math.fma(unitF64(key, e), to - from, from);
    return v >= to && from < to ? from : v;
  }

  /** Element e of CudaRandom's normal fill (in double, from the uniforms of out's dtype). */
  static double normal(int[] key, long e, boolean f32, double mean, double std) {
    long first = e & ~1L;
    double u1 = f32 ? unitF32(key, first) : unitF64(key, first);
    double u2 = f32 ? unitF32(key, first + 1) : unitF64(key, first + 1);
    double r = Math.sqrt(-2 * Math.log(1 - u1));
    double theta = f32 ? (float) (2 * Math.PI) * (float) u2 : 2 * Math.PI * u2;
    return ((e & 1) == 0 ? r * Math.cos(theta) : r * Math.sin(theta)) * std + mean;
  }

  /** Element e of CudaRandom's Bernoulli fill. */
  static double bernoulli(int[] key, long e, boolean f32, double keep, double value) {
    double u = f32 ? unitF32(key, e) : unitF64(key, e);
    return u < keep ? (f32 ? (float) value : value) : 0;
  }
}
