package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
 * The reduction and indexing kernels' logic without a GPU: src/test/cuda-emu builds their CUDA C with g++ over a
 * small emulation of blocks, threads, shared memory and atomics, runs them on small inputs and compares with plain
 * loops. Skipped where no g++ with C++20 is installed (the GPU tests check the real thing).
 */
class KernelEmulationTest {
  @TempDir Path tmp;

  private static String run(List<String> cmd, Path dir) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "timed out: " + cmd);
    return p.exitValue() + "\n" + out;
  }

  @Test
  void kernelsMatchPlainLoopsUnderTheEmulator() throws Exception {
    Path module = Path.of("").toAbsolutePath();
    Path emu = module.resolve("src/test/cuda-emu");
    Path kernels = module.resolve("src/main/resources/dev/ember/cuda/kernels");
    Assumptions.assumeTrue(Files.isDirectory(emu) && Files.isDirectory(kernels), "run from the ember-cuda module");
    String version;
    try {
      version = run(List.of("g++", "--version"), tmp);
    } catch (IOException e) {
      version = "missing";
    }
    Assumptions.assumeTrue(version.startsWith("0\n"), "needs g++ to build the kernel emulation: " + version.strip());
    Path exe = tmp.resolve("emu");
    String built = run(List.of("g++", "-std=c++20", "-O1", "-pthread", "-w", "-I" + kernels, "-I" + emu,
        emu.resolve("reduce_indexing.cpp").toString(), "-o", exe.toString()), tmp);
    Assumptions.assumeFalse(built.contains("barrier") && !built.startsWith("0\n"), "needs C++20 <barrier>: " + built);
    assertTrue(built.startsWith("0\n"), "g++ failed:\n" + built);
    String ran = run(List.of(exe.toString()), tmp);
    assertEquals("0\nok (0 failures)", ran.strip(), ran);
  }
}
