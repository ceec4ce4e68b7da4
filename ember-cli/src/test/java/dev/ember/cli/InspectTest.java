package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.Npy;
import dev.ember.nn.io.Npz;
import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.Tensor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
    Files.write(truncatedNpy, java.util.Arrays.copyOf(all, all.length - 8));
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
  }
}
