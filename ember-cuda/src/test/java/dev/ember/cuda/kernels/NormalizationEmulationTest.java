package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.testing.DeviceCompiler;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * CudaNormalization's kernels without a GPU. nvcc (or NVRTC) compiles the source for sm_90 with every kernel name
 * the Java side launches; src/test/cuda-emu/normalization.cpp runs the view path's kernels under the block and
 * shared-memory emulation (emu.h, g++) and checks they give, to the bit, what the double-array path's kernels give
 * with the host's arithmetic in between (which the GPU tests compare with the CPU). Each skips, saying why, where
 * its compiler is absent.
 */
class NormalizationEmulationTest {
  @TempDir Path tmp;

  private static String run(List<String> cmd, Path dir) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(300, TimeUnit.SECONDS), "timed out: " + cmd);
    return p.exitValue() + "\n" + out;
  }

  @Test
  void theSourceCompilesForTheDeviceWithEveryKernel() {
    DeviceCompiler.assume();
    byte[] cubin = DeviceCompiler.cubin("normalization", CudaNormalization.SOURCE);
    assertEquals(0x7f, cubin[0] & 0xff, "a cubin is an ELF file");
    String text = new String(cubin, StandardCharsets.ISO_8859_1);
    List<String> names = CudaNormalization.kernelNames();
    assertEquals(34, names.size());
    for (String k : names) assertTrue(text.contains("\0" + k + "\0"), "normalization has no kernel " + k);
  }

  @Test
  void viewKernelsGiveTheArrayKernelsBitsUnderTheEmulator() throws Exception {
    Path emu = Path.of("").toAbsolutePath().resolve("src/test/cuda-emu");
    Assumptions.assumeTrue(Files.isRegularFile(emu.resolve("normalization.cpp")), "run from the ember-cuda module");
    String version;
    try {
      version = run(List.of("g++", "--version"), tmp);
    } catch (IOException e) {
      version = "missing";
    }
    Assumptions.assumeTrue(version.startsWith("0\n"), "needs g++ to build the kernel emulation: " + version.strip());
    Files.writeString(tmp.resolve("normalization.cu"), CudaNormalization.SOURCE);
    Path exe = tmp.resolve("normalization");
    String built = run(List.of("g++", "-std=c++20", "-O1", "-ffp-contract=off", "-pthread", "-w", "-I" + emu,
        "-I" + tmp, emu.resolve("normalization.cpp").toString(), "-o", exe.toString()), tmp);
    Assumptions.assumeFalse(built.contains("barrier") && !built.startsWith("0\n"), "needs C++20 <barrier>: " + built);
    assertTrue(built.startsWith("0\n"), "g++ failed:\n" + built);
    String ran = run(List.of(exe.toString()), tmp);
    assertEquals("0\nok (0 failures)", ran.strip(), ran);
  }
}
