package dev.ember.cuda.runtime;

import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.lib.Nvrtc;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Ember's kernels are CUDA C compiled at run time by NVRTC for the device's own architecture, once: a cubin is
 * kept in memory per context and on disk (system property {@code ember.cuda.cache}, {@code EMBER_CUDA_CACHE}, else {@code ~/.cache/ember/cuda}) under the
 * SHA-256 of the source, the options and NVRTC's version, written to a temporary file and moved into place so a
 * reader never sees half a cubin. Every source is compiled with {@link #PRELUDE} in front of it; kernels are
 * declared {@code extern "C"} so they are found by their plain names.
 */
public final class KernelCache {
  /**
   * What every kernel source may use: {@code struct Geo} (a view's rank, element count, shape and strides in
   * elements, as {@link KernelArgs#view} passes it) and {@code geo_offset(g, i)}, the element offset of the
   * {@code i}-th element in row-major order.
   */
  public static final String PRELUDE = """
      #define EMBER_MAX_RANK 8
      struct Geo { int rank; long long numel; long long shape[EMBER_MAX_RANK]; long long stride[EMBER_MAX_RANK]; };
      __device__ __forceinline__ long long geo_offset(const Geo& g, long long i) {
        long long off = 0;
        for (int d = g.rank - 1; d >= 0; --d) {
          long long s = g.shape[d];
          long long q = i / s;
          off += (i - q * s) * g.stride[d];
          i = q;
        }
        return off;
      }
      """;
  /** Threads per block of {@link #launch1d}. */
  public static final int BLOCK = 256;

  private final CudaContext ctx;
  private final Map<String, Long> modules = new ConcurrentHashMap<>();
  private final Map<String, Long> functions = new ConcurrentHashMap<>();

  KernelCache(CudaContext ctx) {
    this.ctx = ctx;
  }

  /**
   * The NVRTC options Ember compiles with for {@code arch} (e.g. {@code sm_90}). {@code --fmad=false}: no
   * {@code a * b + c} is contracted into a fused multiply-add, so an elementwise kernel rounds every operation
   * as the CPU's kernels do and gives their bits; IEEE division and square root are NVRTC's defaults.
   */
  public static List<String> options(String arch) {
    return List.of("--gpu-architecture=" + arch, "--std=c++17", "--fmad=false");
  }

  /**
   * The kernel {@code kernelName} of {@code source} ({@link #PRELUDE} is prepended), compiled and loaded on first
   * use. {@code sourceName} names the source in compiler messages.
   */
  public long function(String sourceName, String source, String kernelName) {
    String fkey = sourceName + "#" + kernelName + "#" + source.hashCode();
    Long f = functions.get(fkey);
    if (f != null) return f;
    ctx.makeCurrent();
    long module = modules.computeIfAbsent(sourceName + "#" + source.hashCode() + "#" + source.length(),
        k -> ctx.driver().moduleLoadData(cubin(sourceName, source, ctx.arch())));
    long fn = ctx.driver().moduleGetFunction(module, kernelName);
    functions.put(fkey, fn);
    return fn;
  }

  /**
   * The cubin of {@code PRELUDE + source} for {@code arch}, from the disk cache or NVRTC. Needs no GPU.
   *
   * @throws dev.ember.cuda.lib.CudaException with NVRTC's log when the source does not compile
   */
  public static byte[] cubin(String sourceName, String source, String arch) {
    Nvrtc nvrtc = Nvrtc.get();
    String full = PRELUDE + source;
    List<String> opts = options(arch);
    String key = sha256(full + "\n" + opts + "\n" + nvrtc.version());
    Path dir = cacheDir();
    Path file = dir.resolve(sourceName.replaceAll("[^A-Za-z0-9_.-]", "_") + "-" + arch + "-" + key + ".cubin");
    try {
      if (Files.isRegularFile(file)) return Files.readAllBytes(file);
    } catch (IOException e) {
      // an unreadable cache entry is recompiled
    }
    byte[] bin = nvrtc.compileCubin(full, sourceName + ".cu", opts);
    try {
      Files.createDirectories(dir);
      Path tmp = Files.createTempFile(dir, "cubin", ".tmp");
      Files.write(tmp, bin);
      try {
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException | SecurityException e) {
      // the disk cache is an optimisation: a read-only home still runs, compiling each time
    }
    return bin;
  }

  static Path cacheDir() {
    String prop = System.getProperty("ember.cuda.cache");
    if (prop != null && !prop.isBlank()) return Path.of(prop);
    String env = System.getenv("EMBER_CUDA_CACHE");
    if (env != null && !env.isBlank()) return Path.of(env);
    return Path.of(System.getProperty("user.home", "."), ".cache", "ember", "cuda");
  }

  private static String sha256(String s) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)))
          .substring(0, 32);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Launches {@code fn} over {@code n} work items in blocks of {@link #BLOCK} threads, at most 32 blocks per
   * multiprocessor: kernels loop {@code for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x *
   * gridDim.x)}. Nothing is launched when n is 0.
   */
  public void launch1d(long fn, long n, KernelArgs args) {
    if (n <= 0) return;
    long blocks = Math.min((n + BLOCK - 1) / BLOCK, 32L * ctx.multiprocessors());
    ctx.makeCurrent();
    ctx.driver().launch(fn, (int) blocks, 1, 1, BLOCK, 1, 1, 0, ctx.stream(), args);
  }

  /** Launches {@code fn} on a grid of gridX x gridY blocks of blockX threads with dynamic shared memory. */
  public void launch3(long fn, int gridX, int gridY, int blockX, int sharedBytes, KernelArgs args) {
    ctx.makeCurrent();
    if (sharedBytes > 48 * 1024) {
      throw new IllegalArgumentException("kernel needs " + sharedBytes + " bytes of shared memory, more than 48 KiB");
    }
    ctx.driver().launch(fn, gridX, gridY, 1, blockX, 1, 1, sharedBytes, ctx.stream(), args);
  }

  /** Launches {@code fn} with an explicit grid and block. */
  public void launch(long fn, int gridX, int gridY, int blockX, int sharedBytes, KernelArgs args) {
    ctx.makeCurrent();
    ctx.driver().launch(fn, gridX, gridY, 1, blockX, 1, 1, sharedBytes, ctx.stream(), args);
  }
}
