package dev.ember.cuda.lib;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * The CUDA driver API ({@code libcuda.so.1}, installed with the NVIDIA driver) through {@code java.lang.foreign}:
 * devices, primary contexts, memory, copies, streams, events, modules and launches. One per process
 * ({@link #get()}); every call that fails throws {@link CudaException} naming the call and CUDA's error.
 *
 * <p>Handles (contexts, streams, events, modules, functions) and device pointers are {@code long}s. Stream
 * {@code 0} is the legacy default stream. Host memory passed to a copy is a {@link MemorySegment}: a native one
 * (from an {@link Arena} or {@link #hostAlloc pinned}), or for the synchronous copies also a heap segment
 * ({@code MemorySegment.ofArray}), which is passed without an intermediate copy.
 */
public final class CudaDriver {
  /** CUDA_ERROR_OUT_OF_MEMORY. */
  public static final int ERROR_OUT_OF_MEMORY = 2;
  /** CUDA_ERROR_NOT_READY, what {@code cuEventQuery} returns while work is pending. */
  public static final int ERROR_NOT_READY = 600;
  static final int ATTR_MULTIPROCESSOR_COUNT = 16;
  static final int ATTR_CC_MAJOR = 75;
  static final int ATTR_CC_MINOR = 76;

  private static final Linker LINKER = Linker.nativeLinker();
  private static final LoadOnce<CudaDriver> INSTANCE = new LoadOnce<>(CudaDriver::load);

  private final MethodHandle cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet, cuDeviceGetName,
      cuDeviceTotalMem, cuDeviceGetAttribute, cuDevicePrimaryCtxRetain, cuCtxSetCurrent, cuCtxGetCurrent,
      cuCtxSynchronize, cuMemAlloc, cuMemFree, cuMemGetInfo, cuMemcpyHtoDAsync, cuMemcpyDtoHAsync,
      cuMemcpyDtoDAsync, cuMemcpyHtoD, cuMemcpyDtoH, cuMemsetD8Async, cuMemsetD32Async, cuMemHostAlloc,
      cuMemFreeHost, cuStreamCreate, cuStreamSynchronize, cuStreamDestroy, cuStreamWaitEvent, cuEventCreate,
      cuEventRecord, cuEventSynchronize, cuEventQuery, cuEventElapsedTime, cuEventDestroy, cuModuleLoadData,
      cuModuleGetFunction, cuLaunchKernel, cuGetErrorName, cuGetErrorString;

  private CudaDriver(SymbolLookup lib) {
    cuInit = bind(lib, "cuInit", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    cuDriverGetVersion = bind(lib, "cuDriverGetVersion", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    cuDeviceGetCount = bind(lib, "cuDeviceGetCount", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    cuDeviceGet = bind(lib, "cuDeviceGet", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    cuDeviceGetName = bind(lib, "cuDeviceGetName", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
    cuDeviceTotalMem = bind(lib, "cuDeviceTotalMem_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    cuDeviceGetAttribute = bind(lib, "cuDeviceGetAttribute",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
    cuDevicePrimaryCtxRetain = bind(lib, "cuDevicePrimaryCtxRetain",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    cuCtxSetCurrent = bind(lib, "cuCtxSetCurrent", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    cuCtxGetCurrent = bind(lib, "cuCtxGetCurrent", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    cuCtxSynchronize = bind(lib, "cuCtxSynchronize", FunctionDescriptor.of(JAVA_INT));
    cuMemAlloc = bind(lib, "cuMemAlloc_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    cuMemFree = bind(lib, "cuMemFree_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    cuMemGetInfo = bind(lib, "cuMemGetInfo_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    cuMemcpyHtoDAsync = bind(lib, "cuMemcpyHtoDAsync_v2",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG));
    cuMemcpyDtoHAsync = bind(lib, "cuMemcpyDtoHAsync_v2",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    cuMemcpyDtoDAsync = bind(lib, "cuMemcpyDtoDAsync_v2",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    // The synchronous copies may read or write a Java array in place: the call is "critical" (no safepoint
    // while it runs), which lets the linker pass the address of a heap segment.
    cuMemcpyHtoD = bindCritical(lib, "cuMemcpyHtoD_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG));
    cuMemcpyDtoH = bindCritical(lib, "cuMemcpyDtoH_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG));
    cuMemsetD8Async = bind(lib, "cuMemsetD8Async",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_BYTE, JAVA_LONG, JAVA_LONG));
    cuMemsetD32Async = bind(lib, "cuMemsetD32Async",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG));
    cuMemHostAlloc = bind(lib, "cuMemHostAlloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    cuMemFreeHost = bind(lib, "cuMemFreeHost", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    cuStreamCreate = bind(lib, "cuStreamCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    cuStreamSynchronize = bind(lib, "cuStreamSynchronize", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    cuStreamDestroy = bind(lib, "cuStreamDestroy_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    cuStreamWaitEvent = bind(lib, "cuStreamWaitEvent", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
    cuEventCreate = bind(lib, "cuEventCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    cuEventRecord = bind(lib, "cuEventRecord", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
    cuEventSynchronize = bind(lib, "cuEventSynchronize", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    cuEventQuery = bind(lib, "cuEventQuery", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    cuEventElapsedTime = bindFirst(lib, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG),
        "cuEventElapsedTime_v2", "cuEventElapsedTime");
    cuEventDestroy = bind(lib, "cuEventDestroy_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    cuModuleLoadData = bind(lib, "cuModuleLoadData", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    cuModuleGetFunction = bind(lib, "cuModuleGetFunction",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
    cuLaunchKernel = bind(lib, "cuLaunchKernel", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT,
        JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS));
    cuGetErrorName = bind(lib, "cuGetErrorName", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    cuGetErrorString = bind(lib, "cuGetErrorString", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
  }

  static MethodHandle bind(SymbolLookup lib, String name, FunctionDescriptor fd) {
    MemorySegment sym = lib.find(name).orElseThrow(
        () -> new CudaUnavailableException("CUDA: the library has no symbol " + name + " (too old a version?)"));
    return LINKER.downcallHandle(sym, fd);
  }

  private static MethodHandle bindCritical(SymbolLookup lib, String name, FunctionDescriptor fd) {
    MemorySegment sym = lib.find(name).orElseThrow(
        () -> new CudaUnavailableException("CUDA: the library has no symbol " + name + " (too old a version?)"));
    return LINKER.downcallHandle(sym, fd, Linker.Option.critical(true));
  }

  static MethodHandle bindFirst(SymbolLookup lib, FunctionDescriptor fd, String... names) {
    for (String n : names) {
      Optional<MemorySegment> s = lib.find(n);
      if (s.isPresent()) return LINKER.downcallHandle(s.get(), fd);
    }
    throw new CudaUnavailableException("CUDA: the library has none of " + String.join(", ", names));
  }

  /**
   * The driver, loaded and initialised ({@code cuInit}) on first use.
   *
   * @throws CudaUnavailableException when libcuda cannot be loaded or {@code cuInit} fails (no driver or no device)
   */
  public static CudaDriver get() {
    return INSTANCE.get();
  }

  /** The driver, or empty when there is none (the reason is what {@link #get()} would throw). */
  public static Optional<CudaDriver> tryGet() {
    return INSTANCE.tryGet();
  }

  /** Why the driver is absent, or empty when it is present. */
  public static Optional<String> unavailableReason() {
    try {
      get();
      return Optional.empty();
    } catch (CudaUnavailableException e) {
      return Optional.of(e.getMessage());
    }
  }

  private static CudaDriver load() {
    SymbolLookup lib = NativeLibraries.fromEnvironment().load("cuda", "libcuda.so.1", "the CUDA driver");
    CudaDriver d = new CudaDriver(lib);
    int rc = d.callInt(d.cuInit, 0);
    if (rc != 0) {
      throw new CudaUnavailableException("CUDA: cuInit failed: " + d.describe(rc)
          + (rc == 100 ? " (the driver sees no CUDA-capable device)" : ""));
    }
    return d;
  }

  // ---- errors ----

  /** {@code NAME (code): description}, as the driver names the status. */
  public String describe(int rc) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment p = a.allocate(ADDRESS);
      String name = (int) cuGetErrorName.invokeExact(rc, p) == 0 ? cString(p) : "CUDA_ERROR_" + rc;
      String text = (int) cuGetErrorString.invokeExact(rc, p) == 0 ? cString(p) : "unknown error";
      return name + " (" + rc + "): " + text;
    } catch (Throwable t) {
      return "CUDA error " + rc;
    }
  }

  private static String cString(MemorySegment pointerHolder) {
    MemorySegment s = pointerHolder.get(ADDRESS, 0);
    return s.equals(MemorySegment.NULL) ? "" : s.reinterpret(4096).getString(0);
  }

  void check(int rc, String call) {
    if (rc != 0) throw new CudaException(call, rc, describe(rc));
  }

  private int callInt(MethodHandle h, int arg) {
    try {
      return (int) h.invokeExact(arg);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  static RuntimeException rethrow(Throwable t) {
    if (t instanceof RuntimeException r) return r;
    if (t instanceof Error e) throw e;
    return new IllegalStateException(t);
  }

  // ---- devices and contexts ----

  /** The driver's CUDA version as an integer, e.g. 13000 for 13.0. */
  public int driverVersion() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_INT);
      check((int) cuDriverGetVersion.invokeExact(v), "cuDriverGetVersion");
      return v.get(JAVA_INT, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** The number of CUDA devices. */
  public int deviceCount() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_INT);
      check((int) cuDeviceGetCount.invokeExact(v), "cuDeviceGetCount");
      return v.get(JAVA_INT, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  private int device(int ordinal) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_INT);
      check((int) cuDeviceGet.invokeExact(v, ordinal), "cuDeviceGet(" + ordinal + ")");
      return v.get(JAVA_INT, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** The device's name, e.g. {@code NVIDIA H100 80GB HBM3}. */
  public String deviceName(int ordinal) {
    int dev = device(ordinal);
    try (Arena a = Arena.ofConfined()) {
      MemorySegment buf = a.allocate(256);
      check((int) cuDeviceGetName.invokeExact(buf, 256, dev), "cuDeviceGetName");
      return buf.getString(0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** The device's memory in bytes. */
  public long totalMemory(int ordinal) {
    int dev = device(ordinal);
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_LONG);
      check((int) cuDeviceTotalMem.invokeExact(v, dev), "cuDeviceTotalMem_v2");
      return v.get(JAVA_LONG, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** A device attribute ({@code CUdevice_attribute}). */
  public int attribute(int attribute, int ordinal) {
    int dev = device(ordinal);
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_INT);
      check((int) cuDeviceGetAttribute.invokeExact(v, attribute, dev), "cuDeviceGetAttribute(" + attribute + ")");
      return v.get(JAVA_INT, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** {major, minor} compute capability, e.g. {9, 0} for Hopper. */
  public int[] computeCapability(int ordinal) {
    return new int[] {attribute(ATTR_CC_MAJOR, ordinal), attribute(ATTR_CC_MINOR, ordinal)};
  }

  /** The number of streaming multiprocessors. */
  public int multiprocessorCount(int ordinal) {
    return attribute(ATTR_MULTIPROCESSOR_COUNT, ordinal);
  }

  /** The device's primary context (retained; it lives as long as the process). */
  public long primaryContext(int ordinal) {
    int dev = device(ordinal);
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_LONG);
      check((int) cuDevicePrimaryCtxRetain.invokeExact(v, dev), "cuDevicePrimaryCtxRetain");
      return v.get(JAVA_LONG, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Makes {@code ctx} the calling thread's current context. */
  public void setCurrent(long ctx) {
    try {
      check((int) cuCtxSetCurrent.invokeExact(ctx), "cuCtxSetCurrent");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** The calling thread's current context, 0 when none. */
  public long currentContext() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_LONG);
      check((int) cuCtxGetCurrent.invokeExact(v), "cuCtxGetCurrent");
      return v.get(JAVA_LONG, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Waits for all work in the current context. */
  public void synchronize() {
    try {
      check((int) cuCtxSynchronize.invokeExact(), "cuCtxSynchronize");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  // ---- memory ----

  /**
   * {@code bytes} of device memory in the current context.
   *
   * @throws CudaException with {@link CudaException#code()} {@link #ERROR_OUT_OF_MEMORY} when the device is full
   */
  public long memAlloc(long bytes) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_LONG);
      check((int) cuMemAlloc.invokeExact(v, bytes), "cuMemAlloc_v2(" + bytes + " bytes)");
      return v.get(JAVA_LONG, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  public void memFree(long dptr) {
    try {
      check((int) cuMemFree.invokeExact(dptr), "cuMemFree_v2");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** {free, total} bytes of the current context's device. */
  public long[] memInfo() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment f = a.allocate(JAVA_LONG);
      MemorySegment t = a.allocate(JAVA_LONG);
      check((int) cuMemGetInfo.invokeExact(f, t), "cuMemGetInfo_v2");
      return new long[] {f.get(JAVA_LONG, 0), t.get(JAVA_LONG, 0)};
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Copies {@code bytes} from host {@code src} to device {@code dst}, ordered on {@code stream}. */
  public void memcpyHtoD(long dst, MemorySegment src, long bytes, long stream) {
    try {
      check((int) cuMemcpyHtoDAsync.invokeExact(dst, src, bytes, stream), "cuMemcpyHtoDAsync_v2");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Copies {@code bytes} from device {@code src} to host {@code dst}, ordered on {@code stream}. */
  public void memcpyDtoH(MemorySegment dst, long src, long bytes, long stream) {
    try {
      check((int) cuMemcpyDtoHAsync.invokeExact(dst, src, bytes, stream), "cuMemcpyDtoHAsync_v2");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  public void memcpyDtoD(long dst, long src, long bytes, long stream) {
    try {
      check((int) cuMemcpyDtoDAsync.invokeExact(dst, src, bytes, stream), "cuMemcpyDtoDAsync_v2");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /**
   * Synchronous host-to-device copy; {@code src} may be a heap segment ({@code MemorySegment.ofArray}), read in
   * place. Ordered after all work on blocking streams (it runs on the legacy default stream).
   */
  public void memcpyHtoDSync(long dst, MemorySegment src, long bytes) {
    try {
      check((int) cuMemcpyHtoD.invokeExact(dst, src, bytes), "cuMemcpyHtoD_v2");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Synchronous device-to-host copy; {@code dst} may be a heap segment, written in place. */
  public void memcpyDtoHSync(MemorySegment dst, long src, long bytes) {
    try {
      check((int) cuMemcpyDtoH.invokeExact(dst, src, bytes), "cuMemcpyDtoH_v2");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Sets {@code count} bytes at {@code dst} to {@code value}. */
  public void memsetD8(long dst, int value, long count, long stream) {
    try {
      check((int) cuMemsetD8Async.invokeExact(dst, (byte) value, count, stream), "cuMemsetD8Async");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Sets {@code count} 32-bit words at {@code dst} to {@code bits}. */
  public void memsetD32(long dst, int bits, long count, long stream) {
    try {
      check((int) cuMemsetD32Async.invokeExact(dst, bits, count, stream), "cuMemsetD32Async");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** {@code bytes} of page-locked (pinned) host memory, which copies reach at full bus speed and asynchronously. */
  public MemorySegment hostAlloc(long bytes) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(ADDRESS);
      check((int) cuMemHostAlloc.invokeExact(v, bytes, 0), "cuMemHostAlloc(" + bytes + " bytes)");
      return v.get(ADDRESS, 0).reinterpret(bytes);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  public void hostFree(MemorySegment pinned) {
    try {
      check((int) cuMemFreeHost.invokeExact(pinned.address()), "cuMemFreeHost");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  // ---- streams and events ----

  /** A new stream; {@code nonBlocking}: it does not synchronise with the legacy default stream. */
  public long streamCreate(boolean nonBlocking) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_LONG);
      check((int) cuStreamCreate.invokeExact(v, nonBlocking ? 1 : 0), "cuStreamCreate");
      return v.get(JAVA_LONG, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  public void streamSynchronize(long stream) {
    try {
      check((int) cuStreamSynchronize.invokeExact(stream), "cuStreamSynchronize");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  public void streamDestroy(long stream) {
    try {
      check((int) cuStreamDestroy.invokeExact(stream), "cuStreamDestroy_v2");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Makes later work on {@code stream} wait for {@code event}. */
  public void streamWaitEvent(long stream, long event) {
    try {
      check((int) cuStreamWaitEvent.invokeExact(stream, event, 0), "cuStreamWaitEvent");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** A new event; {@code timing} false makes it cheaper (no timestamps). */
  public long eventCreate(boolean timing) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_LONG);
      check((int) cuEventCreate.invokeExact(v, timing ? 0 : 2), "cuEventCreate");
      return v.get(JAVA_LONG, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  public void eventRecord(long event, long stream) {
    try {
      check((int) cuEventRecord.invokeExact(event, stream), "cuEventRecord");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  public void eventSynchronize(long event) {
    try {
      check((int) cuEventSynchronize.invokeExact(event), "cuEventSynchronize");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Whether all work before the event's record has completed. */
  public boolean eventQuery(long event) {
    try {
      int rc = (int) cuEventQuery.invokeExact(event);
      if (rc == ERROR_NOT_READY) return false;
      check(rc, "cuEventQuery");
      return true;
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Milliseconds between two recorded timing events. */
  public float eventElapsedMs(long start, long end) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_FLOAT);
      check((int) cuEventElapsedTime.invokeExact(v, start, end), "cuEventElapsedTime");
      return v.get(JAVA_FLOAT, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  public void eventDestroy(long event) {
    try {
      check((int) cuEventDestroy.invokeExact(event), "cuEventDestroy_v2");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  // ---- modules and launches ----

  /** Loads a cubin (or NUL-terminated PTX) image into the current context. */
  public long moduleLoadData(byte[] image) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment img = a.allocate(image.length + 1L, 16);
      MemorySegment.copy(image, 0, img, JAVA_BYTE, 0, image.length);
      MemorySegment v = a.allocate(JAVA_LONG);
      check((int) cuModuleLoadData.invokeExact(v, img), "cuModuleLoadData");
      return v.get(JAVA_LONG, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** The kernel {@code name} (an {@code extern "C"} name) of a loaded module. */
  public long moduleGetFunction(long module, String name) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment v = a.allocate(JAVA_LONG);
      check((int) cuModuleGetFunction.invokeExact(v, module, a.allocateFrom(name)),
          "cuModuleGetFunction(" + name + ")");
      return v.get(JAVA_LONG, 0);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Launches {@code fn} on {@code stream} with the arguments in {@code args}. */
  public void launch(long fn, int gx, int gy, int gz, int bx, int by, int bz, int sharedBytes, long stream,
      KernelArgs args) {
    try {
      check((int) cuLaunchKernel.invokeExact(fn, gx, gy, gz, bx, by, bz, sharedBytes, stream, args.pointers(),
          MemorySegment.NULL), "cuLaunchKernel");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }
}
