package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs a driver of src/test/cuda-emu: kernels' CUDA C built with g++ over emu.h (an emulation of blocks, threads,
 * shared memory and atomics) and checked against plain loops; the driver prints {@code ok (0 failures)}. Skips,
 * saying why, without g++ (C++20's {@code <barrier>}; g++ 12's {@code _Float16} where a driver uses it) or when not
 * run from the ember-cuda module. The GPU tests check the real thing.
 */
final class CudaEmulator {
  private CudaEmulator() {}

  /**
   * Writes {@code sources} (file name to text: kernel sources held in Java) into {@code tmp}, builds {@code driver}
   * with the kernel resources, the emulation and {@code tmp} on the include path, runs it and expects no failure.
   */
  static void buildAndRun(Path tmp, String driver, Map<String, String> sources) throws Exception {
    Path module = Path.of("").toAbsolutePath();
    Path emu = module.resolve("src/test/cuda-emu");
    Path kernels = module.resolve("src/main/resources/dev/ember/cuda/kernels");
    Assumptions.assumeTrue(Files.isRegularFile(emu.resolve(driver)) && Files.isDirectory(kernels),
        "run from the ember-cuda module");
    String version;
    try {
      version = run(List.of("g++", "--version"), tmp);
    } catch (IOException e) {
      version = "missing";
    }
    Assumptions.assumeTrue(version.startsWith("0\n"), "needs g++ to build the kernel emulation: " + version.strip());
    for (Map.Entry<String, String> s : sources.entrySet()) Files.writeString(tmp.resolve(s.getKey()), s.getValue());
    Path exe = tmp.resolve(driver.replace(".cpp", ""));
    String built = run(List.of("g++", "-std=c++20", "-O1", "-ffp-contract=off", "-pthread", "-w", "-I" + kernels,
        "-I" + emu, "-I" + tmp, emu.resolve(driver).toString(), "-o", exe.toString()), tmp);
    boolean ok = built.startsWith("0\n");
    Assumptions.assumeFalse(!ok && built.contains("barrier"), "needs C++20 <barrier>: " + built);
    Assumptions.assumeFalse(!ok && built.contains("_Float16"), "needs g++ 12's _Float16: " + built);
    assertTrue(ok, "g++ failed:\n" + built);
    String ran = run(List.of(exe.toString()), tmp);
    assertEquals("0\nok (0 failures)", ran.strip(), ran);
  }

  /** The exit status, a newline and the output (stdout and stderr) of {@code cmd} run in {@code dir}. */
  private static String run(List<String> cmd, Path dir) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(300, TimeUnit.SECONDS), "timed out: " + cmd);
    return p.exitValue() + "\n" + out;
  }
}
