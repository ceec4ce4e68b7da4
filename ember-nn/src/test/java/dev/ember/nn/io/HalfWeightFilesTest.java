package dev.ember.nn.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.SafeTensorsException.Reason;
import dev.ember.tensor.DType;
import dev.ember.tensor.HalfFloats;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import dev.ember.tensor.TensorData;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** BF16 and F16 tensors in safetensors and .npy / .npz files: bytes written, values read back, bad files refused. */
class HalfWeightFilesTest {
  @TempDir Path dir;

  private static Tensor half(DType t, float... v) {
    return Tensor.of(v, v.length).to(t);
  }

  private static byte[] le(short... bits) {
    ByteBuffer bb = ByteBuffer.allocate(bits.length * 2).order(ByteOrder.LITTLE_ENDIAN);
    for (short s : bits) bb.putShort(s);
    return bb.array();
  }

  /** A safetensors file: 8-byte little-endian header length, the JSON padded with spaces to 8, the data. */
  private Path craft(String json, byte[] data) throws IOException {
    byte[] j = json.getBytes(StandardCharsets.UTF_8);
    int padded = (j.length + 7) & ~7;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(padded).array());
    out.writeBytes(j);
    for (int i = j.length; i < padded; i++) out.write(' ');
    out.writeBytes(data);
    Path f = dir.resolve("crafted.safetensors");
    Files.write(f, out.toByteArray());
    return f;
  }

  @Test
  void safetensorsWritesHalfTensorsAsTheReferenceWriterDoes() throws IOException {
    Map<String, Tensor> m = new LinkedHashMap<>();
    m.put("a", half(DType.F16, 1f, -2f));
    m.put("b", half(DType.BF16, 1f, 3.14159f));
    m.put("c", Tensor.of(new float[] {0.5f}, 1));
    Path f = dir.resolve("h.safetensors");
    SafeTensors.save(m, f);
    byte[] bytes = Files.readAllBytes(f);
    long hlen = ByteBuffer.wrap(bytes, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
    String header = new String(bytes, 8, (int) hlen, StandardCharsets.UTF_8).strip();
    // descending dtype rank of the reference crate (F32 > BF16 > F16), so every tensor stays aligned
    assertEquals("{\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        + "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[4,8]},"
        + "\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[8,12]}}", header);
    byte[] data = Arrays.copyOfRange(bytes, 8 + (int) hlen, bytes.length);
    ByteBuffer want = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
    want.putFloat(0.5f).putShort(HalfFloats.bf16(1f)).putShort(HalfFloats.bf16(3.14159f));
    want.putShort(HalfFloats.f16(1f)).putShort(HalfFloats.f16(-2f));
    assertArrayEquals(want.array(), data);

    LinkedHashMap<String, Tensor> back = SafeTensors.load(f);
    assertEquals(DType.F16, back.get("a").dtype());
    assertEquals(DType.BF16, back.get("b").dtype());
    assertArrayEquals(m.get("a").storage().halves(), back.get("a").storage().halves());
    assertArrayEquals(m.get("b").storage().halves(), back.get("b").storage().halves());
  }

  @Test
  void safetensorsReadsAHandBuiltBf16File() throws IOException {
    short[] bits = {0x3F80, (short) 0xC040, 0x7F80, 0x0001}; // 1, -3, inf, the smallest subnormal
    Path f = craft("{\"w\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}", le(bits));
    Tensor w = SafeTensors.load(f).get("w");
    assertEquals(DType.BF16, w.dtype());
    assertArrayEquals(new int[] {2, 2}, w.shape());
    assertArrayEquals(bits, w.storage().halves());
    assertArrayEquals(new float[] {1, -3, Float.POSITIVE_INFINITY, HalfFloats.bf16ToFloat((short) 1)},
        w.toFloatArray());
  }

  @Test
  void safetensorsRejectsShortHalfDataBeforeAllocating() throws IOException {
    // F16 [3] needs 6 bytes: offsets that claim 4 are refused from the header alone
    Path f = craft("{\"w\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,4]}}", new byte[4]);
    SafeTensorsException e = assertThrows(SafeTensorsException.class, () -> SafeTensors.load(f));
    assertEquals(Reason.INVALID_OFFSETS, e.reason());
    assertTrue(e.getMessage().contains("hold 4 bytes but F16 [3] needs 6"), e.getMessage());
    // the header promises 8 bytes of BF16, the file stops after 6
    Path g = craft("{\"w\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}", new byte[6]);
    SafeTensorsException e2 = assertThrows(SafeTensorsException.class, () -> SafeTensors.load(g));
    assertTrue(e2.getMessage().contains("w") || e2.getMessage().contains("8"), e2.getMessage());
  }

  @Test
  void aBf16CheckpointLoadsIntoAnF32ModelAndABf16ModelRuns() throws IOException {
    dev.ember.nn.Linear src = new dev.ember.nn.Linear(6, 3, true, new dev.ember.tensor.Generator(1));
    Map<String, Tensor> bf = new LinkedHashMap<>();
    for (Map.Entry<String, Tensor> e : src.stateDict().entrySet()) bf.put(e.getKey(), e.getValue().to(DType.BF16));
    Path f = dir.resolve("model-bf16.safetensors");
    SafeTensors.save(bf, f); // as a Hugging Face BF16 checkpoint holds its weights
    dev.ember.nn.Linear dst = new dev.ember.nn.Linear(6, 3, true, new dev.ember.tensor.Generator(2));
    dst.loadStateDict(SafeTensors.load(f), true);
    for (Map.Entry<String, Tensor> e : dst.stateDict().entrySet()) {
      assertEquals(DType.F32, e.getValue().dtype(), "master weights stay F32");
      assertArrayEquals(bf.get(e.getKey()).toFloatArray(), e.getValue().toFloatArray(), e.getKey());
    }
    // the model converted to BF16 runs its forward in F32 and returns BF16 rounded once
    Tensor x = Tensor.of(new float[] {0.5f, -1, 2, 0.25f, 3, -0.75f}, 1, 6);
    dst.to(DType.BF16);
    Tensor y = dst.forward(x.to(DType.BF16));
    assertEquals(DType.BF16, y.dtype());
    float[] want = dev.ember.ops.LinalgOps.linear(x.to(DType.BF16).to(DType.F32), bf.get("weight").to(DType.F32),
        bf.get("bias").to(DType.F32)).toFloatArray();
    short[] got = y.storage().halves();
    for (int i = 0; i < want.length; i++) assertEquals(HalfFloats.bf16(want[i]), got[y.offset() + i], "y[" + i + "]");
  }

  @Test
  void npyWritesAndReadsFloat16() throws IOException {
    Tensor t = half(DType.F16, 1f, -2f, 0.1f, 70000f);
    Path f = dir.resolve("h.npy");
    Npy.save(t, f);
    byte[] bytes = Files.readAllBytes(f);
    int data = bytes.length - 8; // 4 elements of 2 bytes after the padded header
    assertEquals(0, data % 64, "the data starts 64-byte aligned");
    String head = new String(bytes, 10, data - 10, StandardCharsets.ISO_8859_1);
    assertTrue(head.startsWith("{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }"), head);
    assertArrayEquals(le(HalfFloats.f16(1f), HalfFloats.f16(-2f), HalfFloats.f16(0.1f), (short) 0x7C00),
        Arrays.copyOfRange(bytes, data, bytes.length));
    Tensor back = Npy.load(f);
    assertEquals(DType.F16, back.dtype());
    assertArrayEquals(t.storage().halves(), back.storage().halves());
  }

  @Test
  void npyReadsBigEndianFloat16() throws IOException {
    Path f = dir.resolve("be.npy");
    Npy.save(half(DType.F16, 1.5f, -0.25f), f);
    byte[] bytes = Files.readAllBytes(f);
    String s = new String(bytes, StandardCharsets.ISO_8859_1).replace("'<f2'", "'>f2'");
    byte[] be = s.getBytes(StandardCharsets.ISO_8859_1);
    for (int i = be.length - 4; i < be.length; i += 2) {
      byte tmp = be[i];
      be[i] = be[i + 1];
      be[i + 1] = tmp;
    }
    Files.write(f, be);
    assertArrayEquals(new float[] {1.5f, -0.25f}, Npy.load(f).toFloatArray());
  }

  @Test
  void npyRejectsAShortFloat16File() throws IOException {
    Path f = dir.resolve("short.npy");
    Npy.save(half(DType.F16, 1, 2, 3), f);
    byte[] bytes = Files.readAllBytes(f);
    Files.write(f, Arrays.copyOf(bytes, bytes.length - 1));
    NpyException e = assertThrows(NpyException.class, () -> Npy.load(f));
    assertEquals("data holds 5 bytes but '<f2' (3,) needs 6", e.problem());
  }

  @Test
  void bf16HasNoNumpyDtypeAndSavingOneFailsByName() {
    Tensor t = half(DType.BF16, 1, 2);
    Path f = dir.resolve("bf.npy");
    TensorArgumentException e = assertThrows(TensorArgumentException.class, () -> Npy.save(t, f));
    assertTrue(e.getMessage().startsWith("npy.save: dtype bfloat16 has no NumPy equivalent"), e.getMessage());
    assertFalse(Files.exists(f), "nothing is written");
    Path z = dir.resolve("bf.npz");
    TensorArgumentException ez = assertThrows(TensorArgumentException.class,
        () -> Npz.save(Map.of("w", t), z));
    assertTrue(ez.getMessage().startsWith("npz.save: tensor 'w' has dtype bfloat16"), ez.getMessage());
    assertFalse(Files.exists(z), "nothing is written");
  }

  @Test
  void npzRoundTripsFloat16() throws IOException {
    Path z = dir.resolve("h.npz");
    Tensor t = TensorData.wrapHalf(new short[] {0x3C00, (short) 0xBC00, 0x7E00}, DType.F16, 3);
    Npz.save(Map.of("w", t), z);
    Tensor back = Npz.load(z).get("w");
    assertEquals(DType.F16, back.dtype());
    assertArrayEquals(new short[] {0x3C00, (short) 0xBC00, 0x7E00}, back.storage().halves());
  }
}
