package dev.ember.tensor;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A seedable source of random numbers that draws the same numbers as PyTorch's CPU generator.
 *
 * <p>The engine is the 32-bit Mersenne Twister (MT19937) seeded as {@code torch.manual_seed} seeds
 * it, and each kind of draw transforms its output as PyTorch's CPU kernels do: {@code rand} of
 * float32 keeps 24 bits of one 32-bit output, float64 53 bits of two, bfloat16 and float16 8 and 11 bits of one
 * (their {@code randn} is float32's rounded, not torch's half Box-Muller); {@code randn} of 16 or more
 * elements fills uniforms and turns each block of 16 into normals by Box-Muller (the last partial
 * block is redrawn), fewer elements are drawn one by one with the second value of each pair cached
 * in the generator; {@code randint} and {@code randperm} take one 32-bit output modulo the range.
 * So {@code Generator.manualSeed(0)} followed by building a {@code Linear} gives the weights that
 * {@code torch.manual_seed(0)} followed by {@code nn.Linear} gives (to the last bit for uniform
 * draws, to a few float ulps for normal ones, whose {@code log}/{@code sin}/{@code cos} differ from
 * PyTorch's vectorised ones). Results are the same on every machine and at every thread count:
 * random tensors are filled sequentially on the calling thread, with plain float and double
 * arithmetic and {@link StrictMath} (never the platform-dependent {@link Math} intrinsics).
 *
 * <p>{@link #state()} captures everything (the 624-word state, the position in it, the cached
 * normal value and the seed) in a {@code long[]} that checkpoints save and restore exactly.
 *
 * <p>{@link #logDraws()} notes, for a scope, which generators the calling thread draws from and their states
 * before the first draw: how gradient checkpointing replays a segment's dropout masks.
 *
 * <p>Thread-safe, as PyTorch's generators (which lock): each draw, fill or state access holds this generator's
 * lock, so threads sharing one ({@link #global()}: the default of every random op) interleave their draws, each
 * call's numbers consecutive; give each thread its own generator for sequences that do not depend on the timing.
 */
public final class Generator {
  private static final int N = 624;
  private static final int M = 397;
  /** Length of {@link #state()}: 312 longs of state words, then position, seed, cached-normal flag and bits. */
  public static final int STATE_LONGS = N / 2 + 4;
  private static final Generator DEFAULT = new Generator(67280421310721L); // PyTorch's default seed

  private static final float TWO_PI_F = (float) (2 * Math.PI);

  private final int[] mt = new int[N];
  private int next;
  private long seed;
  private boolean hasNormal;
  private double cachedNormal;

  /** A generator seeded with {@code seed}, as {@code torch.Generator().manual_seed(seed)} (the engine takes its low 32 bits). */
  public Generator(long seed) {
    manualSeed0(seed);
  }

  /** The open {@link DrawLog}s of each thread, innermost last. */
  private static final ThreadLocal<ArrayList<DrawLog>> LOGS = ThreadLocal.withInitial(ArrayList::new);
  /** Open logs on all threads: while none is open a draw pays one read of this counter. */
  private static final AtomicInteger OPEN_LOGS = new AtomicInteger();

  /**
   * Starts noting the generators this thread draws from (or reseeds, or sets the state of) until the returned
   * log is closed, each with its state before its first such use in the scope. Logs nest; each notes what
   * happens while it is open.
   */
  public static DrawLog logDraws() {
    return new DrawLog();
  }

  /** The generators one thread used in a scope, with their states before it used them (see {@link #logDraws()}). */
  public static final class DrawLog implements AutoCloseable {
    private final Map<Generator, long[]> before = new IdentityHashMap<>();
    private final ArrayList<Generator> order = new ArrayList<>();
    private final Thread owner = Thread.currentThread();
    private boolean closed;

    private DrawLog() {
      LOGS.get().add(this);
      OPEN_LOGS.incrementAndGet();
    }

    private void note(Generator g) {
      if (!before.containsKey(g)) {
        before.put(g, g.state());
        order.add(g);
      }
    }

    /** Each generator used so far, in the order of first use, with its state before that use. */
    public Map<Generator, long[]> statesBefore() {
      LinkedHashMap<Generator, long[]> m = new LinkedHashMap<>();
      for (Generator g : order) m.put(g, before.get(g).clone());
      return Collections.unmodifiableMap(m);
    }

    /** Stops noting; closing twice does nothing. Must be closed on the thread that opened it. */
    @Override
    public void close() {
      if (closed) return;
      if (Thread.currentThread() != owner) {
        throw new IllegalStateException("Generator.DrawLog: closed on thread " + Thread.currentThread().getName()
            + " but opened on " + owner.getName());
      }
      closed = true;
      LOGS.get().remove(this);
      OPEN_LOGS.decrementAndGet();
    }
  }

  /** Before any change of the state: tells this thread's open draw logs, if any. */
  private void touch() {
    if (OPEN_LOGS.get() != 0) {
      for (DrawLog log : LOGS.get()) log.note(this);
    }
  }

  /** {@link #touch()} for a draw: in a forward being traced, a graph would keep this call's numbers. */
  private void draw() {
    touch();
    // random ops that draw anew on every run (dropout) draw with tracing suspended and report themselves as ops
    dev.ember.autograd.Tracing.unsupported("random draw", "draws from a Generator in Java code, whose numbers a graph"
        + " would keep from the trace");
  }

  /** The process-wide default generator, used when no generator is passed. */
  public static Generator global() {
    return DEFAULT;
  }

  /** Reseeds the default generator, as {@code torch.manual_seed}. */
  public static void manualSeed(long seed) {
    DEFAULT.touch();
    DEFAULT.manualSeed0(seed);
  }

  /** The seed this generator was last seeded with ({@code torch.Generator.initial_seed}). */
  public long initialSeed() {
    return seed;
  }

  private synchronized void manualSeed0(long seed) {
    this.seed = seed;
    hasNormal = false;
    cachedNormal = 0;
    mt[0] = (int) seed;
    for (int j = 1; j < N; j++) mt[j] = 1812433253 * (mt[j - 1] ^ (mt[j - 1] >>> 30)) + j;
    next = N;
  }

  /** The whole state ({@link #STATE_LONGS} values), for {@link #setState(long[])}. */
  public synchronized long[] state() {
    long[] s = new long[STATE_LONGS];
    for (int i = 0; i < N / 2; i++) s[i] = ((long) mt[2 * i] << 32) | (mt[2 * i + 1] & 0xFFFFFFFFL);
    s[N / 2] = next;
    s[N / 2 + 1] = seed;
    s[N / 2 + 2] = hasNormal ? 1 : 0;
    s[N / 2 + 3] = Double.doubleToRawLongBits(cachedNormal);
    return s;
  }

  /** Restores a state from {@link #state()}; rejects arrays of the wrong length or position. */
  public synchronized void setState(long[] s) {
    if (s == null || s.length != STATE_LONGS) {
      throw new IllegalArgumentException("Generator.setState: expected " + STATE_LONGS + " values, got "
          + (s == null ? "null" : Integer.toString(s.length)));
    }
    long pos = s[N / 2];
    long flag = s[N / 2 + 2];
    if (pos < 0 || pos > N || (flag != 0 && flag != 1)) {
      throw new IllegalArgumentException("Generator.setState: corrupt state (position " + pos + ", normal flag " + flag + ")");
    }
    touch();
    for (int i = 0; i < N / 2; i++) {
      mt[2 * i] = (int) (s[i] >>> 32);
      mt[2 * i + 1] = (int) s[i];
    }
    next = (int) pos;
    seed = s[N / 2 + 1];
    hasNormal = flag == 1;
    cachedNormal = Double.longBitsToDouble(s[N / 2 + 3]);
  }

  /** The next 624 words, in three runs so that no index needs a modulo. */
  private void twist() {
    int[] s = mt;
    int k = 0;
    for (; k < N - M; k++) s[k] = mix(s[k], s[k + 1], s[k + M]);
    for (; k < N - 1; k++) s[k] = mix(s[k], s[k + 1], s[k + M - N]);
    s[N - 1] = mix(s[N - 1], s[0], s[M - 1]);
    next = 0;
  }

  private static int mix(int upper, int lower, int far) {
    int y = (upper & 0x80000000) | (lower & 0x7FFFFFFF);
    return far ^ (y >>> 1) ^ (-(y & 1) & 0x9908B0DF);
  }

  /** The next 32 random bits (PyTorch's {@code random()}). */
  public synchronized int nextInt() {
    draw();
    return next32();
  }

  /** {@link #nextInt()} for a caller that holds the lock and has noted the draw. */
  private int next32() {
    if (next >= N) twist();
    return temper(mt[next++]);
  }

  /**
   * Writes {@code value} where a uniform draw ({@link #nextDouble()}'s, one per element, in order) falls below
   * {@code keepProb}, else 0, into {@code n} elements of {@code s} from {@code off}: a dropout mask, as torch's
   * {@code bernoulli_(keepProb)}, drawn under one lock instead of one per element.
   */
  public synchronized void fillBernoulli(Storage s, int off, int n, double keepProb, double value) {
    draw();
    for (int i = 0; i < n; i++) s.setDouble(off + i, uniform53() < keepProb ? value : 0);
  }

  /** {@link #nextLong()} for a caller that holds the lock and has noted the draw. */
  private long next64() {
    long hi = next32() & 0xFFFFFFFFL;
    long lo = next32() & 0xFFFFFFFFL;
    return (hi << 32) | lo;
  }

  /** {@link #nextDouble()} for a caller that holds the lock and has noted the draw. */
  private double uniform53() {
    return (next64() & ((1L << 53) - 1)) * 0x1.0p-53;
  }

  private static int temper(int y) {
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9D2C5680;
    y ^= (y << 15) & 0xEFC60000;
    return y ^ (y >>> 18);
  }

  /** The next 64 random bits: two 32-bit outputs, the first one high (PyTorch's {@code random64()}). */
  public synchronized long nextLong() {
    draw();
    return next64();
  }

  /** Uniform in [0, 1) with 53 random bits from {@link #nextLong()} (a float64 {@code rand} element). */
  public synchronized double nextDouble() {
    draw();
    return uniform53();
  }

  /** Uniform in [0, 1) with 24 random bits from {@link #nextInt()} (a float32 {@code rand} element). */
  public synchronized float nextFloat() {
    draw();
    return unitFloat(next32());
  }

  /** The low 24 bits of an output as a float in [0, 1) (PyTorch's float32 uniform). */
  private static float unitFloat(int bits) {
    return (bits & 0xFFFFFF) * 0x1.0p-24f;
  }

  /**
   * Uniform integer in [0, bound), as PyTorch's {@code randint}: one 32-bit output modulo
   * {@code bound} when it is below 2^32, else one 64-bit output (the modulo bias, under
   * {@code bound / 2^32}, is PyTorch's too).
   */
  public synchronized long nextLong(long bound) {
    draw();
    if (bound <= 0) throw new IllegalArgumentException("Generator.nextLong: bound must be positive, got " + bound);
    if (bound < 1L << 32) return (next32() & 0xFFFFFFFFL) % bound;
    return Long.remainderUnsigned(next64(), bound);
  }

  /**
   * A standard normal value (a float64 draw of PyTorch's {@code normal_distribution}): Box-Muller on
   * two {@link #nextDouble()} values; the sine of the pair is cached and returned by the next call.
   */
  public synchronized double nextGaussian() {
    draw();
    return gaussian();
  }

  /** {@link #nextGaussian()} for a caller that holds the lock and has noted the draw. */
  private double gaussian() {
    if (hasNormal) {
      hasNormal = false;
      return cachedNormal;
    }
    double u1 = uniform53();
    double u2 = uniform53();
    double r = StrictMath.sqrt(-2.0 * StrictMath.log(1.0 - u2));
    double theta = 2.0 * Math.PI * u1;
    cachedNormal = r * StrictMath.sin(theta);
    hasNormal = true;
    return r * StrictMath.cos(theta);
  }

  /** Fills {@code a} with uniform values in [from, to), as {@code torch.empty(n).uniform_(from, to)} (float32). */
  public synchronized void fillUniform(float[] a, int off, int n, double from, double to) {
    draw();
    float f = (float) from;
    float range = (float) to - f;
    int[] s = mt;
    for (int i = off, end = off + n; i < end; ) { // runs of state words: no per-element bookkeeping
      if (next >= N) twist();
      int k = next;
      int run = Math.min(N - k, end - i);
      for (int j = 0; j < run; j++) a[i + j] = Math.fma(unitFloat(temper(s[k + j])), range, f);
      next = k + run;
      i += run;
    }
  }

  /**
   * Fills {@code a} with the uniform values in [from, to) of a half tensor whose significand has {@code digits} bits
   * (8 for bfloat16, 11 for float16), as torch's {@code uniform_} on one: each keeps {@code digits} bits of one
   * 32-bit output ({@code torch.manual_seed(0); torch.rand(1, dtype=torch.bfloat16)} is 172 / 256, the output's low
   * byte), scaled in float32; the caller rounds each to the half dtype (exactly, for [0, 1)).
   */
  public synchronized void fillUniform(float[] a, int off, int n, double from, double to, int digits) {
    draw();
    float f = (float) from;
    float range = (float) to - f;
    int mask = (1 << digits) - 1;
    float unit = Math.scalb(1f, -digits);
    for (int i = off; i < off + n; i++) a[i] = Math.fma((next32() & mask) * unit, range, f);
  }

  /** Fills {@code a} with uniform values in [from, to), as {@code uniform_(from, to)} on float64. */
  public synchronized void fillUniform(double[] a, int off, int n, double from, double to) {
    draw();
    double range = to - from;
    for (int i = off; i < off + n; i++) a[i] = Math.fma(uniform53(), range, from);
  }

  /**
   * Fills {@code a} with normal values, as {@code normal_(mean, std)} on a contiguous float32 tensor:
   * 16 or more elements are made from uniforms in blocks of 16 (the last partial block redrawn
   * over the final 16 elements), fewer one at a time from {@link #nextGaussian()}.
   */
  public synchronized void fillNormal(float[] a, int off, int n, double mean, double std) {
    draw();
    if (n < 16) {
      for (int i = off; i < off + n; i++) a[i] = (float) (gaussian() * std + mean);
      return;
    }
    fillUniform(a, off, n, 0, 1);
    float m = (float) mean, s = (float) std;
    for (int i = 0; i + 16 <= n; i += 16) normal16(a, off + i, m, s);
    if (n % 16 != 0) {
      int last = off + n - 16;
      fillUniform(a, last, 16, 0, 1);
      normal16(a, last, m, s);
    }
  }

  /** {@link #fillNormal(float[], int, int, double, double)} for float64. */
  public synchronized void fillNormal(double[] a, int off, int n, double mean, double std) {
    draw();
    if (n < 16) {
      for (int i = off; i < off + n; i++) a[i] = gaussian() * std + mean;
      return;
    }
    for (int i = off; i < off + n; i++) a[i] = uniform53();
    for (int i = 0; i + 16 <= n; i += 16) normal16(a, off + i, mean, std);
    if (n % 16 != 0) {
      int last = off + n - 16;
      for (int i = last; i < off + n; i++) a[i] = uniform53();
      normal16(a, last, mean, std);
    }
  }

  /**
   * One block of PyTorch's float32 Box-Muller (its AVX2 kernel: float arithmetic, a fused multiply-add
   * at the end). log, sin and cos are the polynomials below, evaluated in double and rounded to float:
   * within an ulp or so of PyTorch's float approximations, and 4x faster than StrictMath's.
   */
  private static void normal16(float[] a, int o, float mean, float std) {
    for (int j = 0; j < 8; j++) {
      float u1 = 1f - a[o + j];
      float u2 = a[o + j + 8];
      float radius = (float) Math.sqrt(-2f * (float) logUnit(u1));
      double theta = TWO_PI_F * u2; // the float product, exact in double
      // theta in [0, 2 pi): q quarter turns and a remainder r in [-pi/4, pi/4]
      double q = Math.rint(theta * (2 / Math.PI));
      double r = (theta - q * PIO2_HI) - q * PIO2_LO;
      double r2 = r * r;
      double sin = r + r * r2 * (-1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880 + r2 * (-1.0 / 39916800)))));
      double cos = 1 + r2 * (-0.5 + r2 * (1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320 + r2 * (-1.0 / 3628800
          + r2 * (1.0 / 479001600))))));
      // quarter turn q: (cos, sin) of theta is (cos r, sin r) turned q times; selects, not branches
      int qi = (int) q & 3;
      boolean odd = (qi & 1) != 0;
      double ca = odd ? sin : cos;
      double sa = odd ? cos : sin;
      double c = ((qi + 1) & 2) != 0 ? -ca : ca;
      double sn = (qi & 2) != 0 ? -sa : sa;
      a[o + j] = Math.fma(radius * (float) c, std, mean);
      a[o + j + 8] = Math.fma(radius * (float) sn, std, mean);
    }
  }

  /** pi/2 as a 33-bit head and the rest (fdlibm's pio2_1 and pio2_1t): q * PIO2_HI is exact for small q. */
  private static final double PIO2_HI = 1.57079632673412561417e+00;
  private static final double PIO2_LO = 6.07710050650619224932e-11;

  /**
   * ln(x) for 0 < x <= 1 (a float, so normal): x = m 2^e with m in [sqrt(1/2), sqrt(2)), and
   * ln(m) = 2 atanh(s), s = (m - 1)/(m + 1), |s| <= 0.172, by its series to s^13 (truncation below
   * 5e-13). Plain double arithmetic: the same bits on every machine.
   */
  static double logUnit(float x) {
    int bits = Float.floatToRawIntBits(x);
    int e = (bits >>> 23) - 127;
    double m = Float.intBitsToFloat((bits & 0x7FFFFF) | 0x3F800000); // the mantissa in [1, 2), exactly
    if (m > 1.4142135623730951) {
      m *= 0.5;
      e++;
    }
    double f = m - 1;
    double t = f / (2 + f);
    double t2 = t * t;
    double series = 2 * t * (1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 * (1.0 / 9 + t2 * (1.0 / 11
        + t2 * (1.0 / 13)))))));
    return e * 0.6931471805599453 + series;
  }

  private static void normal16(double[] a, int o, double mean, double std) {
    for (int j = 0; j < 8; j++) {
      double u1 = 1 - a[o + j];
      double u2 = a[o + j + 8];
      double radius = StrictMath.sqrt(-2 * StrictMath.log(u1));
      double theta = 2.0 * Math.PI * u2;
      a[o + j] = radius * StrictMath.cos(theta) * std + mean;
      a[o + j + 8] = radius * StrictMath.sin(theta) * std + mean;
    }
  }

  /**
   * A random permutation of {@code 0..n-1}, as {@code torch.randperm(n, generator=g)}: for
   * {@code i = 0 .. n-2}, swap element {@code i} with element {@code i + nextInt() mod (n - i)}.
   */
  public synchronized int[] permutation(int n) {
    draw();
    if (n < 0) throw new IllegalArgumentException("Generator.permutation: n must be non-negative, got " + n);
    int[] a = new int[n];
    for (int i = 0; i < n; i++) a[i] = i;
    for (int i = 0; i < n - 1; i++) {
      int z = (int) ((next32() & 0xFFFFFFFFL) % (n - i)) + i;
      int t = a[i];
      a[i] = a[z];
      a[z] = t;
    }
    return a;
  }

  /** Advances the state as {@link #permutation(int)} does, without building it. */
  public synchronized void skipPermutation(int n) {
    draw();
    for (int i = 0; i < n - 1; i++) next32();
  }
}
