package dev.ember.cuda.kernels;

import dev.ember.backend.RandomKernels;
import dev.ember.backend.View;
import dev.ember.backend.cpu.ScalarKernels;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Shapes;
import java.util.List;

/**
 * The random fills on the GPU (random.cu), from the counter-based generator Philox4x32-10 as PyTorch's CUDA
 * generator uses it: every element is a pure function of (seed, offset, its index), so the fill runs one thread
 * per 4 elements with no state on the device.
 *
 * <p>Each call draws its seed and offset from the {@link Generator} it is given ({@link #drawKey}: two
 * {@link Generator#nextLong()}), so the same seed gives the same device values and successive calls give different
 * ones. The device values are not the CPU's: the CPU draws from the generator's Mersenne Twister, the GPU from
 * Philox keyed by it (PyTorch's CPU and CUDA values differ in the same way). The transforms are the CPU's: a
 * float32 uniform keeps 24 bits of one 32-bit word, a float64 one 53 bits of two; {@code from + u (to - from)} is
 * rounded once, and a value that rounds to {@code to} becomes {@code from} (PyTorch's CUDA rule), so no value
 * equals {@code to}; normals by Box-Muller on pairs of uniforms; the truncated normal by CpuRandom's inverse-CDF
 * method; Bernoulli compares one uniform of out's dtype with keepProb. Outputs are contiguous F32 or F64 views.
 */
public final class CudaRandom implements RandomKernels {
  static final String SOURCE = Sources.load("random.cu");

  private final CudaContext ctx;
  private final KernelCache cache;

  public CudaRandom(CudaContext ctx, KernelCache cache) {
    this.ctx = ctx;
    this.cache = cache;
  }

  /** The kernel names the Java side launches, for the compile tests. */
  public static List<String> kernelNames() {
    return List.of("rn_uniform_f32", "rn_uniform_f64", "rn_normal_f32", "rn_normal_f64", "rn_trunc_normal_f32",
        "rn_trunc_normal_f64", "rn_bernoulli_f32", "rn_bernoulli_f64", "rn_philox_blocks");
  }

  /**
   * The Philox key (the seed) and the counter's high words (the offset) of one call: two {@link Generator#nextLong()}
   * draws, {k0, k1, c2, c3} = {seed lo, seed hi, offset lo, offset hi}.
   */
  public static int[] drawKey(Generator gen) {
    long seed = gen.nextLong();
    long offset = gen.nextLong();
    return new int[] {(int) seed, (int) (seed >>> 32), (int) offset, (int) (offset >>> 32)};
  }

  private long fn(String name, DType t) {
    return cache.function("random", SOURCE, name + (t == DType.F32 ? "_f32" : "_f64"));
  }

  /** Checks out (contiguous F32 or F64 on the device) and starts the arguments: out, n and the call's key. */
  private KernelArgs begin(String op, View out, Generator gen) {
    if (out.dtype() != DType.F32 && out.dtype() != DType.F64) {
      throw new IllegalArgumentException("random." + op + ": out must be float32 or float64, got "
          + out.dtype().torchName() + " of shape " + Shapes.str(out.shapeRef()));
    }
    if (!out.storage().onDevice()) {
      throw new IllegalArgumentException("random." + op + ": out is on the cpu, expected a cuda tensor: out="
          + Shapes.str(out.shapeRef()));
    }
    if (!out.isContiguous()) {
      throw new IllegalArgumentException("random." + op + ": out must be contiguous, got shape "
          + Shapes.str(out.shapeRef()) + " strides " + Shapes.str(out.stridesRef()));
    }
    if (gen == null) throw new IllegalArgumentException("random." + op + ": generator must not be null");
    int[] k = drawKey(gen);
    ctx.makeCurrent();
    return KernelArgs.begin().ptr(KernelArgs.address(out)).i64(out.numel()).i32(k[0]).i32(k[1]).i32(k[2]).i32(k[3]);
  }

  private void launch(String name, View out, KernelArgs args) {
    cache.launch1d(fn(name, out.dtype()), (out.numel() + 3) / 4, args);
  }

  @Override
  public void uniform(View out, double from, double to, Generator gen) {
    KernelArgs a = begin("uniform", out, gen);
    if (out.numel() > 0) launch("rn_uniform", out, a.f64(from).f64(to));
  }

  @Override
  public void normal(View out, double mean, double std, Generator gen) {
    KernelArgs a = begin("normal", out, gen);
    if (out.numel() > 0) launch("rn_normal", out, a.f64(mean).f64(std));
  }

  @Override
  public void truncatedNormal(View out, double mean, double std, double a, double b, Generator gen) {
    KernelArgs args = begin("truncatedNormal", out, gen);
    double lo = normCdf((a - mean) / std), hi = normCdf((b - mean) / std);
    if (out.numel() > 0) {
      launch("rn_trunc_normal", out, args.f64(2 * lo - 1).f64(2 * hi - 1).f64(std * Math.sqrt(2)).f64(mean).f64(a)
          .f64(b));
    }
  }

  @Override
  public void bernoulli(View out, double keepProb, double value, Generator gen) {
    KernelArgs a = begin("bernoulli", out, gen);
    if (out.numel() > 0) launch("rn_bernoulli", out, a.f64(keepProb).f64(value));
  }

  /** The standard normal CDF, as CpuRandom computes it. */
  static double normCdf(double x) {
    return 0.5 * ScalarKernels.erfc(-x / Math.sqrt(2));
  }
}
