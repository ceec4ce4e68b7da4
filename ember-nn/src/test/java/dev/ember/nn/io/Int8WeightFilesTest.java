package dev.ember.nn.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
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

/** I8 tensors in safetensors ("I8") and .npy ('|i1') files: layout written, values read back. */
class Int8WeightFilesTest {
  @TempDir Path dir;

  static final byte[] Q = {-128, -1, 0, 1, 127, 42};

  @Test
  void safetensorsWritesInt8AfterWiderTypesAsTheReferenceWriterDoes() throws IOException {
    Map<String, Tensor> m = new LinkedHashMap<>();
    m.put("q", Tensor.of(Q, 2, 3));
    m.put("s", Tensor.of(new float[] {0.5f, 0.25f}, 2));
    m.put("z", Tensor.of(new int[] {0, -3}, 2));
    m.put("k", Tensor.of(new boolean[] {true}, 1));
    Path f = dir.resolve("q.safetensors");
    SafeTensors.save(m, f);
    byte[] bytes = Files.readAllBytes(f);
    long hlen = ByteBuffer.wrap(bytes, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
    String header = new String(bytes, 8, (int) hlen, StandardCharsets.UTF_8).strip();
    // the reference crate's dtype order is BOOL < U8 < I8 < ... < I32 < F32: larger alignment first
    assertEquals("{\"s\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        + "\"z\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[8,16]},"
        + "\"q\":{\"dtype\":\"I8\",\"shape\":[2,3],\"data_offsets\":[16,22]},"
        + "\"k\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[22,23]}}", header);
    byte[] data = Arrays.copyOfRange(bytes, 8 + (int) hlen, bytes.length);
    assertArrayEquals(Q, Arrays.copyOfRange(data, 16, 22));

    LinkedHashMap<String, Tensor> back = SafeTensors.load(f);
    assertEquals(DType.I8, back.get("q").dtype());
    assertArrayEquals(new int[] {2, 3}, back.get("q").shape());
    assertArrayEquals(Q, back.get("q").storage().int8s());
    assertArrayEquals(new int[] {0, -3}, back.get("z").storage().ints());
  }

  @Test
  void npyRoundTripsInt8AsNumPyWritesIt() throws IOException {
    Path f = dir.resolve("q.npy");
    Npy.save(Tensor.of(Q, 3, 2), f);
    byte[] bytes = Files.readAllBytes(f);
    String header = new String(bytes, 10, bytes.length - 10 - Q.length, StandardCharsets.ISO_8859_1);
    assertEquals("{'descr': '|i1', 'fortran_order': False, 'shape': (3, 2), }", header.strip());
    Tensor back = Npy.load(f);
    assertEquals(DType.I8, back.dtype());
    assertArrayEquals(new int[] {3, 2}, back.shape());
    assertArrayEquals(Q, back.storage().int8s());
  }
}
