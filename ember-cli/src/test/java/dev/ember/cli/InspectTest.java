package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.Npy;
import dev.ember.nn.io.Npz;
import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InspectTest {
  @TempDir Path dir;

  private record Run(int status, String out, String err) {}

  private static Run inspect(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
    String[] full = new String[args.length + 1];
    full[0] = "inspect";
    System.arraycopy(args, 0, full, 1, args.length);
    int status = Main.run(full, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void printsEachTensorWithStatisticsAndTheMetadata() throws IOException {
    Map<String, Tensor> sd = new LinkedHashMap<>();
    sd.put("fc.weight", Tensor.of(new float[] {1, 2, 3, Float.NaN, 5, Float.POSITIVE_INFINITY}, 2, 3));
    sd.put("fc.bias", Tensor.of(new long[] {-1, 1}, 2));
    Path st = dir.resolve("model.safetensors");
    SafeTensors.save(sd, Map.of("epoch", "3"), st);
    Run r = inspect(st.toString());
    assertEquals(0, r.status(), r.err());
    List<String> lines = r.out().lines().toList();
    assertTrue(lines.get(0).startsWith(st + ": safetensors, 2 tensors, 8 elements, "), lines.get(0));
    assertEquals("  metadata epoch = 3", lines.get(1));
    assertTrue(lines.get(2).matches("name +dtype +shape +numel +min +max +mean +std +nan +inf"), lines.get(2));
    // fc.weight: finite values 1 2 3 5 -> min 1, max 5, mean 2.75, std 1.70783; one NaN, one Inf
    assertTrue(lines.stream().anyMatch(l -> l.matches(
        "fc\\.weight +float32 +\\[2, 3\\] +6 +1\\.00000 +5\\.00000 +2\\.75000 +1\\.70783 +1 +1")), r.out());
    assertTrue(lines.stream().anyMatch(l -> l.matches(
        "fc\\.bias +int64 +\\[2\\] +2 +-1\\.00000 +1\\.00000 +0\\.00000 +1\\.41421 +0 +0")), r.out());
    assertEquals("", r.err());
  }

  @Test
  void showsBf16AndF16Tensors() throws IOException {
    Map<String, Tensor> sd = new LinkedHashMap<>();
    sd.put("h", Tensor.of(new float[] {1, 2, 3, 70000}, 4).to(DType.F16)); // 70000 overflows float16 to inf
    sd.put("b", Tensor.of(new float[] {0.5f, 1.5f}, 2).to(DType.BF16));
    Path st = dir.resolve("half.safetensors");
    SafeTensors.save(sd, st);
    Run r = inspect(st.toString());
    assertEquals(0, r.status(), r.err());
    assertTrue(r.out().startsWith(st + ": safetensors, 2 tensors, 6 elements, "), r.out());
    assertTrue(r.out().lines().anyMatch(l -> l.matches("h +float16 +\\[4\\] +4 +1\\.00000 +3\\.00000 +2\\.00000 .* 0 +1")),
        r.out());
    assertTrue(r.out().lines().anyMatch(l -> l.matches("b +bfloat16 +\\[2\\] +2 +0\\.500000 +1\\.50000 +1\\.00000 .* 0 +0")),
        r.out());
    Path npy = dir.resolve("h.npy");
    Npy.save(sd.get("h"), npy);
    Run n = inspect(npy.toString());
    assertEquals(0, n.status(), n.err());
    assertTrue(n.out().lines().anyMatch(l -> l.contains("float16") && l.contains("[4]")), n.out());
  }

  @Test
  void readsNpyAndNpzByTheirMagic() throws IOException {
    Path npy = dir.resolve("x.bin"); // no telling extension: the magic decides
    Npy.save(Tensor.of(new double[] {1, 2, 3}, 3), npy);
    Run r = inspect(npy.toString());
    assertEquals(0, r.status(), r.err());
    assertTrue(r.out().startsWith(npy + ": npy, 1 tensor, 3 elements"), r.out());
    Path npz = dir.resolve("w.npz");
    Npz.save(Map.of("a", Tensor.zeros(2, 2)), npz, true);
    Run z = inspect(npz.toString());
    assertEquals(0, z.status(), z.err());
    assertTrue(z.out().contains("a     float32  [2, 2]      4"), z.out());
  }

  @Test
  void badMissingAndEmptyFilesPrintOneLineAndExit2() throws IOException {
    Path missing = dir.resolve("nope.safetensors");
    Run m = inspect(missing.toString());
    assertEquals(2, m.status());
    assertEquals("ember inspect: " + missing + ": no such file\n", m.err());
    assertEquals("", m.out());

    Path bad = dir.resolve("bad.safetensors");
    Files.write(bad, new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f, 0, 0, 0, 1, 2});
    Run b = inspect(bad.toString());
    assertEquals(2, b.status());
    assertEquals(1, b.err().lines().count(), b.err());
    assertEquals("ember inspect: " + bad + ": byte 0: header length 549755813887 exceeds the 100000000-byte cap\n", b.err());

    Path truncatedNpy = dir.resolve("t.npy");
    Npy.save(Tensor.zeros(10), truncatedNpy);
    byte[] all = Files.readAllBytes(truncatedNpy);
    Files.write(truncatedNpy, Arrays.copyOf(all, all.length - 8));
    Run t = inspect(truncatedNpy.toString());
    assertEquals(2, t.status());
    assertEquals("ember inspect: " + truncatedNpy + ": data holds 32 bytes but '<f4' (10,) needs 40\n", t.err());

    Path text = dir.resolve("notes.txt");
    Files.writeString(text, "hello, world");
    assertEquals("ember inspect: " + text + ": not a safetensors, .npy or .npz file (read as safetensors: byte 0: "
        + "header length 8583909746840200552 exceeds the 100000000-byte cap)\n", inspect(text.toString()).err());

    Run dirRun = inspect(dir.toString());
    assertEquals("ember inspect: " + dir + ": not a regular file\n", dirRun.err());
    Run usage = inspect();
    assertEquals(2, usage.status());
    assertTrue(usage.err().startsWith("usage: ./ember inspect FILE"), usage.err());
    Run two = inspect(text.toString(), dir.toString());
    assertEquals(2, two.status());
    assertEquals("ember inspect: unexpected argument '" + dir + "'; inspect reads one file (see ./ember inspect --help)\n",
        two.err());
    Run option = inspect("--all", text.toString());
    assertEquals(2, option.status());
    assertEquals("ember inspect: unknown option --all (see ./ember inspect --help)\n", option.err());
  }

  // ------------------------------------------------------------------ npz archives and files that cannot fit

  /** numpy-written archives at the zip format's edges (ember-nn's npy/make_npz_fixtures.py). */
  private static Path numpyFixture(String name) {
    Path p = Path.of("..", "ember-nn", "src", "test", "resources", "dev", "ember", "nn", "io", "npy", name);
    assertTrue(Files.isRegularFile(p), "fixture " + p.toAbsolutePath());
    return p;
  }

  private static byte[] storedNpz(byte[] npy) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (var zip = new ZipOutputStream(bytes)) {
      zip.putNextEntry(new ZipEntry("w.npy"));
      zip.write(npy);
      zip.closeEntry();
    }
    return bytes.toByteArray();
  }

  private static int lastIndexOf(byte[] z, int b0, int b1, int b2, int b3) {
    for (int i = z.length - 4; i >= 0; i--) {
      if (z[i] == b0 && z[i + 1] == b1 && z[i + 2] == b2 && z[i + 3] == b3) return i;
    }
    throw new IllegalStateException("signature not found");
  }

  @Test
  void readsTheArchivesNumPyReads() {
    for (String name : List.of("comment_65535.npz", "comment_length_past_end.npz", "zip64.npz",
        "savez_compressed_100k.npz", "savez_compressed.npz")) {
      Run r = inspect(numpyFixture(name).toString());
      assertEquals(0, r.status(), name + ": " + r.err());
      assertEquals("", r.err());
      assertTrue(r.out().contains(": npz, "), r.out());
    }
  }

  @Test
  void badArchivesPrintOneLineNamingTheMemberAndTheByteAndExit2() throws IOException {
    Path good = dir.resolve("g.npy");
    Npy.save(Tensor.zeros(2, 3), good);
    byte[] npy = Files.readAllBytes(good);
    // the end-of-archive comment length says 65535 but the comment is cut short: numpy reads it, so do we
    byte[] comment = storedNpz(npy);
    ByteBuffer.wrap(comment, lastIndexOf(comment, 'P', 'K', 5, 6) + 20, 2)
        .order(ByteOrder.LITTLE_ENDIAN).putShort((short) 0xffff);
    Path c = Files.write(dir.resolve("comment.npz"), comment);
    Run ok = inspect(c.toString());
    assertEquals(0, ok.status(), ok.err());

    byte[] offset = storedNpz(npy);
    int cen = lastIndexOf(offset, 'P', 'K', 1, 2);
    ByteBuffer.wrap(offset, cen + 42, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(7);
    Path o = Files.write(dir.resolve("offset.npz"), offset);
    Run r = inspect(o.toString());
    assertEquals(2, r.status());
    assertTrue(r.err().matches("ember inspect: \\Q" + o + "\\E: member 'w\\.npy': bad local header signature "
        + "0x[0-9a-f]{8} at byte 7 \\(expected 0x04034b50, PK\\\\3\\\\4; the central directory entry at byte "
        + cen + " points there\\)\n"), r.err());

    byte[] method = storedNpz(npy);
    ByteBuffer.wrap(method, lastIndexOf(method, 'P', 'K', 1, 2) + 10, 2)
        .order(ByteOrder.LITTLE_ENDIAN).putShort((short) 14);
    Path m = Files.write(dir.resolve("method.npz"), method);
    r = inspect(m.toString());
    assertEquals(2, r.status());
    assertEquals("ember inspect: " + m + ": member 'w.npy': unsupported compression method 14 (central directory entry"
        + " at byte " + cen + "); numpy.savez writes stored (0) or deflated (8) members\n", r.err());
  }

  @Test
  void aHugeMetadataIsNamedNotBlamedOnTheHeap() throws IOException {
    Path f = dir.resolve("meta.safetensors");
    byte[] json = ("{\"__metadata__\":{\"k\":\"" + "x".repeat(17 << 20) + "\"}}").getBytes(StandardCharsets.UTF_8);
    Files.write(f, concat(le64(json.length), json));
    Run r = inspect(f.toString());
    assertEquals(2, r.status());
    assertEquals(1, r.err().lines().count(), r.err());
    assertTrue(r.err().startsWith("ember inspect: " + f + ": byte 24: \"__metadata__\" is 17825800 bytes (17.0 MiB) of "
        + "JSON, over the 16 MiB limit for metadata"), r.err());
    assertFalse(r.err().contains("do not fit"), r.err());
  }

  private static byte[] le64(long v) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** {@code inspect FILE} in a child JVM with a 64 MiB heap: its exit status and stderr, less the JVM's own warning. */
  private static Run inspectWithSmallHeap(Path file) throws Exception {
    String java = ProcessHandle.current().info().command().orElseThrow(() -> new AssertionError("no java command"));
    Process p = new ProcessBuilder(java, "-Xmx64m", "-XX:+ExitOnOutOfMemoryError", "--add-modules",
        "jdk.incubator.vector", "-cp", System.getProperty("java.class.path"), Main.class.getName(), "inspect",
        file.toString()).start();
    p.getOutputStream().close();
    byte[] out = p.getInputStream().readAllBytes();
    byte[] err = p.getErrorStream().readAllBytes();
    assertTrue(p.waitFor(5, TimeUnit.MINUTES), "child finished");
    String errText = new String(err, StandardCharsets.UTF_8).lines()
        .filter(l -> !l.startsWith("WARNING: Using incubator modules")).map(l -> l + "\n")
        .collect(Collectors.joining());
    return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8), errText);
  }

  @Test
  void craftedSmallFilesAreRefusedWithTheSizeTheyNeedNotAnOutOfMemoryError() throws Exception {
    // 300,000 empty tensors: a 17 MB header whose parse needs about 300 MB
    StringBuilder sb = new StringBuilder("{");
    for (int i = 0; i < 300_000; i++) {
      sb.append(i > 0 ? "," : "").append("\"t").append(i).append("\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}");
    }
    byte[] json = sb.append('}').toString().getBytes(StandardCharsets.UTF_8);
    Path many = Files.write(dir.resolve("many.safetensors"), concat(le64(json.length), json));
    Run r = inspectWithSmallHeap(many);
    assertEquals(2, r.status(), r.err());
    assertEquals(1, r.err().lines().count(), r.err());
    assertTrue(r.err().startsWith("ember inspect: " + many + ": byte 8: header declares 300000 tensors; parsing it needs"
        + " about 3"), r.err());
    assertFalse(r.err().contains("do not fit"), r.err());

    // a 100 KB npz whose member inflates to 100 MB of zeros, header and directory agreeing
    int n = 25_000_000;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (var zip = new ZipOutputStream(bytes)) {
      zip.setLevel(9);
      zip.putNextEntry(new ZipEntry("w.npy"));
      String header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + n + ",), }";
      String padded = header + " ".repeat(64 * 2 - 10 - header.length() - 1) + "\n";
      zip.write(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (byte) padded.length(), 0});
      zip.write(padded.getBytes(StandardCharsets.ISO_8859_1));
      byte[] zeros = new byte[1 << 20];
      for (long left = 4L * n; left > 0; left -= zeros.length) zip.write(zeros, 0, (int) Math.min(left, zeros.length));
      zip.closeEntry();
    }
    Path bomb = Files.write(dir.resolve("bomb.npz"), bytes.toByteArray());
    assertTrue(Files.size(bomb) < 200_000, "a small file: " + Files.size(bomb));
    r = inspectWithSmallHeap(bomb);
    assertEquals(2, r.status(), r.err());
    assertEquals(1, r.err().lines().count(), r.err());
    assertTrue(r.err().startsWith("ember inspect: " + bomb + ": its tensors do not fit in this JVM's heap: member 'w.npy':"
        + " would inflate to 100000128 bytes (header says '<f4' (25000000,)), needing 95.4 MiB of heap, more than the "),
        r.err());
    assertTrue(r.err().endsWith("; refusing; raise it with EMBER_JAVA_OPTS=-Xmx...\n"), r.err());
    assertEquals("", r.out());
  }
}
