package dev.ember.nn.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.Deflater;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The npz reader's zip handling: archives NumPy and Python's zipfile write at the edges (a 65535-byte
 * comment, a comment length past the end, ZIP64, large deflated members; npy/make_npz_fixtures.py),
 * and crafted archives, each refused with an {@link NpyException} naming the member and the byte.
 */
class NpzTest {
  @TempDir Path dir;
  private int count;

  private static Path fixture(String name) {
    try {
      return Path.of(NpzTest.class.getResource("npy/" + name).toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  private static final float[] W = {0, 0.25f, 0.5f, 0.75f, 1, 1.25f};

  // ------------------------------------------------------------------ what numpy reads

  @Test
  void readsTheArchivesNumPyReads() throws IOException {
    for (String name : List.of("comment_65535.npz", "comment_length_past_end.npz")) {
      LinkedHashMap<String, Tensor> z = Npz.load(fixture(name));
      assertEquals(List.of("w"), List.copyOf(z.keySet()), name);
      assertArrayEquals(new int[] {2, 3}, z.get("w").shape(), name);
      assertArrayEquals(W, z.get("w").toFloatArray(), name);
    }
    LinkedHashMap<String, Tensor> zip64 = Npz.load(fixture("zip64.npz"));
    assertEquals(List.of("w", "labels"), List.copyOf(zip64.keySet()));
    assertArrayEquals(W, zip64.get("w").toFloatArray());
    assertArrayEquals(new long[] {-2, -1, 0, 1, 2}, zip64.get("labels").toLongArray());
    float[] big = Npz.load(fixture("savez_compressed_100k.npz")).get("big").toFloatArray();
    assertEquals(100000, big.length);
    for (int i = 0; i < big.length; i++) assertEquals(i % 1000 == 0 ? i / 1000 : 0, big[i], "element " + i);
  }

  @Test
  void readsACommentOfEveryLengthUpTo65535() throws IOException {
    for (int length : new int[] {0, 1, 65534, 65535}) {
      Path p = dir.resolve("c" + length + ".npz");
      try (ZipOutputStream zip = new ZipOutputStream(Files.newOutputStream(p))) {
        zip.putNextEntry(new ZipEntry("w.npy"));
        zip.write(npy(DType.F32, new int[] {2}, new byte[8]));
        zip.closeEntry();
        // a comment that holds the end-of-archive signature must not be taken for the record
        zip.setComment(length >= 22 ? "PK\5\6" + "c".repeat(length - 4) : "c".repeat(length));
      }
      assertArrayEquals(new float[] {0, 0}, Npz.load(p).get("w").toFloatArray(), "comment of " + length);
    }
  }

  @Test
  void anEmptyArchiveHoldsNoTensors() throws IOException {
    // numpy.savez with no arrays writes the end-of-archive record alone, and numpy.load reads it
    byte[] z = new byte[22];
    putInt(z, 0, 0x06054b50);
    assertTrue(Npz.load(write(z)).isEmpty());
  }

  @Test
  void roundTripsLargeStoredAndDeflatedMembersAcrossReadChunks() throws IOException {
    Map<String, Tensor> m = new LinkedHashMap<>();
    m.put("a", Tensor.randn(new Generator(3), 300, 250)); // 300 KB of noise: compressed data spans several chunks
    m.put("b", Tensor.zeros(DType.I64, 40000));
    for (boolean compressed : new boolean[] {false, true}) {
      Path p = dir.resolve("big" + compressed + ".npz");
      Npz.save(m, p, compressed);
      LinkedHashMap<String, Tensor> back = Npz.load(p);
      assertArrayEquals(m.get("a").toFloatArray(), back.get("a").toFloatArray());
      assertArrayEquals(m.get("b").toLongArray(), back.get("b").toLongArray());
    }
  }

  // ------------------------------------------------------------------ crafted archives

  /** A .npy stream: header for {@code dtype shape}, then {@code data} as given (which may disagree). */
  static byte[] npy(DType dtype, int[] shape, byte[] data) {
    byte[] h = Npy.headerBytes(dtype, shape);
    byte[] out = Arrays.copyOf(h, h.length + data.length);
    System.arraycopy(data, 0, out, h.length, data.length);
    return out;
  }

  /** An archive of one member written by java.util.zip, stored or deflated. */
  static byte[] zip(String name, byte[] content, boolean deflate) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
      ZipEntry e = new ZipEntry(name);
      if (!deflate) {
        CRC32 crc = new CRC32();
        crc.update(content);
        e.setMethod(ZipEntry.STORED);
        e.setSize(content.length);
        e.setCompressedSize(content.length);
        e.setCrc(crc.getValue());
      }
      zip.putNextEntry(e);
      zip.write(content);
      zip.closeEntry();
    }
    return bytes.toByteArray();
  }

  private static final byte[] W_NPY = npy(DType.F32, new int[] {2, 3}, floats(W));

  private static byte[] floats(float[] v) {
    ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
    for (float f : v) b.putFloat(f);
    return b.array();
  }

  private static int find(byte[] z, int signature) {
    for (int i = z.length - 4; i >= 0; i--) {
      if (ByteBuffer.wrap(z, i, 4).order(ByteOrder.LITTLE_ENDIAN).getInt() == signature) return i;
    }
    throw new IllegalStateException("no signature " + Integer.toHexString(signature));
  }

  static int cen(byte[] z) {
    return find(z, 0x02014b50);
  }

  static int eocd(byte[] z) {
    return find(z, 0x06054b50);
  }

  private static void putInt(byte[] z, int at, int v) {
    ByteBuffer.wrap(z, at, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(v);
  }

  private static void putShort(byte[] z, int at, int v) {
    ByteBuffer.wrap(z, at, 2).order(ByteOrder.LITTLE_ENDIAN).putShort((short) v);
  }

  private static int getInt(byte[] z, int at) {
    return ByteBuffer.wrap(z, at, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
  }

  private Path write(byte[] z) throws IOException {
    return Files.write(dir.resolve("bad" + count++ + ".npz"), z);
  }

  /** Loads {@code z}, asserts it fails with {@code npz: <file>: [member 'm': ]<problem>} and returns that tail. */
  private String rejects(byte[] z) throws IOException {
    Path p = write(z);
    NpyException e = assertThrows(NpyException.class, () -> Npz.load(p));
    assertTrue(e.getMessage().startsWith("npz: " + p + ": "), e.getMessage());
    assertFalse(e.exceedsHeap(), e.getMessage());
    return e.getMessage().substring(("npz: " + p + ": ").length());
  }

  @Test
  void aBadLocalHeaderOffsetNamesTheMemberAndTheByte() throws IOException {
    for (boolean deflate : new boolean[] {false, true}) {
      byte[] z = zip("w.npy", W_NPY, deflate);
      int cen = cen(z);
      putInt(z, cen + 42, 7);
      assertEquals(String.format("member 'w.npy': bad local header signature 0x%08x at byte 7 (expected 0x04034b50, "
          + "PK\\3\\4; the central directory entry at byte %d points there)", getInt(z, 7), cen), rejects(z));
      putInt(z, cen + 42, 1_000_000);
      assertEquals("member 'w.npy': local header offset 1000000 is past the end of the file (" + z.length
          + " bytes; central directory entry at byte " + cen + ")", rejects(z));
    }
  }

  @Test
  void truncatedCompressedDataIsNamed() throws IOException {
    byte[] z = zip("w.npy", W_NPY, true);
    int cen = cen(z);
    int compressed = getInt(z, cen + 20);
    int start = 30 + "w.npy".length();
    // the directory claims more compressed bytes than the file holds
    putInt(z, cen + 20, z.length);
    assertEquals("member 'w.npy': compressed data truncated: " + z.length + " bytes from byte " + start
        + " run past the end of the file (" + z.length + " bytes)", rejects(z));
    // the directory claims fewer compressed bytes than the deflate stream needs
    putInt(z, cen + 20, compressed / 2);
    String problem = rejects(z);
    assertTrue(problem.startsWith("member 'w.npy': compressed data truncated at byte " + (start + compressed / 2)
        + ": " + compressed / 2 + " compressed bytes from byte " + start + " gave "), problem);
    assertTrue(problem.endsWith(" of the " + W_NPY.length + " declared"), problem);
  }

  @Test
  void aCrcMismatchIsNamed() throws IOException {
    for (boolean deflate : new boolean[] {false, true}) {
      byte[] z = zip("w.npy", W_NPY, deflate);
      int cen = cen(z);
      int crc = getInt(z, cen + 16);
      putInt(z, cen + 16, crc ^ 1);
      assertEquals(String.format("member 'w.npy': CRC-32 mismatch: the data from byte 35 has 0x%08x, the central "
          + "directory entry at byte %d declares 0x%08x", crc, cen, crc ^ 1), rejects(z));
    }
  }

  @Test
  void aMemberThatInflatesToMoreOrFewerBytesThanDeclaredIsNamed() throws IOException {
    // the header says 2 floats and the directory agrees, but 4 floats were deflated
    byte[] longer = npy(DType.F32, new int[] {2}, new byte[16]);
    byte[] z = zip("w.npy", longer, true);
    int cen = cen(z);
    putInt(z, cen + 24, longer.length - 8);
    putInt(z, cen + 16, crc(Arrays.copyOf(longer, longer.length - 8)));
    String problem = rejects(z);
    assertTrue(problem.startsWith("member 'w.npy': inflates to more than the " + (longer.length - 8)
        + " bytes the archive declares (at byte "), problem);
    // the header says 4 floats and the directory agrees, but only 2 were deflated
    byte[] shorter = npy(DType.F32, new int[] {4}, new byte[8]);
    z = zip("w.npy", shorter, true);
    cen = cen(z);
    putInt(z, cen + 24, shorter.length + 8);
    problem = rejects(z);
    assertTrue(problem.startsWith("member 'w.npy': inflates to " + shorter.length + " bytes but the archive declares "
        + (shorter.length + 8) + " (the deflate stream ends at byte "), problem);
  }

  private static int crc(byte[] b) {
    CRC32 c = new CRC32();
    c.update(b);
    return (int) c.getValue();
  }

  @Test
  void corruptDeflateDataIsNamed() throws IOException {
    byte[] z = zip("w.npy", W_NPY, true);
    int start = 30 + "w.npy".length();
    z[start] = (byte) 0xff; // block type 3: reserved
    assertEquals("member 'w.npy': corrupt deflate data near byte " + (start + 1) + " (invalid block type)", rejects(z));
  }

  @Test
  void unsupportedMethodsAndBadDirectoriesAreNamed() throws IOException {
    byte[] z = zip("w.npy", W_NPY, true);
    int cen = cen(z);
    putShort(z, cen + 10, 12); // bzip2
    assertEquals("member 'w.npy': unsupported compression method 12 (central directory entry at byte " + cen
        + "); numpy.savez writes stored (0) or deflated (8) members", rejects(z));

    z = zip("w.npy", W_NPY, false);
    cen = cen(z);
    z[cen + 1] = 'X';
    assertEquals(String.format("bad central directory signature 0x%08x at byte %d (expected 0x02014b50, PK\\1\\2)",
        getInt(z, cen), cen), rejects(z));

    z = zip("w.npy", W_NPY, false);
    int eocd = eocd(z);
    putInt(z, eocd + 16, cen(z) - 5);
    assertEquals("the end-of-archive record at byte " + eocd + " puts the central directory at byte " + (cen(z) - 5)
        + ", but its " + (eocd - cen(z)) + " bytes end at byte " + eocd + " (so start at " + cen(z) + ")", rejects(z));

    z = zip("w.npy", W_NPY, false);
    putInt(z, eocd(z) + 12, 1 << 30);
    assertEquals("the central directory (1073741824 bytes at offset " + cen(z) + ") does not fit before the "
        + "end-of-archive record at byte " + eocd(z), rejects(z));

    z = zip("w.npy", W_NPY, false);
    z[30] = 'v'; // the local header's name
    assertEquals("member 'w.npy': the local header at byte 0 names 'v.npy' (central directory and local header differ)",
        rejects(z));

    z = zip("w.npy", W_NPY, false);
    putShort(z, cen(z) + 8, 1); // encrypted
    assertEquals("member 'w.npy': is encrypted (numpy.load cannot read it either)", rejects(z));

    assertEquals("not a zip archive: the file is 3 bytes, shorter than the 22-byte end-of-archive record",
        rejects(new byte[] {'P', 'K', 3}));
  }

  @Test
  void everyCorruptionOfASmallArchiveIsAnNpyExceptionOrReadsCorrectly() throws IOException {
    // flip, zero and saturate every byte and cut the archive at every length: nothing but NpyException may escape
    for (boolean deflate : new boolean[] {false, true}) {
      byte[] good = zip("w.npy", W_NPY, deflate);
      Path p = dir.resolve("fuzz" + deflate + ".npz");
      for (int i = 0; i < good.length; i++) {
        for (int variant = 0; variant < 3; variant++) {
          byte[] z = good.clone();
          z[i] = variant == 0 ? (byte) (z[i] ^ 0x41) : variant == 1 ? 0 : (byte) 0xff;
          loadsOrRejects(Files.write(p, z), "byte " + i + " variant " + variant + (deflate ? " deflated" : " stored"));
        }
        loadsOrRejects(Files.write(p, Arrays.copyOf(good, i)), "cut at " + i);
      }
    }
  }

  private static void loadsOrRejects(Path p, String what) {
    try {
      Tensor w = Npz.load(p).get("w");
      // a change the format cannot see (a timestamp, an unused flag): the values must still be right
      if (w != null && w.dtype() == DType.F32) assertArrayEquals(W, w.toFloatArray(), what);
    } catch (NpyException e) {
      assertTrue(e.getMessage().startsWith("npz: " + p + ": "), what + ": " + e.getMessage());
    } catch (Throwable t) {
      fail(what + ": " + t, t);
    }
  }

  // ------------------------------------------------------------------ heap

  @Test
  void aDecompressionBombIsRefusedFromItsHeaderWithTheSizeItNeeds() throws IOException {
    // 40 MB of zeros deflates to about 40 KB; the header and the directory agree on the size
    int n = 10_000_000;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
      zip.setLevel(Deflater.BEST_COMPRESSION);
      zip.putNextEntry(new ZipEntry("w.npy"));
      zip.write(Npy.headerBytes(DType.F32, new int[] {n}));
      byte[] zeros = new byte[1 << 20];
      for (long left = 4L * n; left > 0; left -= zeros.length) zip.write(zeros, 0, (int) Math.min(left, zeros.length));
      zip.closeEntry();
    }
    Path p = write(bytes.toByteArray());
    assertTrue(Files.size(p) < 100_000, "a small file: " + Files.size(p));
    NpyException e = assertThrows(NpyException.class, () -> Npz.load(p, 30_000_000));
    long size = 4L * n + Npy.headerBytes(DType.F32, new int[] {n}).length;
    assertEquals("npz: " + p + ": member 'w.npy': would inflate to " + size + " bytes (header says '<f4' (10000000,)),"
        + " needing 38.1 MiB of heap, more than the limit of 30000000 bytes; refusing", e.getMessage());
    assertTrue(e.exceedsHeap());
    assertEquals(n, Npz.load(p, 50_000_000).get("w").numel(), "it loads where it fits");

    Map<String, Tensor> two = new LinkedHashMap<>();
    two.put("a", Tensor.zeros(1000));
    two.put("b", Tensor.zeros(DType.F64, 3000));
    Path q = dir.resolve("two.npz");
    Npz.save(two, q, true);
    e = assertThrows(NpyException.class, () -> Npz.load(q, 20_000));
    assertNull(e.member());
    assertTrue(e.getMessage().matches("npz: .*: its 2 members would inflate to 28256 bytes, needing 28\\.3 KiB of heap, "
        + "more than the limit of 20000 bytes; the largest is 'b\\.npy', 24128 bytes \\(header says '<f8' \\(3000,\\)\\); "
        + "refusing"), e.getMessage());
  }

  @Test
  void aLargeNpyIsRefusedFromItsHeader() throws IOException {
    Path p = dir.resolve("x.npy");
    Npy.save(Tensor.zeros(1000, 10), p);
    NpyException e = assertThrows(NpyException.class, () -> Npy.load(p, 10_000));
    assertEquals("npy: " + p + ": '<f4' (1000, 10) needs 40512 bytes (39.6 KiB) of heap, more than the limit of 10000 bytes",
        e.getMessage());
    assertTrue(e.exceedsHeap());
    assertEquals(10_000, Npy.load(p, 50_000).numel());
  }
}
