package dev.ember.cuda;

import dev.ember.backend.DeviceMemory;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Storage;
import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One CUDA device allocation behind a {@link Storage}: its address and size, and how to give it back. It is given
 * back once, by whichever comes first: {@link #release()} (its {@link dev.ember.tensor.MemoryScope} closed, or a
 * caller done with a scratch buffer) or the {@link Cleaner} that runs when the storage becomes unreachable. The
 * cleaning action holds the address and the allocator's free function, never the storage (a cleaner whose action
 * reaches its object never runs).
 */
public final class CudaMemory implements DeviceMemory {
  /** Gives an allocation back to whatever made it (the driver, or a caching allocator). */
  @FunctionalInterface
  public interface Free {
    /** Frees {@code bytes} bytes at device address {@code address}; called once per allocation. */
    void free(long address, long bytes);
  }

  private static final Cleaner CLEANER = Cleaner.create();

  private final Device device;
  private final long address;
  private final long byteSize;
  private final Release release;
  private volatile Cleaner.Cleanable cleanable;

  /** The memory at {@code address} of {@code byteSize} bytes on {@code device}, freed through {@code free}. */
  public CudaMemory(Device device, long address, long byteSize, Free free) {
    if (byteSize < 0) throw new IllegalArgumentException("CudaMemory: byteSize must be >= 0, got " + byteSize);
    this.device = device;
    this.address = address;
    this.byteSize = byteSize;
    this.release = new Release(address, byteSize, free);
  }

  /**
   * A storage of {@code numel} elements of {@code dtype} in {@code memory}, whose memory is freed when the storage
   * becomes unreachable (or its scope closes, or {@link #release()} is called, whichever is first).
   */
  public static Storage storage(DType dtype, int numel, CudaMemory memory) {
    Storage st;
    try {
      st = Storage.onDevice(dtype, numel, memory);
    } catch (RuntimeException e) {
      memory.release();
      throw e;
    }
    memory.cleanable = CLEANER.register(st, memory.release);
    return st;
  }

  @Override
  public Device device() {
    return device;
  }

  @Override
  public long address() {
    return address;
  }

  @Override
  public long byteSize() {
    return byteSize;
  }

  /** Whether the memory went back to its allocator. */
  public boolean isReleased() {
    return release.done.get();
  }

  @Override
  public void release() {
    Cleaner.Cleanable c = cleanable;
    if (c != null) {
      c.clean(); // runs the action at most once and unregisters it
    } else {
      release.run();
    }
  }

  @Override
  public String toString() {
    return "CudaMemory[" + device + ", 0x" + Long.toHexString(address) + ", " + byteSize + " bytes"
        + (isReleased() ? ", released]" : "]");
  }

  /** The cleaning action: the address and free function only, so it never keeps the storage reachable. */
  private static final class Release implements Runnable {
    private final long address;
    private final long bytes;
    private final Free free;
    private final AtomicBoolean done = new AtomicBoolean();

    Release(long address, long bytes, Free free) {
      this.address = address;
      this.bytes = bytes;
      this.free = free;
    }

    @Override
    public void run() {
      if (done.compareAndSet(false, true)) free.free(address, bytes);
    }
  }
}
