package dev.ember.tensor;

/**
 * A seedable source of random numbers. The same seed gives the same numbers on every machine and
 * at every thread count: random tensors are filled sequentially on the calling thread from a
 * SplitMix64 stream, whose whole state is one {@code long} ({@link #state()}), so checkpoints can
 * save and restore it exactly.
 *
 * <p>Not thread-safe: give each thread its own generator.
 */
public final class Generator {
  private static final long GOLDEN = 0x9E3779B97F4A7C15L;
  private static final Generator DEFAULT = new Generator(0x5EED_E3B3L);
  private long state;

  public Generator(long seed) {
    this.state = seed;
  }

  /** The process-wide default generator, used when no generator is passed. */
  public static Generator global() {
    return DEFAULT;
  }

  /** Reseeds the default generator, as {@code torch.manual_seed}. */
  public static void manualSeed(long seed) {
    DEFAULT.setState(seed);
  }

  public long state() {
    return state;
  }

  public void setState(long state) {
    this.state = state;
  }

  public long nextLong() {
    long z = (state += GOLDEN);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Uniform in [0, 1) with 53 random bits. */
  public double nextDouble() {
    return (nextLong() >>> 11) * 0x1.0p-53;
  }

  /** Uniform in [0, 1) with 24 random bits. */
  public float nextFloat() {
    return (nextLong() >>> 40) * 0x1.0p-24f;
  }

  /** Uniform integer in [0, bound) without modulo bias. */
  public long nextLong(long bound) {
    if (bound <= 0) throw new IllegalArgumentException("Generator.nextLong: bound must be positive, got " + bound);
    long m = bound - 1;
    long u = nextLong() >>> 1;
    long r = u % bound;
    // reject the top partial range of [0, 2^63) so every residue is equally likely
    while (u - r + m < 0) {
      u = nextLong() >>> 1;
      r = u % bound;
    }
    return r;
  }

  /** Standard normal by Box-Muller (one value per two uniforms, so the state advances by exactly two). */
  public double nextGaussian() {
    double u1 = 1.0 - nextDouble(); // (0, 1]: log never sees 0
    double u2 = nextDouble();
    return Math.sqrt(-2.0 * Math.log(u1)) * Math.cos(2.0 * Math.PI * u2);
  }
}
