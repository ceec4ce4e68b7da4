package dev.ember.testing;

import dev.ember.tensor.Device;
import java.util.function.BiConsumer;

/**
 * A device for tests that need no hardware: {@code fake:0} and {@code fake:1}, whose buffers the host cannot read
 * (every {@link dev.ember.tensor.Storage} host accessor throws on them, as on a GPU's) and whose backend computes
 * with the CPU kernels through copies ({@link FakeBackend}). An op, module or optimizer that allocates on the
 * wrong device, reads device data on the host, or drops a device along the way fails on it, so running a model on
 * {@link #DEVICE} and comparing with the CPU proves the code above the backend device-correct.
 */
public final class FakeDevice {
  /** The device type the fake provider serves. */
  public static final String TYPE = "fake";
  /** {@code fake:0}. */
  public static final Device DEVICE = Device.of(TYPE, 0);
  /** {@code fake:1}, a second device to mix with the first. */
  public static final Device OTHER = Device.of(TYPE, 1);

  private FakeDevice() {}

  private static final ThreadLocal<BiConsumer<String, Object[]>> WATCH = new ThreadLocal<>();
  private static final ThreadLocal<Boolean> WRITES_HALF = ThreadLocal.withInitial(() -> false);

  /**
   * Makes the fake backends answer {@code matmulWritesHalf} with {@code on} on this thread until the returned scope
   * is closed (and compute such a product as the float32 one rounded once), so that the op layer's path for a GPU
   * that writes half products runs here.
   */
  public static AutoCloseable writingHalf(boolean on) {
    return switched(WRITES_HALF, on);
  }

  /** Sets {@code flag} to {@code on} on this thread until the returned scope is closed, then back. */
  private static AutoCloseable switched(ThreadLocal<Boolean> flag, boolean on) {
    boolean before = flag.get();
    flag.set(on);
    return () -> flag.set(before);
  }

  static boolean writesHalf() {
    return WRITES_HALF.get();
  }

  private static final ThreadLocal<Boolean> CONV_READS_HALF = ThreadLocal.withInitial(() -> false);

  /**
   * Makes the fake backends' convolution kernels answer {@code readsHalf} with {@code on} on this thread until the
   * returned scope is closed, and take BF16/F16 operands by widening them to float32 on the host, running the CPU's
   * float32 kernel and rounding its outputs once: the op layer's path for a GPU whose convolutions read halves runs
   * here, with the CPU's results.
   */
  public static AutoCloseable convolutionReadingHalf(boolean on) {
    return switched(CONV_READS_HALF, on);
  }

  static boolean convolutionReadsHalf() {
    return CONV_READS_HALF.get();
  }

  /**
   * Hands {@code listener} the name and arguments (device views as the backend gets them) of every primitive a fake
   * backend runs on this thread, kernel families' methods included, until the returned scope is closed: for tests of
   * what reaches the backend (which dtypes a GEMM reads, how many copies a step makes).
   */
  public static AutoCloseable watch(BiConsumer<String, Object[]> listener) {
    BiConsumer<String, Object[]> before = WATCH.get();
    WATCH.set(listener);
    return () -> WATCH.set(before);
  }

  static void called(String name, Object[] args) {
    BiConsumer<String, Object[]> w = WATCH.get();
    if (w != null) w.accept(name, args == null ? new Object[0] : args);
  }

  /** How many times {@link Device#synchronize()} reached {@code device}'s backend so far. */
  public static long synchronizations(Device device) {
    return FakeMemory.counters(device).syncs().get();
  }

  /** How many {@code copyNonBlocking} calls reached {@code device}'s backend so far. */
  public static long nonBlockingCopies(Device device) {
    return FakeMemory.counters(device).nonBlockingCopies().get();
  }
}
