package dev.ember.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IdxTest {
  @TempDir Path dir;

  @Test
  void rawAndGzipReadTheSameImages() throws Exception {
    byte[] raw = IdxFiles.images(3);
    Path a = Files.write(dir.resolve("img"), raw);
    Path b = Files.write(dir.resolve("img.gz"), IdxFiles.gzip(raw));
    for (Path p : new Path[] {a, b}) {
      IdxArray arr = Idx.read(p);
      assertArrayEquals(new int[] {3, 28, 28}, arr.dims());
      assertEquals(3 * 784, arr.numel());
      assertEquals((2 * 7 + 5 * 28 + 6) % 256, arr.get(2 * 784 + 5 * 28 + 6));
      byte[] row = new byte[5];
      arr.copyTo(784 + 10, row, 2, 3);
      assertArrayEquals(new byte[] {0, 0, 17, 18, 19}, row);
      Tensor t = arr.toImages();
      assertArrayEquals(new int[] {3, 1, 28, 28}, t.shape());
      assertEquals(DType.F32, t.dtype());
      assertEquals(((2 * 7 + 5 * 28 + 6) % 256) / 255f, (float) t.getDouble(2, 0, 5, 6), 0f);
      var e = assertThrows(DataFormatException.class, arr::toLabels);
      assertEquals("idx: " + p + ": at byte 3: expected labels [N] (1 dim), got 3 dims [3, 28, 28]", e.getMessage());
    }
  }

  @Test
  void readImagesConvertsWhileInflatingAndMatchesToImages() throws Exception {
    byte[] raw = IdxFiles.images(3000); // several 1 MiB inflate chunks
    Path gz = Files.write(dir.resolve("many.gz"), IdxFiles.gzip(raw));
    Path plain = Files.write(dir.resolve("many"), raw);
    float[] want = Idx.read(gz).toImages().toFloatArray();
    assertArrayEquals(want, Idx.readImages(gz).toFloatArray());
    assertArrayEquals(want, Idx.readImages(plain).toFloatArray());
    Path labels = Files.write(dir.resolve("labels.gz"), IdxFiles.gzip(IdxFiles.labels(5)));
    var e = assertThrows(DataFormatException.class, () -> Idx.readImages(labels));
    assertEquals("idx: " + labels + ": at byte 3: expected images [N, H, W] (3 dims), got 1 dims [5]", e.getMessage());
  }

  @Test
  void highlyCompressedValidFilesAreReadAfterTheirLengthIsProved() throws Exception {
    byte[] data = new byte[3000 * 784]; // zeros: about 1000:1, beyond the ratio trusted up front
    data[data.length - 1] = (byte) 200;
    byte[] gz = IdxFiles.gzip(IdxFiles.idx(new int[] {3000, 28, 28}, data));
    assertTrue((long) data.length > Idx.TRUSTED_RATIO * gz.length, "ratio " + data.length / gz.length);
    Path p = Files.write(dir.resolve("zeros.gz"), gz);
    IdxArray a = Idx.read(p);
    assertEquals(200, a.get(data.length - 1));
    assertEquals(0, a.get(0));
    assertEquals(200 / 255f, (float) Idx.readImages(p).getDouble(2999, 0, 27, 27), 0f);
  }

  @Test
  void labelsBecomeI64() throws Exception {
    Path p = Files.write(dir.resolve("lab.gz"), IdxFiles.gzip(IdxFiles.idx(new int[] {4}, new byte[] {9, 0, (byte) 200, 3})));
    Tensor y = Idx.read(p).toLabels();
    assertEquals(DType.I64, y.dtype());
    assertArrayEquals(new long[] {9, 0, 200, 3}, y.toLongArray());
    assertThrows(DataFormatException.class, () -> Idx.read(p).toImages());
  }

  @Test
  void largeRawFilesAreMemoryMapped() throws Exception {
    int n = (int) (Idx.MAP_THRESHOLD / 784) + 1;
    Path p = Files.write(dir.resolve("big"), IdxFiles.images(n));
    IdxArray arr = Idx.read(p);
    assertTrue(arr.toString().endsWith(", mapped)"), arr.toString());
    assertFalse(Idx.read(Files.write(dir.resolve("small"), IdxFiles.images(2))).toString().contains("mapped"));
    Tensor t = arr.toImages();
    assertEquals(((n - 1) * 7 + 783) % 256 / 255f, (float) t.getDouble(n - 1, 0, 27, 27), 0f);
  }

  @Test
  void badFilesNameFileOffsetAndProblem() throws Exception {
    Path trunc = Files.write(dir.resolve("trunc"), Arrays.copyOf(IdxFiles.images(2), 4 + 12 + 700));
    var e = assertThrows(DataFormatException.class, () -> Idx.read(trunc));
    assertEquals("idx: " + trunc + ": at byte 716: dims [2, 28, 28] need 1568 bytes of data after the 16-byte header, "
        + "but the file has 700 (truncated?)", e.getMessage());
    assertEquals(716, e.offset());
    assertEquals(trunc, e.file());

    byte[] huge = IdxFiles.idx(new int[] {0, 0}, new byte[0]);
    huge[4] = (byte) 0x80; // 2^31
    huge[8] = (byte) 0x80;
    Path absurd = Files.write(dir.resolve("absurd"), huge);
    e = assertThrows(DataFormatException.class, () -> Idx.read(absurd));
    assertEquals("idx: " + absurd + ": at byte 4: dim 0 is 2147483648, more than 2147483647", e.getMessage());

    Path bigProduct = Files.write(dir.resolve("product.gz"), IdxFiles.gzip(IdxFiles.idx(new int[] {65536, 65536}, new byte[0])));
    e = assertThrows(DataFormatException.class, () -> Idx.read(bigProduct));
    assertEquals("idx: " + bigProduct + ": at byte 4: dims [65536, 65536] hold 4294967296 elements, more than one tensor "
        + "holds (2147483583)", e.getMessage());

    Path bomb = Files.write(dir.resolve("bomb.gz"), IdxFiles.gzip(IdxFiles.idx(new int[] {100_000_000}, new byte[0])));
    e = assertThrows(DataFormatException.class, () -> Idx.read(bomb));
    assertTrue(e.getMessage().contains("declare 100000000 bytes, more than gzip can produce from this"), e.getMessage());

    Path shortGz = Files.write(dir.resolve("short.gz"), IdxFiles.gzip(Arrays.copyOf(IdxFiles.labels(10), 8 + 6)));
    e = assertThrows(DataFormatException.class, () -> Idx.read(shortGz));
    assertEquals("idx: " + shortGz + ": at byte 14: decompressed data ends after 6 of the 10 bytes that dims [10] declare "
        + "(truncated?)", e.getMessage());

    byte[] gz = IdxFiles.gzip(IdxFiles.labels(1000));
    Path cut = Files.write(dir.resolve("cut.gz"), Arrays.copyOf(gz, gz.length - 12));
    e = assertThrows(DataFormatException.class, () -> Idx.read(cut));
    assertTrue(e.getMessage().startsWith("idx: " + cut + ": corrupt gzip data after "), e.getMessage());

    Path notGz = Files.write(dir.resolve("plain.gz"), IdxFiles.labels(3));
    e = assertThrows(DataFormatException.class, () -> Idx.read(notGz));
    assertEquals("idx: " + notGz + ": at byte 0: named .gz but not gzip-compressed: the first bytes are \\x00\\x00, not the "
        + "gzip magic \\x1f\\x8b", e.getMessage());

    byte[] f32 = IdxFiles.labels(3);
    f32[2] = 0x0D;
    Path floats = Files.write(dir.resolve("floats"), f32);
    e = assertThrows(DataFormatException.class, () -> Idx.read(floats));
    assertEquals("idx: " + floats + ": at byte 2: element type 0x0D (float32) is not supported; Ember reads unsigned-byte "
        + "IDX files (0x08)", e.getMessage());
  }
}
