package dev.ember.backend.cpu;

import java.util.logging.Logger;

/**
 * Bulk conversions between float32 arrays and BF16 / F16 bit patterns (in {@code short} arrays), bit for
 * bit as {@link dev.ember.tensor.HalfFloats}: {@link ScalarHalfKernels} (the reference and fallback) and a
 * Vector API set, which {@link #instance()} loads by name as {@link CpuBackends} does for the float kernels.
 */
public interface HalfKernels {
  String name();

  /** dst[d + i] = bf16(src[so + i]) for i &lt; n. */
  void toBf16(float[] src, int so, short[] dst, int d, int n);

  /** dst[d + i] = bf16ToFloat(src[so + i]) for i &lt; n. */
  void fromBf16(short[] src, int so, float[] dst, int d, int n);

  /** dst[d + i] = f16(src[so + i]) for i &lt; n. */
  void toF16(float[] src, int so, short[] dst, int d, int n);

  /** dst[d + i] = f16ToFloat(src[so + i]) for i &lt; n. */
  void fromF16(short[] src, int so, float[] dst, int d, int n);

  /** The plain-Java set. */
  static HalfKernels scalar() {
    return ScalarHalfKernels.INSTANCE;
  }

  /**
   * The set this process uses: the Vector API one when {@code jdk.incubator.vector} is readable (and
   * {@code -Dember.kernels=scalar} is not set), else the scalar one.
   */
  static HalfKernels instance() {
    return ChosenHalfKernels.KERNELS;
  }

  /** The Vector API set, or null when the module is not readable or the class does not load. */
  static HalfKernels vectorOrNull() {
    if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) return null;
    try {
      return (HalfKernels) Class.forName("dev.ember.backend.cpu.vector.VectorHalfKernels")
          .getDeclaredConstructor().newInstance();
    } catch (ReflectiveOperationException | LinkageError e) {
      Logger.getLogger("dev.ember").warning("ember: could not load the Vector API half-float kernels (" + e
          + "); using scalar ones");
      return null;
    }
  }

  /**
   * Throws an {@link IndexOutOfBoundsException} naming the op when [off, off + n) does not fit an array of
   * the given length (or n is negative).
   */
  static void checkRange(String op, String what, int off, int n, int length) {
    if (n < 0 || off < 0 || off > length - n) {
      throw new IndexOutOfBoundsException(op + ": " + what + " range [" + off + ", " + ((long) off + n)
          + ") with n=" + n + " does not fit an array of length " + length);
    }
  }
}
