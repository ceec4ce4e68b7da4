package dev.ember.cuda.lib;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.Optional;

/**
 * NVRTC, CUDA's run-time compiler ({@code libnvrtc.so.*}): CUDA C source to a cubin for one GPU architecture. It
 * needs no GPU, so kernel sources are compile-checked on any machine that has the library.
 */
public final class Nvrtc {
  private static final LoadOnce<Nvrtc> INSTANCE = new LoadOnce<>(() -> {
    NativeLibraries libs = NativeLibraries.fromEnvironment();
    libs.find("nvrtc").ifPresent(NativeLibraries::preloadSiblings);
    return new Nvrtc(libs.load("nvrtc", null, "NVRTC, CUDA's run-time compiler"));
  });

  private final MethodHandle create, compile, logSize, log, cubinSize, cubin, destroy, version, errorString;

  private Nvrtc(SymbolLookup lib) {
    create = CudaDriver.bind(lib, "nvrtcCreateProgram",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS));
    compile = CudaDriver.bind(lib, "nvrtcCompileProgram", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS));
    logSize = CudaDriver.bind(lib, "nvrtcGetProgramLogSize", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));
    log = CudaDriver.bind(lib, "nvrtcGetProgramLog", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));
    cubinSize = CudaDriver.bind(lib, "nvrtcGetCUBINSize", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));
    cubin = CudaDriver.bind(lib, "nvrtcGetCUBIN", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));
    destroy = CudaDriver.bind(lib, "nvrtcDestroyProgram", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    version = CudaDriver.bind(lib, "nvrtcVersion", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    errorString = CudaDriver.bind(lib, "nvrtcGetErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
  }

  /**
   * NVRTC, loaded on first use.
   *
   * @throws CudaUnavailableException when no libnvrtc is found (the message lists where it looked)
   */
  public static Nvrtc get() {
    return INSTANCE.get();
  }

  /** NVRTC, or empty when it cannot be loaded. */
  public static Optional<Nvrtc> tryGet() {
    return INSTANCE.tryGet();
  }

  /** e.g. {@code "13.0"}. */
  public String version() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment major = a.allocate(JAVA_INT);
      MemorySegment minor = a.allocate(JAVA_INT);
      check((int) version.invokeExact(major, minor), "nvrtcVersion", null);
      return major.get(JAVA_INT, 0) + "." + minor.get(JAVA_INT, 0);
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  private String describe(int rc) {
    try {
      MemorySegment s = (MemorySegment) errorString.invokeExact(rc);
      return s.reinterpret(4096).getString(0) + " (" + rc + ")";
    } catch (Throwable t) {
      return "NVRTC error " + rc;
    }
  }

  private void check(int rc, String call, String log) {
    if (rc != 0) {
      throw new CudaException(call, rc, describe(rc) + (log == null || log.isBlank() ? "" : "\n" + log.strip()));
    }
  }

  /**
   * Compiles {@code source} to a cubin. {@code options} must name a real architecture
   * ({@code --gpu-architecture=sm_90}) for a cubin to exist.
   *
   * @throws CudaException naming the program and carrying NVRTC's log when compilation fails
   */
  public byte[] compileCubin(String source, String name, List<String> options) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment progHolder = a.allocate(JAVA_LONG);
      check((int) create.invokeExact(progHolder, a.allocateFrom(source), a.allocateFrom(name), 0,
          MemorySegment.NULL, MemorySegment.NULL), "nvrtcCreateProgram(" + name + ")", null);
      long prog = progHolder.get(JAVA_LONG, 0);
      try {
        MemorySegment opts = a.allocate(ADDRESS, Math.max(1, options.size()));
        for (int i = 0; i < options.size(); i++) opts.setAtIndex(ADDRESS, i, a.allocateFrom(options.get(i)));
        int rc = (int) compile.invokeExact(prog, options.size(), opts);
        if (rc != 0) check(rc, "nvrtcCompileProgram(" + name + ", " + options + ")", log(a, prog));
        MemorySegment size = a.allocate(JAVA_LONG);
        check((int) cubinSize.invokeExact(prog, size), "nvrtcGetCUBINSize(" + name + ")", null);
        MemorySegment bin = a.allocate(size.get(JAVA_LONG, 0));
        check((int) cubin.invokeExact(prog, bin), "nvrtcGetCUBIN(" + name + ")", null);
        return bin.toArray(JAVA_BYTE);
      } finally {
        int ignored = (int) destroy.invokeExact(progHolder);
      }
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  private String log(Arena a, long prog) throws Throwable {
    MemorySegment size = a.allocate(JAVA_LONG);
    if ((int) logSize.invokeExact(prog, size) != 0) return "";
    long n = size.get(JAVA_LONG, 0);
    if (n <= 1) return "";
    MemorySegment buf = a.allocate(n);
    if ((int) log.invokeExact(prog, buf) != 0) return "";
    return buf.getString(0);
  }
}
