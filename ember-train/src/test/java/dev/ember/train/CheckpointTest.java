package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointTest {
  private static Map<String, Object> sample() {
    LinkedHashMap<String, Object> s = new LinkedHashMap<>();
    s.put("int", 7);
    s.put("long", 1L << 40);
    s.put("double", 0.1 + 0.2);
    s.put("nan", Double.NaN);
    s.put("inf", Double.NEGATIVE_INFINITY);
    s.put("float", 1.5f);
    s.put("text", "quote \" backslash \\ newline \n tab \t unicode é \u0001");
    s.put("flag", true);
    s.put("none", null);
    s.put("longs", new long[] {1, -2, Long.MAX_VALUE});
    s.put("ints", new int[] {3, Integer.MIN_VALUE});
    s.put("doubles", new double[] {Math.PI, -0.0, Double.MIN_VALUE, Double.NaN});
    s.put("list", new ArrayList<>(List.of(1, "two", List.of(3L))));
    s.put("weights", Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3).transpose(0, 1));   // a non-contiguous view
    s.put("labels", Tensor.of(new long[] {4, 5}, 2));
    s.put("step", Tensor.scalar(3.0));
    s.put("nested", new LinkedHashMap<>(Map.of("mask", Tensor.of(new boolean[] {true, false}, 2))));
    return s;
  }

  @Test
  void roundTripKeepsEveryTypeAndValue(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("a.ckpt");
    Checkpoint.write(f, sample());
    Map<String, Object> r = Checkpoint.read(f);
    assertEquals(7, assertInstanceOf(Integer.class, r.get("int")));
    assertEquals(1L << 40, assertInstanceOf(Long.class, r.get("long")));
    assertEquals(0.1 + 0.2, assertInstanceOf(Double.class, r.get("double")));
    assertTrue(Double.isNaN((Double) r.get("nan")));
    assertEquals(Double.NEGATIVE_INFINITY, r.get("inf"));
    assertEquals(1.5f, assertInstanceOf(Float.class, r.get("float")));
    assertEquals(sample().get("text"), r.get("text"));
    assertEquals(true, r.get("flag"));
    assertTrue(r.containsKey("none") && r.get("none") == null);
    assertArrayEquals(new long[] {1, -2, Long.MAX_VALUE}, (long[]) r.get("longs"));
    assertArrayEquals(new int[] {3, Integer.MIN_VALUE}, (int[]) r.get("ints"));
    double[] d = (double[]) r.get("doubles");
    assertEquals(Double.doubleToRawLongBits(-0.0), Double.doubleToRawLongBits(d[1]));
    assertEquals(Double.MIN_VALUE, d[2]);
    assertEquals(List.of(1, "two", List.of(3L)), r.get("list"));
    Tensor w = (Tensor) r.get("weights");
    assertArrayEquals(new int[] {3, 2}, w.shape());
    assertArrayEquals(new float[] {1, 4, 2, 5, 3, 6}, w.toFloatArray());
    assertArrayEquals(new long[] {4, 5}, ((Tensor) r.get("labels")).toLongArray());
    assertEquals(0, ((Tensor) r.get("step")).dim());
    Tensor mask = (Tensor) ((Map<?, ?>) r.get("nested")).get("mask");
    assertEquals("BOOL", mask.dtype().name());
    assertEquals(List.of(), leftovers(dir), "no temporary files remain");
  }

  @Test
  void everyFlippedByteOfTheDataOrStateIsDetected(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("a.ckpt");
    Checkpoint.write(f, sample());
    byte[] good = Files.readAllBytes(f);
    int headerLen = (int) java.nio.ByteBuffer.wrap(good, 0, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
    int rejected = 0;
    for (int i = 0; i < good.length; i++) {
      byte[] bad = good.clone();
      bad[i] ^= 0x10;
      Path g = dir.resolve("bad.ckpt");
      Files.write(g, bad);
      try {
        Map<String, Object> r = Checkpoint.read(g);
        // a flip inside the header's JSON may still parse (e.g. whitespace turned into another
        // space-like byte) only if it changes nothing that is read back
        assertTrue(i < 8 + headerLen, "a flipped data byte at " + i + " went unnoticed");
        assertEquals(Checkpoint.read(f).keySet(), r.keySet());
      } catch (CheckpointException e) {
        rejected++;
        assertTrue(e.getMessage().startsWith("checkpoint " + g + ": "), e.getMessage());
      }
    }
    assertTrue(rejected > good.length * 9 / 10, rejected + " of " + good.length);
  }

  @Test
  void truncatedAndForeignFilesAreRejected(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("a.ckpt");
    Checkpoint.write(f, sample());
    byte[] good = Files.readAllBytes(f);
    for (int len : new int[] {0, 7, 8, 100, good.length - 1}) {
      Path g = dir.resolve("t" + len + ".ckpt");
      Files.write(g, java.util.Arrays.copyOf(good, len));
      assertThrows(CheckpointException.class, () -> Checkpoint.read(g), "length " + len);
    }
    Path plain = dir.resolve("plain.safetensors");
    dev.ember.nn.io.SafeTensors.save(Map.of("w", Tensor.zeros(2)), plain);
    var e = assertThrows(CheckpointException.class, () -> Checkpoint.read(plain));
    assertEquals("checkpoint " + plain + ": not a checkpoint: a safetensors file without the 'ember-checkpoint/' format tag"
        + " in its metadata", e.getMessage());
  }

  /** The reason {@link Checkpoint#read} gives for {@code bytes}, which {@link Checkpoint#verify} gives too. */
  private static String problem(Path dir, byte[] bytes) throws Exception {
    Path g = dir.resolve("bad.ckpt");
    Files.write(g, bytes);
    var e = assertThrows(CheckpointException.class, () -> Checkpoint.read(g));
    assertEquals("checkpoint " + g + ": " + e.problem(), e.getMessage());
    assertEquals(java.util.Optional.of(e.problem()), Checkpoint.verify(g));
    return e.problem();
  }

  @Test
  void eachFailureSaysWhatIsWrong(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("a.ckpt");
    Checkpoint.write(f, sample());
    assertEquals(java.util.Optional.empty(), Checkpoint.verify(f));
    byte[] good = Files.readAllBytes(f);
    int headerLen = (int) java.nio.ByteBuffer.wrap(good, 0, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
    String total = String.format(java.util.Locale.ROOT, "%,d", good.length);
    assertTrue(good.length > 1000, "the grouping below needs a 4-digit size: " + good.length);

    int cut = 8 + headerLen + 10;
    assertEquals(String.format(java.util.Locale.ROOT, "truncated at %,d of %s bytes", cut, total),
        problem(dir, java.util.Arrays.copyOf(good, cut)));
    assertEquals(String.format(java.util.Locale.ROOT, "truncated at %,d of %s bytes", good.length - 1, total),
        problem(dir, java.util.Arrays.copyOf(good, good.length - 1)));
    assertEquals(String.format(java.util.Locale.ROOT, "truncated at 100 of at least %,d bytes (inside the header)", 8 + headerLen),
        problem(dir, java.util.Arrays.copyOf(good, 100)));
    assertEquals("truncated at 5 bytes, before the end of the 8-byte header length", problem(dir, java.util.Arrays.copyOf(good, 5)));
    assertEquals("no such file", Checkpoint.verify(dir.resolve("missing.ckpt")).orElseThrow());

    byte[] flipped = good.clone();
    flipped[good.length - 3] ^= 0x01;                   // inside the last tensor's data
    String p = problem(dir, flipped);
    assertTrue(p.matches("checksum mismatch \\(expected sha256 [0-9a-f]{64}, got [0-9a-f]{64}\\)"), p);

    byte[] brace = good.clone();
    brace[8] = 'x';                                     // the header's opening brace
    assertTrue(problem(dir, brace).startsWith("unparsable header at byte 8: "), problem(dir, brace));

    byte[] magic = good.clone();
    magic[7] = 0x7f;                                    // a header length no safetensors file has
    assertTrue(problem(dir, magic).startsWith("not a checkpoint: bad magic at byte 0, header length "), problem(dir, magic));

    Path v2 = dir.resolve("v2.ckpt");
    dev.ember.nn.io.SafeTensors.save(Map.of("t0", Tensor.zeros(2)), Map.of("format", "ember-checkpoint/2", "state", "{}",
        "sha256", "0"), v2);
    assertEquals("unknown version 'ember-checkpoint/2' (this Ember reads ember-checkpoint/1)", Checkpoint.verify(v2).orElseThrow());
  }

  @Test
  void unsupportedValuesAreNamed() {
    var e = assertThrows(IllegalArgumentException.class,
        () -> Checkpoint.write(Path.of("unused"), Map.of("x", new Object())));
    assertTrue(e.getMessage().startsWith("checkpoint state: cannot store a java.lang.Object"), e.getMessage());
  }

  private static List<Path> leftovers(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().endsWith(".tmp")).toList();
    }
  }
}
