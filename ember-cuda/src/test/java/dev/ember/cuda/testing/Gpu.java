package dev.ember.cuda.testing;

import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.lib.Nvrtc;
import org.junit.jupiter.api.Assumptions;

/** Skips a test, saying why, where the machine has no CUDA device or no NVRTC (CI has neither). */
public final class Gpu {
  private Gpu() {}

  /** Skips unless a CUDA driver with at least one device is present. */
  public static void assumeDevice() {
    var why = CudaDriver.unavailableReason();
    Assumptions.assumeTrue(why.isEmpty(), () -> "needs a CUDA GPU: " + why.orElse(""));
    Assumptions.assumeTrue(CudaDriver.get().deviceCount() > 0, "needs a CUDA GPU: the driver sees none");
  }

  /** Skips unless NVRTC can be loaded (it needs no GPU; set EMBER_CUDA_LIBRARY_PATH to its folder). */
  public static void assumeNvrtc() {
    Assumptions.assumeTrue(Nvrtc.tryGet().isPresent(),
        "needs NVRTC (libnvrtc.so.*): set EMBER_CUDA_LIBRARY_PATH or CUDA_HOME to compile-check kernels");
  }
}
