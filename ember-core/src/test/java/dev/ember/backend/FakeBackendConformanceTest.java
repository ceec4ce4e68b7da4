package dev.ember.backend;

import dev.ember.testing.FakeDevice;

/**
 * The conformance suite on the fake device: every input moved to device memory the host cannot read, every output
 * allocated there, results copied back, so the suite itself is proved device-aware before a CUDA backend runs it.
 */
class FakeBackendConformanceTest extends BackendConformanceTest {
  @Override
  protected Backend backend() {
    return FakeDevice.DEVICE.backend();
  }
}
