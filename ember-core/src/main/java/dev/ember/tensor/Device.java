package dev.ember.tensor;

import dev.ember.backend.Backend;
import dev.ember.backend.cpu.CpuBackends;

/**
 * Where a tensor's storage lives and which backend computes on it. Only the CPU exists today;
 * a CUDA device will be a second constant whose backend implements the same SPI.
 */
public enum Device {
  CPU;

  /** The backend that runs kernels for tensors on this device. */
  public Backend backend() {
    return CpuBackends.instance();
  }

  @Override
  public String toString() {
    return name().toLowerCase();
  }
}
