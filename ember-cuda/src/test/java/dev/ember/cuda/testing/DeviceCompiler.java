package dev.ember.cuda.testing;

import dev.ember.cuda.lib.Nvrtc;
import dev.ember.cuda.runtime.KernelCache;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Compiles a kernel source (KernelCache's prelude prepended) to an sm_90 cubin without a GPU, for compile checks:
 * with NVRTC, as the backend does, where it loads; else with {@code nvcc} from the PATH, CUDA_HOME or
 * /usr/local/cuda (a toolkit without a driver, as on build machines); the test is skipped, saying why, where
 * neither is present. nvcc's front end is NVRTC's, with the host's headers besides, so a source that compiles
 * only with them would pass here and fail on the device: the sources include none.
 */
public final class DeviceCompiler {
  private DeviceCompiler() {}

  /** Skips the test unless NVRTC or nvcc is available. */
  public static void assume() {
    Assumptions.assumeTrue(Nvrtc.tryGet().isPresent() || nvcc() != null,
        "needs NVRTC (libnvrtc.so.*) or nvcc to compile-check kernels: set EMBER_CUDA_LIBRARY_PATH or CUDA_HOME");
  }

  /** The cubin of {@code source} (without the prelude) named {@code name}, for sm_90, with Ember's options. */
  public static byte[] cubin(String name, String source) {
    String full = KernelCache.PRELUDE + source;
    if (Nvrtc.tryGet().isPresent()) return Nvrtc.get().compileCubin(full, name + ".cu", KernelCache.options("sm_90"));
    String nvcc = nvcc();
    Assumptions.assumeTrue(nvcc != null, "needs NVRTC or nvcc");
    try {
      Path dir = Files.createTempDirectory("ember-nvcc");
      Path cu = dir.resolve(name.replaceAll("[^A-Za-z0-9_.-]", "_") + ".cu");
      Path out = dir.resolve("out.cubin");
      Path log = dir.resolve("nvcc.log");
      Files.writeString(cu, full);
      List<String> cmd = new ArrayList<>(List.of(nvcc, "-cubin", "-arch=sm_90", "-std=c++17", "--fmad=false",
          "-o", out.toString(), cu.toString()));
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      if (!p.waitFor(600, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError("nvcc did not finish compiling " + name + " in 600 s");
      }
      if (p.exitValue() != 0) throw new AssertionError(name + " does not compile:\n" + Files.readString(log));
      return Files.readAllBytes(out);
    } catch (IOException e) {
      throw new AssertionError("compiling " + name + " with nvcc: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /**
   * Compiles {@code source} as {@link #cubin} does and checks that the result is an ELF file with a kernel of each of
   * {@code kernels}' names (a symbol between NUL bytes); returns the cubin's bytes as ISO-8859-1 text for further
   * checks.
   */
  public static String assertKernels(String name, String source, Collection<String> kernels) {
    byte[] cubin = cubin(name, source);
    if ((cubin[0] & 0xff) != 0x7f) throw new AssertionError(name + ": a cubin is an ELF file");
    String text = new String(cubin, StandardCharsets.ISO_8859_1);
    for (String k : kernels) {
      if (!text.contains("\0" + k + "\0")) throw new AssertionError(name + " has no kernel " + k);
    }
    return text;
  }

  /** nvcc's path, or null when there is none. */
  static String nvcc() {
    List<Path> candidates = new ArrayList<>();
    String path = System.getenv("PATH");
    if (path != null) for (String d : path.split(":")) if (!d.isEmpty()) candidates.add(Path.of(d, "nvcc"));
    String home = System.getenv("CUDA_HOME");
    if (home != null) candidates.add(Path.of(home, "bin", "nvcc"));
    candidates.add(Path.of("/usr/local/cuda/bin/nvcc"));
    for (Path c : candidates) if (Files.isExecutable(c)) return c.toString();
    return null;
  }
}
