package dev.ember.train;

import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The values whose JSON was written by the code before the JSON reader/writer was unified
 * (src/test/resources/json/*): {@link JsonGoldenTest} checks that today's writers produce the
 * same bytes and today's readers read those files back.
 */
final class JsonGoldenState {
  private JsonGoldenState() {}

  /** A checkpoint state covering every stored type and the awkward doubles and strings. */
  static Map<String, Object> checkpointState() {
    LinkedHashMap<String, Object> s = new LinkedHashMap<>();
    s.put("int", 7);
    s.put("intMin", Integer.MIN_VALUE);
    s.put("long", 1L << 40);
    s.put("longMin", Long.MIN_VALUE);
    s.put("double", 0.1 + 0.2);
    s.put("negZero", -0.0);
    s.put("tiny", Double.MIN_VALUE);
    s.put("big", 1e300);
    s.put("whole", 3.0);
    s.put("nan", Double.NaN);
    s.put("nanBits", Double.longBitsToDouble(0x7ff8000000000123L));
    s.put("inf", Double.POSITIVE_INFINITY);
    s.put("ninf", Double.NEGATIVE_INFINITY);
    s.put("float", 1.1f);
    s.put("floatNaN", Float.NaN);
    s.put("text", "quote \" backslash \\ slash / newline \n cr \r tab \t bs \b ff \f ctl \u0001 \u001f é 中 \ud83d\ude00");
    s.put("empty", "");
    s.put("flag", true);
    s.put("off", false);
    s.put("none", null);
    s.put("longs", new long[] {1, -2, Long.MAX_VALUE, Long.MIN_VALUE});
    s.put("ints", new int[] {3, Integer.MIN_VALUE, Integer.MAX_VALUE});
    s.put("noInts", new int[0]);
    s.put("doubles", new double[] {Math.PI, -0.0, Double.MIN_VALUE, Double.NaN, Double.NEGATIVE_INFINITY, 1e-7});
    s.put("list", new ArrayList<>(List.of(1, "two", List.of(3L), List.of())));
    LinkedHashMap<String, Object> inner = new LinkedHashMap<>();
    inner.put("a \"key\"", 1.5);
    inner.put("", new LinkedHashMap<>());
    inner.put("deep", new ArrayList<>(List.of(new LinkedHashMap<>(Map.of("x", 2L)))));
    s.put("nested", inner);
    s.put("weights", Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3));
    s.put("labels", Tensor.of(new long[] {4, 5}, 2));
    return s;
  }

  /** A run-file record (profile.json, JSON-lines logs) covering what the report writer accepts. */
  static Map<String, Object> reportValue() {
    LinkedHashMap<String, Object> m = new LinkedHashMap<>();
    m.put("whole", 3.0);
    m.put("negZero", -0.0);
    m.put("e15", 1e15);
    m.put("belowE15", 999999999999999.0);
    m.put("frac", 0.1 + 0.2);
    m.put("nan", Double.NaN);
    m.put("inf", Double.NEGATIVE_INFINITY);
    m.put("float", 1.1f);
    m.put("int", 7);
    m.put("long", Long.MIN_VALUE);
    m.put("short", (short) -3);
    m.put("text", "quote \" backslash \\ slash / nl \n ctl \u0001 \u007f é \ud83d\ude00");
    m.put("flag", false);
    m.put("none", null);
    m.put("doubles", new double[] {1.0, Double.NaN, 2.5e-10, -7});
    m.put("longs", new long[] {1, -2});
    m.put("ints", new int[] {});
    m.put("list", new ArrayList<>(List.of(1, "two", List.of(3.5), Map.of("k", true))));
    m.put(null, "null key");
    return m;
  }
}
