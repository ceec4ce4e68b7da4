package dev.ember.backend;

import dev.ember.tensor.Device;

/**
 * The memory behind a {@link dev.ember.tensor.Storage} that lives on a device other than the CPU (a CUDA
 * allocation): what the device's backend allocated and alone reads. Made by {@link Backend#allocate}; released
 * once, when the storage's {@link dev.ember.tensor.MemoryScope} closes or the storage becomes unreachable (the
 * backend arranges the latter with a {@link java.lang.ref.Cleaner} that must not reach the storage).
 */
public interface DeviceMemory {
  /** The device the memory is on. */
  Device device();

  /** The device address of the first byte (a CUDA device pointer). */
  long address();

  /** The number of bytes allocated. */
  long byteSize();

  /** Gives the memory back to the backend's allocator; idempotent, and any use afterwards is a bug. */
  void release();
}
