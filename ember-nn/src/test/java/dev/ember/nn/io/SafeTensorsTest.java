package dev.ember.nn.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Round trips, the exact layout the reference writer produces, and the save API's argument checks. */
class SafeTensorsTest {
  @TempDir Path dir;

  static byte[] le64(long v) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
  }

  static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) out.writeBytes(p);
    return out.toByteArray();
  }

  static byte[] f32le(float... v) {
    ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
    for (float x : v) b.putFloat(x);
    return b.array();
  }

  static void assertSameTensor(Tensor expected, Tensor actual) {
    assertEquals(expected.dtype(), actual.dtype());
    assertArrayEquals(expected.shape(), actual.shape());
    assertArrayEquals(Shapes.contiguousStrides(actual.shape()), actual.strides()); // fresh, row-major
    assertEquals(0, actual.offset());
    Tensor c = expected.contiguous();
    int n = (int) expected.numel();
    switch (expected.dtype()) {
      case F32 -> {
        for (int i = 0; i < n; i++) {
          assertEquals(Float.floatToRawIntBits(c.storage().floats()[c.offset() + i]),
              Float.floatToRawIntBits(actual.storage().floats()[actual.offset() + i]), "element " + i);
        }
      }
      case F64 -> {
        for (int i = 0; i < n; i++) {
          assertEquals(Double.doubleToRawLongBits(c.storage().doubles()[c.offset() + i]),
              Double.doubleToRawLongBits(actual.storage().doubles()[actual.offset() + i]), "element " + i);
        }
      }
      default -> assertArrayEquals(expected.toLongArray(), actual.toLongArray());
    }
  }

  @Test
  void everySupportedDtypeRoundTripsBitForBit() throws IOException {
    Generator g = new Generator(7);
    Map<String, Tensor> state = new LinkedHashMap<>();
    state.put("f32", Tensor.randn(g, DType.F32, 3, 4));
    state.put("f32.special", Tensor.of(new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY,
        -0.0f, Float.MIN_VALUE, Float.MAX_VALUE, Float.intBitsToFloat(0x7fc00123)}, 7));
    state.put("f64", Tensor.randn(g, DType.F64, 2, 3, 2));
    state.put("f64.special", Tensor.of(new double[] {Double.NaN, -0.0, Double.MIN_VALUE, Double.MAX_VALUE}, 4));
    state.put("i64", Tensor.of(new long[] {Long.MIN_VALUE, Long.MAX_VALUE, 0, -1, 42}, 5));
    state.put("i32", Tensor.of(new int[] {Integer.MIN_VALUE, Integer.MAX_VALUE, 0, -1, 7, 9}, 2, 3));
    state.put("bool", Tensor.of(new boolean[] {true, false, true, true}, 2, 2));
    Path f = dir.resolve("all.safetensors");
    SafeTensors.save(state, f);
    LinkedHashMap<String, Tensor> back = SafeTensors.load(f);
    assertEquals(state.keySet(), back.keySet());
    for (String k : state.keySet()) assertSameTensor(state.get(k), back.get(k));
  }

  @Test
  void scalarsAndEmptyTensorsRoundTrip() throws IOException {
    Map<String, Tensor> state = new LinkedHashMap<>();
    state.put("scalar", Tensor.scalar(2.5));
    state.put("scalar64", Tensor.scalar(-1.25, DType.F64));
    state.put("step", Tensor.scalar(12, DType.I64));
    state.put("empty", Tensor.zeros(0, 3));
    state.put("empty1d", Tensor.zeros(DType.I64, 0));
    state.put("emptyMiddle", Tensor.zeros(DType.BOOL, 2, 0, 5));
    Path f = dir.resolve("edge.safetensors");
    SafeTensors.save(state, f);
    LinkedHashMap<String, Tensor> back = SafeTensors.load(f);
    assertEquals(state.keySet(), back.keySet());
    for (String k : state.keySet()) assertSameTensor(state.get(k), back.get(k));
    assertArrayEquals(new int[0], back.get("scalar").shape());
    assertEquals(2.5, back.get("scalar").item());
    assertArrayEquals(new int[] {2, 0, 5}, back.get("emptyMiddle").shape());
  }

  @Test
  void nonContiguousViewsAreSavedByValue() throws IOException {
    Tensor base = Tensor.arange(0, 24, 1, DType.F32).reshape(2, 3, 4);
    Map<String, Tensor> state = new LinkedHashMap<>();
    state.put("transposed", base.transpose(0, 2));              // [4, 3, 2], strides (1, 4, 12)
    state.put("narrowed", base.narrow(1, 1, 2));                 // offset 4, gaps between rows
    state.put("stepped", base.slice(2, 0, 4, 2));                // every other column
    state.put("expanded", Tensor.of(new float[] {1, 2, 3}, 3, 1).expand(3, 4)); // stride 0
    state.put("selected", base.select(0, 1));                    // contiguous but offset 12
    Path f = dir.resolve("views.safetensors");
    SafeTensors.save(state, f);
    LinkedHashMap<String, Tensor> back = SafeTensors.load(f);
    for (String k : state.keySet()) assertSameTensor(state.get(k), back.get(k));
    assertArrayEquals(new float[] {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, back.get("expanded").toFloatArray());
    assertArrayEquals(new float[] {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}, back.get("selected").toFloatArray());
    // the data section holds exactly the views' elements: nothing of the storage outside them
    long elements = state.values().stream().mapToLong(Tensor::numel).sum();
    assertEquals(elements * 4, Files.size(f) - 8 - headerLength(f));
  }

  @Test
  void tensorsThatRequireGradAreSavedWithoutRecordingAGraph() throws IOException {
    Tensor w = Tensor.randn(new Generator(3), 4, 3).requiresGrad(true);
    Path f = dir.resolve("grad.safetensors");
    SafeTensors.save(Map.of("w.t", w.t()), f);
    Tensor back = SafeTensors.load(f).get("w.t");
    assertSameTensor(w.t(), back);
    assertFalse(back.requiresGrad());
  }

  @Test
  void metadataRoundTripsAndAbsentMetadataReadsAsEmpty() throws IOException {
    Map<String, String> meta = new LinkedHashMap<>();
    meta.put("format", "pt");
    meta.put("epoch", "3");
    meta.put("note", "quotes \" backslash \\ newline \n tab \t bell \u0007 unicode é 😀");
    meta.put("", "empty key");
    Path f = dir.resolve("meta.safetensors");
    SafeTensors.save(Map.of("w", Tensor.ones(2)), meta, f);
    SafeTensorsFile read = SafeTensors.read(f);
    assertEquals(meta, read.metadata());
    assertEquals(List.of("", "epoch", "format", "note"), List.copyOf(read.metadata().keySet())); // written sorted
    assertThrows(UnsupportedOperationException.class, () -> read.metadata().put("x", "y"));

    Path none = dir.resolve("none.safetensors");
    SafeTensors.save(Map.of("w", Tensor.ones(2)), none);
    assertEquals(Map.of(), SafeTensors.read(none).metadata());
    assertFalse(header(none).contains("__metadata__"));

    Path emptyMeta = dir.resolve("emptymeta.safetensors");
    SafeTensors.save(Map.of(), Map.of(), emptyMeta);
    assertEquals("{\"__metadata__\":{}}", header(emptyMeta).strip()); // as save_file(..., metadata={})
  }

  @Test
  void namesWithEscapesAndUnicodeRoundTrip() throws IOException {
    Map<String, Tensor> state = new LinkedHashMap<>();
    for (String name : List.of("a\"b", "back\\slash", "line\nbreak", "ctl\u0001", "é", "😀", "", "slash/ok")) {
      state.put(name, Tensor.of(new float[] {name.length()}, 1));
    }
    Path f = dir.resolve("names.safetensors");
    SafeTensors.save(state, f);
    LinkedHashMap<String, Tensor> back = SafeTensors.load(f);
    assertEquals(state.keySet(), back.keySet());
    for (String k : state.keySet()) assertSameTensor(state.get(k), back.get(k));
    String h = header(f);
    assertTrue(h.contains("\"a\\\"b\""), h);
    assertTrue(h.contains("\"ctl\\u0001\""), h);       // serde_json: \\u00XX, lowercase hex
    assertTrue(h.contains("\"line\\nbreak\""), h);
    assertTrue(h.contains("\"é\""), h);                 // non-ASCII written raw, as serde_json does
    assertTrue(h.contains("\"slash/ok\""), h);          // '/' is not escaped
  }

  @Test
  void writerOrdersTensorsByDtypeAlignmentThenNameAsTheReferenceDoes() throws IOException {
    Map<String, Tensor> state = new LinkedHashMap<>();
    state.put("z.mask", Tensor.of(new boolean[] {true}, 1));
    state.put("b.f32", Tensor.ones(1));
    state.put("a.f32", Tensor.ones(1));
    state.put("count", Tensor.ones(DType.I32, 1));
    state.put("double", Tensor.ones(DType.F64, 1));
    state.put("index", Tensor.ones(DType.I64, 1));
    state.put("\uFFFD", Tensor.ones(1));     // U+FFFD sorts before U+1F600 in UTF-8 (not in UTF-16)
    state.put("\uD83D\uDE00", Tensor.ones(1));
    Path f = dir.resolve("order.safetensors");
    SafeTensors.save(state, f);
    assertEquals(List.of("index", "double", "a.f32", "b.f32", "\uFFFD", "\uD83D\uDE00", "count", "z.mask"),
        List.copyOf(SafeTensors.load(f).keySet()));
    String h = header(f);
    assertTrue(h.startsWith("{\"index\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
        + "\"double\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[8,16]},"), h);
  }

  /**
   * Byte vectors from the reference implementation's own unit tests (safetensors/src/tensor.rs:
   * test_serialization, test_serialization_forced_alignement, test_empty), which pin its output.
   */
  @Test
  void writerOutputIsByteIdenticalToTheReferenceLibrarysTestVectors() throws IOException {
    float[] six = {0, 1, 2, 3, 4, 5};
    byte[] json = "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}"
        .getBytes(StandardCharsets.UTF_8); // 64 bytes: no padding needed
    assertArrayEquals(concat(le64(64), json, f32le(six)),
        saved(Map.of("attn.0", Tensor.of(six, 1, 2, 3)), null));

    byte[] json2 = "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}       "
        .getBytes(StandardCharsets.UTF_8); // 65 bytes + 7 spaces
    assertArrayEquals(concat(le64(72), json2, f32le(six)),
        saved(Map.of("attn0", Tensor.of(six, 1, 1, 2, 3)), null));

    assertArrayEquals(concat(le64(8), "{}      ".getBytes(StandardCharsets.UTF_8)), saved(Map.of(), null));
    assertArrayEquals(concat(le64(40), "{\"__metadata__\":{\"framework\":\"pt\"}}     ".getBytes(StandardCharsets.UTF_8)),
        saved(Map.of(), Map.of("framework", "pt")));
  }

  private byte[] saved(Map<String, Tensor> state, Map<String, String> meta) throws IOException {
    Path f = Files.createTempFile(dir, "v", ".safetensors");
    if (meta == null) {
      SafeTensors.save(state, f);
    } else {
      SafeTensors.save(state, meta, f);
    }
    SafeTensors.load(f); // and it reads back
    return Files.readAllBytes(f);
  }

  @Test
  void headerIsPaddedWithSpacesToAMultipleOf8ForEveryNameLength() throws IOException {
    for (int len = 1; len <= 9; len++) {
      Path f = dir.resolve("pad" + len + ".safetensors");
      SafeTensors.save(Map.of("x".repeat(len), Tensor.ones(DType.F64, 2)), f);
      long n = headerLength(f);
      assertEquals(0, n % 8, "header length " + n);
      String h = header(f);
      assertEquals(h.strip(), h.substring(0, h.lastIndexOf('}') + 1));
      assertTrue(h.substring(h.lastIndexOf('}') + 1).chars().allMatch(c -> c == ' '));
      assertEquals(8 + n + 16, Files.size(f));
    }
  }

  @Test
  void saveRejectsBadArgumentsWithClearMessages() {
    Path f = dir.resolve("bad.safetensors");
    TensorArgumentException e = assertThrows(TensorArgumentException.class,
        () -> SafeTensors.save(Map.of("__metadata__", Tensor.ones(1)), f));
    assertEquals("safetensors.save: the name \"__metadata__\" is reserved for the file's metadata; "
        + "hint: rename the tensor or pass the strings as metadata", e.getMessage());
    Map<String, Tensor> nullValue = new LinkedHashMap<>();
    nullValue.put("w", null);
    e = assertThrows(TensorArgumentException.class, () -> SafeTensors.save(nullValue, f));
    assertEquals("safetensors.save: tensor 'w' is null", e.getMessage());
    e = assertThrows(TensorArgumentException.class, () -> SafeTensors.save(Map.of("a\uD800", Tensor.ones(1)), f));
    assertEquals("safetensors.save: tensor name \"a\uD800\" has an unpaired surrogate, not valid UTF-8", e.getMessage());
    Map<String, String> nullMeta = new LinkedHashMap<>();
    nullMeta.put("k", null);
    e = assertThrows(TensorArgumentException.class, () -> SafeTensors.save(Map.of(), nullMeta, f));
    assertEquals("safetensors.save: metadata must map strings to strings, got k -> null", e.getMessage());
    assertFalse(Files.exists(f));
  }

  @Test
  void loadedTensorsAreFreshAndIndependent() throws IOException {
    Tensor w = Tensor.of(new float[] {1, 2, 3}, 3);
    Path f = dir.resolve("fresh.safetensors");
    SafeTensors.save(Map.of("w", w), f);
    Tensor a = SafeTensors.load(f).get("w");
    Tensor b = SafeTensors.load(f).get("w");
    a.storage().floats()[0] = 99;
    assertEquals(1f, b.storage().floats()[0]);
    assertEquals(1f, w.storage().floats()[0]);
    assertSame(DType.F32, a.dtype());
  }

  @Test
  void largeTensorsCrossTheTransferChunkBoundary() throws IOException {
    // 1 MiB chunks: 300_001 doubles (2.4 MB), 262_145 floats (1 MiB + 4 bytes), 1.1 M bools span several
    Map<String, Tensor> state = new LinkedHashMap<>();
    state.put("d", Tensor.arange(0, 300_001, 1, DType.F64).mul(0.5));
    state.put("f", Tensor.arange(0, 262_145, 1, DType.F32));
    state.put("i", Tensor.arange(0, 200_003, 1, DType.I64).mul(Tensor.scalar(-3, DType.I64)));
    boolean[] bits = new boolean[1_100_000];
    for (int i = 0; i < bits.length; i++) bits[i] = i % 3 == 0;
    state.put("m", Tensor.of(bits, bits.length));
    Path f = dir.resolve("large.safetensors");
    SafeTensors.save(state, f);
    LinkedHashMap<String, Tensor> back = SafeTensors.load(f);
    for (String k : state.keySet()) assertSameTensor(state.get(k), back.get(k));
  }

  static long headerLength(Path f) throws IOException {
    byte[] b = Files.readAllBytes(f);
    return ByteBuffer.wrap(b, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
  }

  static String header(Path f) throws IOException {
    byte[] b = Files.readAllBytes(f);
    return new String(b, 8, (int) headerLength(f), StandardCharsets.UTF_8);
  }
}
