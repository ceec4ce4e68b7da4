package dev.ember.cuda.runtime;

import dev.ember.cuda.lib.CudaDriver;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One GPU as Ember uses it: the device's primary context (the one the CUDA runtime and PyTorch share), the stream
 * Ember's work is ordered on, and the {@link KernelCache} of compiled kernels. Every entry point that calls CUDA
 * first calls {@link #makeCurrent()}: a context is current per thread, and Ember's callers may be any thread.
 *
 * <p>Work goes to the legacy default stream (0), so kernels, cuBLASLt and the synchronous copies that read Java
 * arrays in place run in program order, as PyTorch's default stream does.
 */
public final class CudaContext {
  private static final ConcurrentHashMap<Integer, CudaContext> CONTEXTS = new ConcurrentHashMap<>();
  private final ThreadLocal<Boolean> current = ThreadLocal.withInitial(() -> false);

  private final CudaDriver driver;
  private final int ordinal;
  private final long context;
  private final String name;
  private final int[] capability;
  private final int multiprocessors;
  private final KernelCache kernels;

  private CudaContext(CudaDriver driver, int ordinal) {
    int count = driver.deviceCount();
    if (ordinal < 0 || ordinal >= count) {
      throw new IllegalArgumentException("cuda:" + ordinal + " does not exist: the driver sees " + count
          + " CUDA device" + (count == 1 ? "" : "s"));
    }
    this.driver = driver;
    this.ordinal = ordinal;
    this.context = driver.primaryContext(ordinal);
    this.name = driver.deviceName(ordinal);
    this.capability = driver.computeCapability(ordinal);
    this.multiprocessors = driver.multiprocessorCount(ordinal);
    makeCurrent();
    this.kernels = new KernelCache(this);
  }

  /**
   * The context of GPU {@code ordinal}, made on first use.
   *
   * @throws dev.ember.cuda.lib.CudaUnavailableException when there is no driver
   * @throws IllegalArgumentException when there is no such device
   */
  public static CudaContext of(int ordinal) {
    CudaContext c = CONTEXTS.get(ordinal);
    if (c != null) return c;
    CudaDriver d = CudaDriver.get();
    synchronized (CONTEXTS) {
      return CONTEXTS.computeIfAbsent(ordinal, o -> new CudaContext(d, o));
    }
  }

  /** Makes this device's context current on the calling thread (a no-op when it already is). */
  public void makeCurrent() {
    if (!current.get()) {
      driver.setCurrent(context);
      current.set(true);
    }
  }

  public CudaDriver driver() {
    return driver;
  }

  public int ordinal() {
    return ordinal;
  }

  /** The stream Ember's work on this device is ordered on. */
  public long stream() {
    return 0L;
  }

  /** The device's name as the driver reports it. */
  public String name() {
    return name;
  }

  /** {major, minor}. */
  public int[] capability() {
    return capability.clone();
  }

  /** The NVRTC architecture name of this device, e.g. {@code sm_90}. */
  public String arch() {
    return "sm_" + capability[0] + capability[1];
  }

  public int multiprocessors() {
    return multiprocessors;
  }

  public KernelCache kernels() {
    return kernels;
  }

  /** Waits until all work queued on this device has finished (and surfaces any asynchronous error). */
  public void synchronize() {
    makeCurrent();
    driver.streamSynchronize(stream());
  }

  @Override
  public String toString() {
    return "cuda:" + ordinal + " (" + name + ", " + arch() + ", " + multiprocessors + " SMs)";
  }
}
