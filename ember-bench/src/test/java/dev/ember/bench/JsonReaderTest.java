package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The result-line JSON parser: values, escapes, Python's non-finite floats, and where a syntax error is. */
class JsonReaderTest {
  @Test
  void parsesNestedValuesInKeyOrder() {
    Object v = JsonReader.parse(" {\"b\": [1, -2.5e3, true, null], \"a\": {\"x\": \"y\"}, \"c\": false} ");
    Map<?, ?> m = (Map<?, ?>) v;
    assertEquals(List.of("b", "a", "c"), List.copyOf(m.keySet()));
    assertEquals(Arrays.asList(1.0, -2500.0, true, null), m.get("b"));
    assertEquals(Map.of("x", "y"), m.get("a"));
    assertEquals(false, m.get("c"));
    assertEquals(Map.of(), JsonReader.parse("{}"));
    assertEquals(List.of(), JsonReader.parse("[ ]"));
    assertNull(JsonReader.parse("null"));
  }

  @Test
  void decodesEscapes() {
    assertEquals("a\"b\\c/d\n\t\u00e9", JsonReader.parse("\"a\\\"b\\\\c\\/d\\n\\t\\u00e9\""));
  }

  @Test
  void acceptsPythonsNonFiniteFloats() {
    assertEquals(List.of(Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY),
        JsonReader.parse("[NaN, Infinity, -Infinity]"));
  }

  @Test
  void syntaxErrorsNameTheColumn() {
    assertEquals("invalid JSON: expected ',' or '}' at column 9 (near '\"b\": 2}')",
        assertThrows(IllegalArgumentException.class, () -> JsonReader.parse("{\"a\": 1 \"b\": 2}")).getMessage());
    assertEquals("invalid JSON: unterminated string at column 6 (end of line)",
        assertThrows(IllegalArgumentException.class, () -> JsonReader.parse("[\"abc")).getMessage());
    assertEquals("invalid JSON: unexpected text after the value at column 4 (near 'x')",
        assertThrows(IllegalArgumentException.class, () -> JsonReader.parse("{} x")).getMessage());
    assertTrue(assertThrows(IllegalArgumentException.class, () -> JsonReader.parse("{\"a\": 1, \"a\": 2}"))
        .getMessage().startsWith("invalid JSON: duplicate key 'a'"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> JsonReader.parse("[1.]"))
        .getMessage().startsWith("invalid JSON: expected digits after '.'"));
  }
}
