package dev.ember.backend.cpu;

import dev.ember.backend.Backend;
import java.util.logging.Logger;

/**
 * Chooses the CPU kernels once per process: the Vector API set when {@code jdk.incubator.vector}
 * is readable, else the scalar set with one warning that says how to enable the fast path (the
 * vector class is loaded by name, so it is never linked when the module is absent).
 * {@code -Dember.kernels=scalar} forces the scalar set.
 */
public final class CpuBackends {
  private static final Logger LOG = Logger.getLogger("dev.ember");
  private static final String VECTOR_KERNELS = "dev.ember.backend.cpu.vector.VectorFloatKernels";
  private static volatile CpuBackend instance;

  private CpuBackends() {}

  public static Backend instance() {
    CpuBackend b = instance;
    if (b == null) {
      synchronized (CpuBackends.class) {
        b = instance;
        if (b == null) {
          b = new CpuBackend(chooseKernels());
          instance = b;
        }
      }
    }
    return b;
  }

  /** A backend on the plain-Java kernels (the reference in conformance tests). */
  public static CpuBackend scalar() {
    return new CpuBackend(new ScalarFloatKernels());
  }

  /** The Vector API kernels, or null when the module is not readable. */
  public static FloatKernels vectorKernelsOrNull() {
    if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) return null;
    try {
      return (FloatKernels) Class.forName(VECTOR_KERNELS).getDeclaredConstructor().newInstance();
    } catch (ReflectiveOperationException | LinkageError e) {
      LOG.warning("ember: could not load the Vector API kernels (" + e + "); using scalar CPU kernels");
      return null;
    }
  }

  private static FloatKernels chooseKernels() {
    if ("scalar".equals(System.getProperty("ember.kernels"))) return new ScalarFloatKernels();
    if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
      LOG.warning("ember: jdk.incubator.vector is not readable, using scalar CPU kernels (several times slower);"
          + " run java with --add-modules jdk.incubator.vector (the ./ember launcher does)");
      return new ScalarFloatKernels();
    }
    FloatKernels v = vectorKernelsOrNull();
    return v == null ? new ScalarFloatKernels() : v;
  }
}
