package dev.ember.backend;

import dev.ember.cuda.testing.Gpu;
import dev.ember.tensor.Device;
import org.junit.jupiter.api.BeforeAll;

/**
 * The conformance suite every backend passes, on {@code cuda:0}: inputs moved to the GPU by the CUDA backend's
 * copy, outputs allocated there, results copied back for the assertions. Skipped, saying why, without a GPU.
 */
class CudaBackendConformanceTest extends BackendConformanceTest {
  @BeforeAll
  static void needsAGpu() {
    Gpu.assumeDevice();
  }

  @Override
  protected Backend backend() {
    return Device.cuda(0).backend();
  }
}
