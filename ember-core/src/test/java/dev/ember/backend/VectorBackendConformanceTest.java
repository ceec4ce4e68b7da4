package dev.ember.backend;

import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.ember.backend.cpu.CpuBackend;
import dev.ember.backend.cpu.CpuBackends;
import dev.ember.backend.cpu.FloatKernels;

/** The Vector API kernels; the build runs tests with the module, so they must be present. */
class VectorBackendConformanceTest extends BackendConformanceTest {
  private static final Backend BACKEND = create();

  private static Backend create() {
    FloatKernels k = CpuBackends.vectorKernelsOrNull();
    assertNotNull(k, "the Vector API kernels must load when tests run with --add-modules jdk.incubator.vector");
    return new CpuBackend(k);
  }

  @Override
  protected Backend backend() {
    return BACKEND;
  }
}
