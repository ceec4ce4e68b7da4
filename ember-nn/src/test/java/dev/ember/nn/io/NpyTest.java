package dev.ember.nn.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** .npy and .npz: round trips, files written by NumPy (npy/make_npy_fixtures.py), and a corpus of bad files. */
class NpyTest {
  @TempDir Path dir;

  private static Path fixture(String name) {
    try {
      return Path.of(NpyTest.class.getResource("npy/" + name).toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  private static double[] arange(int n, double scale, double shift) {
    double[] v = new double[n];
    for (int i = 0; i < n; i++) v[i] = (i + shift) * scale;
    return v;
  }

  private static void assertValues(Tensor t, DType dtype, int[] shape, double[] values) {
    assertEquals(dtype, t.dtype());
    assertArrayEquals(shape, t.shape());
    assertArrayEquals(values, t.toDoubleArray());
  }

  // ------------------------------------------------------------------ NumPy-written files

  @Test
  void readsWhatNumPyWrites() throws IOException {
    assertValues(Npy.load(fixture("f32_2x3.npy")), DType.F32, new int[] {2, 3}, arange(6, 0.25, 0));
    assertValues(Npy.load(fixture("i32_2x2.npy")), DType.I32, new int[] {2, 2}, new double[] {1, -2, 3, 2147483647});
    assertValues(Npy.load(fixture("bool_3.npy")), DType.BOOL, new int[] {3}, new double[] {1, 0, 1});
    assertValues(Npy.load(fixture("scalar_f32.npy")), DType.F32, new int[] {}, new double[] {3.5});
    assertValues(Npy.load(fixture("empty_0x3.npy")), DType.F32, new int[] {0, 3}, new double[] {});
    assertValues(Npy.load(fixture("v2_f32_4.npy")), DType.F32, new int[] {4}, arange(4, 1, 0));
    assertValues(Npy.load(fixture("v3_f32_4.npy")), DType.F32, new int[] {4}, arange(4, 1, 0));
  }

  @Test
  void bigEndianIsSwappedAndFortranOrderIsTransposedToRowMajor() throws IOException {
    assertValues(Npy.load(fixture("i64_big_endian.npy")), DType.I64, new int[] {5}, arange(5, 1, -2));
    assertValues(Npy.load(fixture("f64_big_endian.npy")), DType.F64, new int[] {4}, arange(4, 1e300, -1.5));
    // the files hold column-major data; the tensors read row-major with NumPy's element values
    Tensor f = Npy.load(fixture("f64_fortran_3x4.npy"));
    assertValues(f, DType.F64, new int[] {3, 4}, arange(12, 1, -5.5));
    assertTrue(f.isContiguous());
    assertValues(Npy.load(fixture("f32_fortran_2x3x4.npy")), DType.F32, new int[] {2, 3, 4}, arange(24, 1, 0));
  }

  @Test
  void readsNumPySavezStoredAndCompressed() throws IOException {
    LinkedHashMap<String, Tensor> z = Npz.load(fixture("savez.npz"));
    assertEquals(List.of("weight", "labels"), List.copyOf(z.keySet()));
    assertValues(z.get("weight"), DType.F32, new int[] {2, 3}, arange(6, 0.25, 0));
    assertValues(z.get("labels"), DType.I64, new int[] {5}, arange(5, 1, -2));
    LinkedHashMap<String, Tensor> c = Npz.load(fixture("savez_compressed.npz"));
    assertValues(c.get("weight"), DType.F32, new int[] {2, 3}, arange(6, 0.25, 0));
    assertValues(c.get("mask"), DType.BOOL, new int[] {3}, new double[] {1, 0, 1});
  }

  @Test
  void numpyFloat16LoadsAsF16() throws IOException {
    Tensor t = Npy.load(fixture("f16_ones.npy")); // np.ones(2, dtype="<f2"): bytes 00 3c 00 3c
    assertEquals(DType.F16, t.dtype());
    assertArrayEquals(new int[] {2}, t.shape());
    assertArrayEquals(new short[] {0x3C00, 0x3C00}, t.storage().halves());
  }

  // ------------------------------------------------------------------ round trips

  @Test
  void roundTripsEveryDtypeAndShape() throws IOException {
    Generator g = new Generator(7);
    List<Tensor> cases = List.of(Tensor.randn(g, 3, 4), Tensor.randn(g, DType.F64, 2, 1, 5), Tensor.scalar(2.5),
        Tensor.zeros(0, 4), Tensor.zeros(DType.F64, 3, 0), Tensor.of(new long[] {Long.MIN_VALUE, 0, Long.MAX_VALUE}, 3),
        Tensor.of(new int[] {-7, 8}, 2, 1), Tensor.randn(g, 4, 6).gt(0), Tensor.randn(g, 5, 3).t());
    int i = 0;
    for (Tensor t : cases) {
      Path p = dir.resolve("t" + i++ + ".npy");
      Npy.save(t, p);
      assertEquals(0, Files.size(p) - Npy.headerBytes(t.dtype(), t.shape()).length - t.numel() * t.dtype().itemSize());
      assertEquals(0, (Npy.headerBytes(t.dtype(), t.shape()).length) % 64, "data starts 64-byte aligned");
      Tensor back = Npy.load(p);
      assertEquals(t.dtype(), back.dtype());
      assertArrayEquals(t.shape(), back.shape());
      assertArrayEquals(t.toDoubleArray(), back.toDoubleArray());
    }
    Map<String, Tensor> named = new LinkedHashMap<>();
    named.put("b", cases.get(0));
    named.put("a/nested", cases.get(5));
    named.put("empty", cases.get(3));
    for (boolean compressed : new boolean[] {false, true}) {
      Path p = dir.resolve("z" + compressed + ".npz");
      Npz.save(named, p, compressed);
      LinkedHashMap<String, Tensor> back = Npz.load(p);
      assertEquals(List.copyOf(named.keySet()), List.copyOf(back.keySet()));
      for (String k : named.keySet()) assertArrayEquals(named.get(k).toDoubleArray(), back.get(k).toDoubleArray());
    }
    try (var files = Files.list(dir)) {
      assertFalse(files.anyMatch(f -> f.getFileName().toString().endsWith(".tmp")), "no temporary file left");
    }
  }

  // ------------------------------------------------------------------ bad files

  private byte[] good() throws IOException {
    Path p = dir.resolve("good.npy");
    Npy.save(Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3), p);
    return Files.readAllBytes(p);
  }

  private String problemOf(byte[] bytes) throws IOException {
    Path p = dir.resolve("bad.npy");
    Files.write(p, bytes);
    NpyException e = assertThrows(NpyException.class, () -> Npy.load(p));
    assertEquals("npy: " + p + ": " + e.problem(), e.getMessage());
    return e.problem();
  }

  /** The good file with its header dict replaced (re-padded to the same length). */
  private byte[] withDict(String dict) throws IOException {
    byte[] g = good();
    int hlen = (g[8] & 0xff) | (g[9] & 0xff) << 8;
    StringBuilder sb = new StringBuilder(dict);
    while (sb.length() < hlen - 1) sb.append(' ');
    sb.append('\n');
    byte[] out = g.clone();
    System.arraycopy(sb.toString().getBytes(StandardCharsets.ISO_8859_1), 0, out, 10, hlen);
    return out;
  }

  @Test
  void badFilesAreRejectedBeforeAllocating() throws IOException {
    byte[] g = good();
    byte[] magic = g.clone();
    magic[1] = 'X';
    assertEquals("not a .npy array: the first bytes are \\x93\\x58\\x55\\x4d\\x50\\x59, not the magic \\x93NUMPY",
        problemOf(magic));
    assertEquals("file is 5 bytes, too short for the magic, version and header length", problemOf(Arrays.copyOf(g, 5)));
    byte[] version = g.clone();
    version[6] = 4;
    assertEquals("format version 4.0 is not one Ember reads (1.0, 2.0, 3.0)", problemOf(version));
    byte[] longHeader = g.clone();
    longHeader[9] = (byte) 0xff;
    assertEquals("header length 65398 runs past the end (" + g.length + " bytes in all)", problemOf(longHeader));
    byte[] hugeHeader = Arrays.copyOf(g, g.length);
    hugeHeader[6] = 2; // version 2.0: the 4 bytes at 8..11 are the length
    ByteBuffer.wrap(hugeHeader, 8, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(-1);
    assertEquals("header length 4294967295 exceeds the 1048576-byte cap", problemOf(hugeHeader));
    assertEquals("header is not the dict NumPy writes: expected ':' at character 9",
        problemOf(withDict("{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3), }")));
    assertEquals("header is not the dict NumPy writes: expected a string, True, False or a tuple at character 10",
        problemOf(withDict("{'descr': __import__('os'), 'fortran_order': False, 'shape': (2, 3), }")));
    assertEquals("header keys are [descr, fortran_order, shap], expected exactly descr, fortran_order and shape",
        problemOf(withDict("{'descr': '<f4', 'fortran_order': False, 'shap': (2, 3), }")));
    assertEquals("unsupported dtype '<c8' (Ember reads <f4 <f8 <f2 <i8 <i4 |i1 |b1, either byte order)",
        problemOf(withDict("{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }")));
    assertEquals("shape (2, -3) has a negative dim",
        problemOf(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }")));
    assertEquals("shape (65536, 65536) has more elements than one tensor holds (2147483647)",
        problemOf(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536), }")));
    assertEquals("data holds 24 bytes but '<f4' (2, 4) needs 32",
        problemOf(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }")));
    assertEquals("data holds 20 bytes but '<f4' (2, 3) needs 24", problemOf(Arrays.copyOf(g, g.length - 4)));
    assertEquals("3 trailing bytes after the 24 bytes of '<f4' (2, 3)", problemOf(Arrays.copyOf(g, g.length + 3)));
    byte[] boolFile = withDict("{'descr': '|b1', 'fortran_order': False, 'shape': (24,), }");
    Arrays.fill(boolFile, boolFile.length - 24, boolFile.length, (byte) 1);
    boolFile[boolFile.length - 1] = 2;
    assertEquals("bool element 23 (byte 151) is 0x02, not 0 or 1", problemOf(boolFile));
    byte[] noNewline = g.clone();
    noNewline[g.length - 25] = ' ';
    assertEquals("header does not end with a newline", problemOf(noNewline));
  }

  // ------------------------------------------------------------------ bad archives

  private Path zip(Map<String, byte[]> members) throws IOException {
    Path p = dir.resolve("bad.npz");
    try (var zip = new java.util.zip.ZipOutputStream(Files.newOutputStream(p))) {
      for (var e : members.entrySet()) {
        zip.putNextEntry(new java.util.zip.ZipEntry(e.getKey()));
        zip.write(e.getValue());
        zip.closeEntry();
      }
    }
    return p;
  }

  private static String npzProblem(Path p) {
    NpyException e = assertThrows(NpyException.class, () -> Npz.load(p));
    assertTrue(e.getMessage().startsWith("npz: " + p + ": "), e.getMessage());
    return (e.member() == null ? "" : e.member() + ": ") + e.problem();
  }

  @Test
  void badArchivesAreRejected() throws IOException {
    byte[] g = good();
    assertEquals("readme.txt: not a .npy member (an npz holds only .npy arrays)",
        npzProblem(zip(Map.of("readme.txt", new byte[] {1}))));
    byte[] bad = g.clone();
    bad[0] = 'X';
    assertEquals("w.npy: not a .npy array: the first bytes are \\x58\\x4e\\x55\\x4d\\x50\\x59, not the magic \\x93NUMPY",
        npzProblem(zip(Map.of("w.npy", bad))));
    // duplicate member names: write a.npy and b.npy, then rename b to a in the local and central headers
    LinkedHashMap<String, byte[]> two = new LinkedHashMap<>();
    two.put("a.npy", g);
    two.put("b.npy", g);
    Path p = zip(two);
    byte[] z = Files.readAllBytes(p);
    String s = new String(z, StandardCharsets.ISO_8859_1).replace("b.npy", "a.npy");
    Files.write(p, s.getBytes(StandardCharsets.ISO_8859_1));
    assertEquals("a.npy: appears twice in the archive", npzProblem(p));
    // a member whose central-directory size claims far more than its compressed bytes can inflate to
    Path bomb = zip(Map.of("w.npy", g));
    byte[] zb = Files.readAllBytes(bomb);
    int cd = lastIndexOf(zb, new byte[] {0x50, 0x4b, 0x01, 0x02});
    ByteBuffer.wrap(zb, cd + 24, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(Integer.MAX_VALUE);
    Files.write(bomb, zb);
    String problem = npzProblem(bomb);
    assertTrue(problem.startsWith("w.npy: declares 2147483647 bytes from "), problem);
    Path notZip = dir.resolve("plain.npz");
    Files.write(notZip, g);
    assertEquals("not a zip archive: no end-of-archive record (PK\\5\\6) in its last " + g.length + " bytes",
        npzProblem(notZip));
  }

  private static int lastIndexOf(byte[] hay, byte[] needle) {
    for (int i = hay.length - needle.length; i >= 0; i--) {
      if (Arrays.equals(hay, i, i + needle.length, needle, 0, needle.length)) return i;
    }
    throw new IllegalStateException("not found");
  }
}
