package dev.ember.data;

/**
 * Derives independent generator seeds from a base seed and counters (epoch, sample index), so
 * that what a loader draws depends only on those numbers, never on thread timing.
 */
final class Seeds {
  private Seeds() {}

  /** Tag separating the augmentation stream from the shuffling one ({@code new Generator(seed)}). */
  static final long AUGMENT = 0x6175676D65L;

  /** A well-mixed 64-bit value from two inputs (MurmurHash3's 64-bit finalizer over a combination). */
  static long mix(long a, long b) {
    return fmix(a * 0x9E3779B97F4A7C15L + fmix(b + 0x632BE59BD9B4E019L));
  }

  private static long fmix(long z) {
    z = (z ^ (z >>> 33)) * 0xFF51AFD7ED558CCDL;
    z = (z ^ (z >>> 33)) * 0xC4CEB9FE1A85EC53L;
    return z ^ (z >>> 33);
  }
}
