package dev.ember.cuda.kernels;


import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reduction and indexing kernels' logic without a GPU: src/test/cuda-emu builds their CUDA C with g++ over a
 * small emulation of blocks, threads, shared memory and atomics, runs them on small inputs and compares with plain
 * loops. Skipped where no g++ with C++20 is installed (the GPU tests check the real thing).
 */
class KernelEmulationTest {
  @TempDir Path tmp;

  @Test
  void kernelsMatchPlainLoopsUnderTheEmulator() throws Exception {
    CudaEmulator.buildAndRun(tmp, "reduce_indexing.cpp", Map.of());
  }
}
