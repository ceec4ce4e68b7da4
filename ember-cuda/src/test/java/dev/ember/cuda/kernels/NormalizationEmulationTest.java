package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.cuda.testing.DeviceCompiler;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * CudaNormalization's kernels without a GPU. nvcc (or NVRTC) compiles the source for sm_90 with every kernel name
 * the Java side launches; src/test/cuda-emu/normalization.cpp runs the view path's kernels under the block and
 * shared-memory emulation (emu.h, g++) and checks they give, to the bit, what the double-array path's kernels give
 * with the host's arithmetic in between (which the GPU tests compare with the CPU). Each skips, saying why, where
 * its compiler is absent.
 */
class NormalizationEmulationTest {
  @TempDir Path tmp;

  @Test
  void theSourceCompilesForTheDeviceWithEveryKernel() {
    DeviceCompiler.assume();
    List<String> names = CudaNormalization.kernelNames();
    assertEquals(34, names.size());
    DeviceCompiler.assertKernels("normalization", CudaNormalization.SOURCE, names);
  }

  @Test
  void viewKernelsGiveTheArrayKernelsBitsUnderTheEmulator() throws Exception {
    CudaEmulator.buildAndRun(tmp, "normalization.cpp", Map.of("normalization.cu", CudaNormalization.SOURCE));
  }
}
