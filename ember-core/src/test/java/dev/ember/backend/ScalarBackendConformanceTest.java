package dev.ember.backend;

import dev.ember.backend.cpu.CpuBackends;

/** The plain-Java CPU kernels (the reference, and the fallback without the Vector API). */
class ScalarBackendConformanceTest extends BackendConformanceTest {
  private static final Backend BACKEND = CpuBackends.scalar();

  @Override
  protected Backend backend() {
    return BACKEND;
  }
}
