package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.Json;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checkpoints and run files written before Ember had one JSON reader and writer (the fixtures in
 * src/test/resources/json were written by the old StateJson and report Json): today's writers
 * produce the same bytes, and today's reader reads the old checkpoint back bit for bit.
 */
class JsonGoldenTest {
  @TempDir Path dir;

  private static byte[] fixture(String name) throws IOException {
    try (InputStream in = JsonGoldenTest.class.getResourceAsStream("/json/" + name)) {
      if (in == null) throw new IllegalStateException("json/" + name + " is not on the test classpath");
      return in.readAllBytes();
    }
  }

  /**
   * A callback's state as {@code Map.of} (AppendLog, CsvLogger, users' callbacks) iterates in an
   * order that can change between JVMs: unordered maps are written with sorted keys, so the same
   * state gives the same checkpoint bytes; an ordered map keeps its own order.
   */
  @Test
  void unorderedMapsAreWrittenInKeyOrderOrderedOnesInTheirOwn() {
    HashMap<String, Object> forward = new HashMap<>(), backward = new HashMap<>(64, 0.5f);
    LinkedHashMap<String, Object> linked = new LinkedHashMap<>();
    List<String> keys = List.of("lines", "bytes", "crc32", "columns", "cells", "last_step", "time_s", "a", "zz", "m1");
    for (int i = 0; i < keys.size(); i++) forward.put(keys.get(i), (long) i);
    for (int i = keys.size() - 1; i >= 0; i--) backward.put(keys.get(i), (long) i);
    for (int i = keys.size() - 1; i >= 0; i--) linked.put(keys.get(i), (long) i);
    String a = StateJson.write(forward, t -> "t"), b = StateJson.write(backward, t -> "t");
    String c = StateJson.write(Map.of("lines", 0L, "bytes", 1L, "crc32", 2L, "columns", 3L, "cells", 4L, "last_step", 5L,
        "time_s", 6L, "a", 7L, "zz", 8L, "m1", 9L), t -> "t");
    assertEquals(a, b);
    assertEquals(a, c);
    int at = -1;
    for (String k : keys.stream().sorted().toList()) {
      int next = a.indexOf('"' + k + '"');
      assertTrue(next > at, k + " out of key order in " + a);
      at = next;
    }
    String l = StateJson.write(linked, t -> "t");
    assertTrue(l.indexOf("\"m1\"") < l.indexOf("\"lines\""), "insertion order kept: " + l);
    assertEquals(forward, StateJson.read(a, s -> null));
  }

  /** Tensors in an unordered map are named in key order too, so their names do not depend on the JVM either. */
  @Test
  void tensorsInAnUnorderedMapAreNamedInKeyOrder() {
    List<Tensor> seen = new java.util.ArrayList<>();
    Tensor x = Tensor.scalar(1.0), y = Tensor.scalar(2.0), z = Tensor.scalar(3.0);
    String json = StateJson.write(Map.of("b", y, "c", z, "a", x), t -> {
      seen.add(t);
      return "t" + (seen.size() - 1);
    });
    assertEquals("{\"m\":{\"a\":{\"t\":\"t0\"},\"b\":{\"t\":\"t1\"},\"c\":{\"t\":\"t2\"}}}", json);
    assertEquals(List.of(x, y, z), seen);
  }

  @Test
  void checkpointStateJsonIsByteIdentical() throws IOException {
    String json = StateJson.write(JsonGoldenState.checkpointState(), t -> "t" + t.shape()[0]);
    assertEquals(new String(fixture("state.json"), StandardCharsets.UTF_8), json);
  }

  @Test
  void checkpointFileIsByteIdentical() throws IOException {
    Path file = dir.resolve("c.safetensors");
    Checkpoint.write(file, JsonGoldenState.checkpointState());
    assertArrayEquals(fixture("checkpoint-v1.safetensors"), Files.readAllBytes(file));
  }

  @Test
  void reportJsonIsByteIdentical() throws IOException {
    assertEquals(new String(fixture("report.json"), StandardCharsets.UTF_8),
        Json.write(JsonGoldenState.reportValue(), Json.NonFinite.NULL));
    assertThrows(IllegalArgumentException.class, () -> Json.write(JsonGoldenState.reportValue()));
  }

  @Test
  void oldCheckpointReadsBackWithEveryTypeAndBit() throws IOException {
    Path file = dir.resolve("old.safetensors");
    Files.write(file, fixture("checkpoint-v1.safetensors"));
    Map<String, Object> back = Checkpoint.read(file);
    Map<String, Object> expected = JsonGoldenState.checkpointState();
    assertEquals(expected.keySet(), back.keySet());
    for (String k : expected.keySet()) {
      Object want = expected.get(k);
      Object got = back.get(k);
      switch (want) {
        case null -> assertEquals(null, got, k);
        case Double d -> assertEquals(Double.doubleToLongBits(d), Double.doubleToLongBits((Double) got), k);
        case Float f -> assertEquals(Float.floatToIntBits(f), Float.floatToIntBits((Float) got), k);
        case int[] a -> assertArrayEquals(a, (int[]) got, k);
        case long[] a -> assertArrayEquals(a, (long[]) got, k);
        case double[] a -> {
          double[] b = (double[]) got;
          assertEquals(a.length, b.length, k);
          for (int i = 0; i < a.length; i++) assertEquals(Double.doubleToLongBits(a[i]), Double.doubleToLongBits(b[i]), k);
        }
        case Tensor t -> assertArrayEquals(t.shape(), assertInstanceOf(Tensor.class, got).shape(), k);
        default -> {
          assertEquals(want.getClass(), got.getClass(), k);
          if (!(want instanceof Map<?, ?>)) assertEquals(want, got, k);
        }
      }
    }
    Map<?, ?> nested = (Map<?, ?>) back.get("nested");
    assertEquals(1.5, nested.get("a \"key\""));
    assertEquals(Map.of(), nested.get(""));
    assertEquals(List.of(Map.of("x", 2L)), nested.get("deep"));
  }
}
