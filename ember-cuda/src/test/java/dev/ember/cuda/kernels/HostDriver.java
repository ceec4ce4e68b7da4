package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A kernel source run on the host: g++ compiles host_shim.h (the CUDA qualifiers and grid as one host thread), then
 * a driver (a test resource that {@code #include}s the kernel source, written next to it), and the driver answers
 * requests on stdin with one line each. Skips the test where g++ is absent.
 */
final class HostDriver {
  private final Path dir;
  private final Path exe;

  private HostDriver(Path dir, Path exe) {
    this.dir = dir;
    this.exe = exe;
  }

  /** Compiles {@code driver} (a resource of this package) with {@code kernelSource} saved as {@code kernelFile}. */
  static HostDriver compile(Path dir, String kernelFile, String kernelSource, String driver)
      throws IOException, InterruptedException {
    Assumptions.assumeTrue(run(List.of("g++", "--version"), null, 30) == 0, "needs g++ to run the kernels on the host");
    Files.writeString(dir.resolve(kernelFile), kernelSource);
    Path cpp = dir.resolve(driver);
    Files.writeString(cpp, resource("host_shim.h") + resource(driver));
    Path exe = dir.resolve(driver.replace(".cpp", ""));
    Path log = dir.resolve(driver + ".log");
    int rc = run(List.of("g++", "-std=c++17", "-O1", "-ffp-contract=off", "-I", dir.toString(), "-o", exe.toString(),
        cpp.toString()), log, 300);
    assertEquals(0, rc, () -> kernelFile + " does not compile as host C++:\n" + read(log));
    return new HostDriver(dir, exe);
  }

  /** The driver's answer lines to {@code requests}, one per request. */
  List<String> answer(String requests, int expectedLines) throws IOException, InterruptedException {
    Path in = dir.resolve("requests-" + System.nanoTime() + ".txt");
    Path out = dir.resolve("answers-" + System.nanoTime() + ".txt");
    Files.writeString(in, requests);
    Process p = new ProcessBuilder(exe.toString()).redirectInput(in.toFile()).redirectOutput(out.toFile())
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    if (!p.waitFor(300, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail("the host driver did not finish in 300 s");
    }
    assertEquals(0, p.exitValue(), "the host driver failed");
    List<String> lines = Files.readAllLines(out);
    assertEquals(expectedLines, lines.size(), "one answer per request");
    return lines;
  }

  /** The hex fields of an answer line, as unsigned 64-bit values. */
  static long[] hex(String line) {
    String t = line.trim();
    if (t.isEmpty()) return new long[0];
    String[] f = t.split(" ");
    long[] v = new long[f.length];
    for (int i = 0; i < f.length; i++) v[i] = Long.parseUnsignedLong(f[i], 16);
    return v;
  }

  static String resource(String name) throws IOException {
    try (InputStream in = HostDriver.class.getResourceAsStream(name)) {
      if (in == null) throw new IOException("missing test resource " + name);
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  static int run(List<String> cmd, Path log, int seconds) throws InterruptedException {
    try {
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
      pb.redirectOutput(log == null ? ProcessBuilder.Redirect.DISCARD : ProcessBuilder.Redirect.to(log.toFile()));
      Process p = pb.start();
      if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return -1;
      }
      return p.exitValue();
    } catch (IOException e) {
      return -1;
    }
  }

  static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }
}
