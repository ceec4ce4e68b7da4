package dev.ember.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.Npy;
import dev.ember.nn.io.NpyException;
import dev.ember.nn.io.Npz;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.ByteArrayOutputStream;
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

class NpyDataTest {
  @TempDir Path dir;

  /** A .npy file with a hand-written header (to get big-endian or Fortran-ordered arrays). */
  static byte[] npy(String dict, byte[] data) {
    String padded = dict;
    while ((10 + padded.length() + 1) % 64 != 0) padded += " ";
    padded += "\n";
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0});
    out.write(padded.length() & 0xff);
    out.write(padded.length() >>> 8);
    out.writeBytes(padded.getBytes(StandardCharsets.ISO_8859_1));
    out.writeBytes(data);
    return out.toByteArray();
  }

  @Test
  void mappedRowsEqualTheLoadedArrays() throws Exception {
    Tensor x = Tensor.randn(new Generator(1), 2000, 3, 17); // about 400 KB
    Tensor y = Tensor.randint(new Generator(2), 0, 10, 2000);
    Path xf = dir.resolve("x.npy"), yf = dir.resolve("y.npy");
    Npy.save(x, xf);
    Npy.save(y, yf);
    TensorDataset loaded = NpyData.load(xf, yf);
    try (MappedNpyDataset mapped = NpyData.map(xf, yf)) {
      assertEquals(2000, mapped.size());
      assertArrayEquals(new int[] {2000, 3, 17}, mapped.inputShape());
      Sample s = mapped.get(1234);
      assertArrayEquals(new int[] {3, 17}, s.input().shape());
      assertEquals(0, s.target().dim());
      assertArrayEquals(x.select(0, 1234).toFloatArray(), s.input().toFloatArray());
      assertEquals(y.getLong(1234), s.target().getLong());
      int[] idx = {1999, 0, 7, 7};
      Batch a = mapped.getBatch(idx), b = loaded.getBatch(idx);
      assertArrayEquals(b.input().toFloatArray(), a.input().toFloatArray());
      assertArrayEquals(b.target().toLongArray(), a.target().toLongArray());
      BatchConfig cfg = BatchConfig.shuffled(64, 3);
      try (DataLoader fromMap = new DataLoader(mapped, cfg, 2)) {
        DataLoaderTest.assertSameBatches(DataLoaderTest.all(new DataLoader(loaded, cfg).iterate(0, 0)),
            DataLoaderTest.all(fromMap.iterate(0, 0)));
      }
    }
  }

  @Test
  void bigEndianAndBoolArraysMapCorrectly() throws Exception {
    ByteBuffer be = ByteBuffer.allocate(4 * 6).order(ByteOrder.BIG_ENDIAN);
    for (int i = 0; i < 6; i++) be.putFloat(i * 1.5f);
    Path xf = Files.write(dir.resolve("be.npy"), npy("{'descr': '>f4', 'fortran_order': False, 'shape': (3, 2), }", be.array()));
    Path yf = Files.write(dir.resolve("b.npy"), npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", new byte[] {1, 0, 1}));
    try (MappedNpyDataset ds = MappedNpyDataset.open(xf, yf)) {
      Batch b = ds.getBatch(new int[] {2, 0});
      assertArrayEquals(new float[] {6f, 7.5f, 0f, 1.5f}, b.input().toFloatArray());
      assertEquals(DType.BOOL, b.target().dtype());
      assertArrayEquals(new long[] {1, 1}, b.target().toLongArray());
    }
  }

  @Test
  void mappingRejectsFortranOrderMismatchedRowsAndReadsAfterClose() throws Exception {
    Path f = Files.write(dir.resolve("f.npy"), npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", new byte[16]));
    Path y = dir.resolve("y.npy");
    Npy.save(Tensor.zeros(DType.I64, 3), y);
    var e = assertThrows(DataFormatException.class, () -> MappedNpyDataset.open(f, y));
    assertTrue(e.getMessage().startsWith("npy: " + f + ": is fortran_order, so its rows are not contiguous"), e.getMessage());
    Path x = dir.resolve("x.npy");
    Npy.save(Tensor.zeros(2, 4), x);
    e = assertThrows(DataFormatException.class, () -> MappedNpyDataset.open(x, y));
    assertEquals("npy: " + y + ": holds 3 rows but x.npy holds 2 (shapes [3] and [2, 4])", e.getMessage());
    e = assertThrows(DataFormatException.class, () -> NpyData.load(x, y));
    assertEquals("npy: " + y + ": inputs and targets must have the same number of rows: x.npy=float32[2, 4], y.npy=int64[3]",
        e.getMessage());
    Path y2 = dir.resolve("y2.npy");
    Npy.save(Tensor.zeros(DType.I64, 2), y2);
    MappedNpyDataset ds = MappedNpyDataset.open(x, y2);
    ds.close();
    assertThrows(IllegalStateException.class, () -> ds.get(0));
    Path bad = Files.write(dir.resolve("bad.npy"), npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", new byte[15]));
    var ne = assertThrows(NpyException.class, () -> MappedNpyDataset.open(bad, y2));
    assertEquals("npy: " + bad + ": data holds 15 bytes but '<f4' (2, 2) needs 16", ne.getMessage());
  }

  @Test
  void npzArraysByName() throws Exception {
    Map<String, Tensor> m = new LinkedHashMap<>();
    m.put("images", Tensor.rand(new Generator(4), 5, 2));
    m.put("labels", Tensor.of(new long[] {4, 3, 2, 1, 0}));
    Path f = dir.resolve("d.npz");
    Npz.save(m, f, true);
    TensorDataset ds = NpyData.loadNpz(f, "images", "labels");
    assertArrayEquals(m.get("images").toFloatArray(), ds.inputs().toFloatArray());
    assertEquals(List.of(4L, 3L), List.of(ds.get(0).target().getLong(), ds.get(1).target().getLong()));
    var e = assertThrows(DataFormatException.class, () -> NpyData.loadNpz(f, "x", "labels"));
    assertEquals("npz: " + f + ": has no array 'x'; it holds [images, labels]", e.getMessage());
  }

  @Test
  void mappingRejectsBoolBytesOtherThanZeroOrOneAtOpenAsLoadDoes() throws Exception {
    Path xf = dir.resolve("x.npy");
    Npy.save(Tensor.zeros(1000, 2), xf);
    String dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (1000,), }";
    // a bad byte in the 8-byte words the scan reads first, and one in the tail after the last whole word
    for (int bad : new int[] {3, 997}) {
      byte[] bools = new byte[1000];
      Arrays.fill(bools, (byte) 1);
      bools[bad] = 2;
      Path yf = Files.write(dir.resolve("mask" + bad + ".npy"), npy(dict, bools));
      long dataStart = Files.size(yf) - 1000;
      var e = assertThrows(NpyException.class, () -> NpyData.map(xf, yf));
      assertEquals("npy: " + yf + ": bool element " + bad + " (byte " + (dataStart + bad) + ") is 0x02, not 0 or 1",
          e.getMessage());
      assertEquals(e.getMessage(), assertThrows(NpyException.class, () -> Npy.load(yf)).getMessage(), "as Npy.load says");
    }
    byte[] ok = new byte[1000];
    for (int i = 0; i < ok.length; i += 3) ok[i] = 1;
    Path yf = Files.write(dir.resolve("mask.npy"), npy(dict, ok));
    try (MappedNpyDataset ds = NpyData.map(xf, yf)) {
      assertArrayEquals(new long[] {1, 0, 0, 1}, ds.getBatch(new int[] {0, 1, 2, 999}).target().toLongArray());
    }
  }
}
