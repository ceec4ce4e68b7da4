package dev.ember.nn.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The header's JSON parser: values, escapes, positions, and the syntax it refuses. */
class JsonTest {
  private static Json.Obj parse(String s) throws Json.SyntaxError {
    return Json.parseObject(s.getBytes(StandardCharsets.UTF_8), 8);
  }

  private static Json.SyntaxError fails(String s) {
    return assertThrows(Json.SyntaxError.class, () -> parse(s));
  }

  @Test
  void parsesEveryKindOfValueWithFilePositions() throws Exception {
    String text = "{\"s\":\"x\", \"n\":[0,-12,3.5,1e3,2E-2,-0],\"t\":true,\"f\":false,\"z\":null,\"o\":{}} ";
    Json.Obj o = parse(text);
    assertEquals(List.of("s", "n", "t", "f", "z", "o"), o.members().stream().map(Json.Member::key).toList());
    assertEquals(8, o.pos());
    assertEquals(9, o.members().get(0).keyPos());
    assertEquals(new Json.Str("x", 13), o.members().get(0).value());
    Json.Arr n = (Json.Arr) o.members().get(1).value();
    assertEquals(List.of("0", "-12", "3.5", "1e3", "2E-2", "-0"),
        n.items().stream().map(v -> ((Json.Num) v).text()).toList());
    assertEquals(List.of(true, true, false, false, false, true),
        n.items().stream().map(v -> ((Json.Num) v).isInteger()).toList());
    assertEquals(8 + text.indexOf("[0") + 1, n.items().get(0).pos());
    assertEquals(new Json.Lit("true", 8 + text.indexOf("true")), o.members().get(2).value());
    assertEquals(new Json.Lit("null", 8 + text.indexOf("null")), o.members().get(4).value());
    assertTrue(((Json.Obj) o.members().get(5).value()).members().isEmpty());
  }

  @Test
  void decodesEveryEscape() throws Exception {
    Json.Obj o = parse("{\"k\":\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\u20AC \\ud83d\\ude00 \\u0000\"}");
    assertEquals("\" \\ / \b \f \n \r \t é € 😀 \u0000", ((Json.Str) o.members().get(0).value()).value());
  }

  @Test
  void decodesRawUtf8() throws Exception {
    Json.Obj o = parse("{\"é€😀\":\"ü\"}");
    assertEquals("é€😀", o.members().get(0).key());
    assertEquals("ü", ((Json.Str) o.members().get(0).value()).value());
    assertEquals(8 + 1 + 1 + 2 + 3 + 4 + 1 + 1, o.members().get(0).value().pos()); // byte, not char, offsets
  }

  @Test
  void keepsDuplicateKeysForTheValidatorToReport() throws Exception {
    Json.Obj o = parse("{\"a\":1,\"a\":2}");
    assertEquals(2, o.members().size());
  }

  @Test
  void refusesMalformedInputAtTheRightByte() {
    Json.SyntaxError e = fails("{\"a\":1 \"b\":2}");
    assertEquals("expected ',' or '}' after a member, found '\"'", e.getMessage());
    assertEquals(8 + 7, e.pos);
    e = fails("{\"a\":\"\\ud83d\\u0041\"}");
    assertEquals("\\u escape \\ud83d (a high surrogate) is not followed by a low surrogate", e.getMessage());
    assertEquals(8 + 12, e.pos);
    e = fails("{\"a\":\"\\ude00\"}");
    assertEquals("\\u escape \\ude00 is a lone low surrogate", e.getMessage());
    assertEquals(8 + 6, e.pos);
    assertEquals("expected a digit, found 'x'", fails("{\"a\":-x}").getMessage());
    assertEquals("expected a digit in the exponent, found '}'", fails("{\"a\":1e}").getMessage());
    assertEquals("expected a value, found '+'", fails("{\"a\":+1}").getMessage());
    assertEquals("expected a value, found 'N'", fails("{\"a\":NaN}").getMessage());
    assertEquals("expected a value, found ']'", fails("{\"a\":[1,]}").getMessage());
    assertEquals("unterminated escape sequence, found the end of the header", fails("{\"a\\").getMessage());
    assertEquals("expected a value, found the end of the header", fails("{\"a\":").getMessage());
    assertEquals("expected ',' or '}' after a member, found byte 0x00", fails("{\"a\":1\u0000}").getMessage());
  }

  @Test
  void nestingIsCapped() throws Exception {
    String ok = "{\"a\":" + "[".repeat(Json.HEADER_MAX_DEPTH - 1) + "]".repeat(Json.HEADER_MAX_DEPTH - 1) + "}";
    assertFalse(parse(ok).members().isEmpty());
    String deep = "{\"a\":" + "[".repeat(100_000) + "]".repeat(100_000) + "}";
    assertEquals("nesting deeper than " + Json.HEADER_MAX_DEPTH + " levels", fails(deep).getMessage());
  }

  @Test
  void outlineCountsRootMembersAndSpansTheMetadataWithoutParsing() {
    String text = " {\"a\\\"}\":\"[{\" , \"__metadata__\" : {\"k\":\"}]\\\"\"} ,\"w\":{\"shape\":[1,[2]],\"x\":null}}  ";
    Json.Outline o = Json.outline(text.getBytes(StandardCharsets.UTF_8), 8);
    assertEquals(3, o.members());
    String metadata = "{\"k\":\"}]\\\"\"}";
    assertEquals(8 + text.indexOf(metadata), o.metadataPos());
    assertEquals(metadata.length(), o.metadataBytes());
    Json.Outline none = Json.outline("{\"w\":1,\"v\":true}".getBytes(StandardCharsets.UTF_8), 8);
    assertEquals(new Json.Outline(2, -1, 0), none);
    // malformed: it stops where the structure breaks, and the parse reports the error
    assertEquals(1, Json.outline("{\"a\":1,\"b\" 2}".getBytes(StandardCharsets.UTF_8), 8).members());
    assertEquals(0, Json.outline("{\"a\":[1,2".getBytes(StandardCharsets.UTF_8), 8).members());
    assertEquals(0, Json.outline("[]".getBytes(StandardCharsets.UTF_8), 8).members());
  }

  @Test
  void parsesPlainValuesInKeyOrderWithLongsAndDoubles() throws Exception {
    Object v = Json.parsePlain(" {\"b\": [1, -2.5e3, true, null, 1234567890123456789], \"a\": {\"x\": \"y\"}, \"c\": false} ",
        Json.NonFinite.REJECT);
    Map<?, ?> m = (Map<?, ?>) v;
    assertEquals(List.of("b", "a", "c"), List.copyOf(m.keySet()));
    assertEquals(Arrays.asList(1L, -2500.0, true, null, 1.2345678901234568e18), m.get("b"));
    assertEquals(Map.of("x", "y"), m.get("a"));
    assertEquals(Map.of(), Json.parsePlain("{}", Json.NonFinite.REJECT));
    assertEquals(List.of(), Json.parsePlain("[ ]", Json.NonFinite.REJECT));
    assertNull(Json.parsePlain("null", Json.NonFinite.REJECT));
    assertEquals("\u00e9\ud83d\ude00", Json.parsePlain("\"\\u00e9\\ud83d\\ude00\"", Json.NonFinite.REJECT));
  }

  @Test
  void plainRejectsDuplicateNamesAtTheSecond() {
    Json.SyntaxError e = assertThrows(Json.SyntaxError.class, () -> Json.parsePlain("{\"a\": 1, \"a\": 2}", Json.NonFinite.REJECT));
    assertEquals("duplicate member name \"a\"", e.getMessage());
    assertEquals(9, e.pos);
  }

  @Test
  void nonFiniteLiteralsOnlyWhenAsked() throws Exception {
    assertEquals(List.of(Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY),
        Json.parsePlain("[NaN, Infinity, -Infinity]", Json.NonFinite.LITERALS));
    Json.SyntaxError e = assertThrows(Json.SyntaxError.class, () -> Json.parsePlain("[1, NaN]", Json.NonFinite.REJECT));
    assertEquals("expected a value, found 'N'", e.getMessage());
    assertEquals(4, e.pos);
    e = assertThrows(Json.SyntaxError.class, () -> Json.parsePlain("[-Inf]", Json.NonFinite.LITERALS));
    assertEquals(1, e.pos);
    Json.Num n = (Json.Num) ((Json.Arr) Json.parse("[Infinity]".getBytes(StandardCharsets.UTF_8), 0, 4,
        Json.NonFinite.LITERALS)).items().get(0);
    assertFalse(n.isInteger());
    assertTrue(n.isNonFinite());
  }

  @Test
  void errorsCarryTheByteOffsetFromTheBase() {
    Json.SyntaxError e = assertThrows(Json.SyntaxError.class,
        () -> Json.parse("{\"\u00e9\": tru}".getBytes(StandardCharsets.UTF_8), 100, Json.MAX_DEPTH, Json.NonFinite.REJECT));
    assertEquals(107, e.pos); // the \u00e9 is two bytes
    assertEquals("expected a value, found 't'", e.getMessage());
    e = assertThrows(Json.SyntaxError.class, () -> Json.parsePlain("[1, 2] x", Json.NonFinite.REJECT));
    assertEquals("unexpected 'x' after the JSON value", e.getMessage());
    assertEquals(7, e.pos);
    e = assertThrows(Json.SyntaxError.class, () -> Json.parsePlain("[".repeat(Json.MAX_DEPTH + 1), Json.NonFinite.REJECT));
    assertEquals("nesting deeper than " + Json.MAX_DEPTH + " levels", e.getMessage());
    assertEquals("expected a value, found the end of the text",
        assertThrows(Json.SyntaxError.class, () -> Json.parsePlain("", Json.NonFinite.REJECT)).getMessage());
  }

  @Test
  void writesCompactlyAndNonFiniteOnlyWhenAsked() throws Exception {
    LinkedHashMap<String, Object> m = new LinkedHashMap<>();
    m.put("s", "a\"b\\c\n\u0001\u00e9/");
    m.put("i", 42);
    m.put("whole", 3.0);
    m.put("neg0", -0.0);
    m.put("e15", 1e15);
    m.put("f", 0.1f);
    m.put("arr", new double[] {1.5, Double.NaN});
    m.put("ints", new int[] {1, -2});
    m.put("list", List.of(true, "x"));
    m.put("none", null);
    String text = Json.write(m, Json.NonFinite.NULL);
    assertEquals("{\"s\":\"a\\\"b\\\\c\\n\\u0001\u00e9/\",\"i\":42,\"whole\":3,\"neg0\":-0.0,\"e15\":1.0E15,"
        + "\"f\":0.10000000149011612,\"arr\":[1.5,null],\"ints\":[1,-2],\"list\":[true,\"x\"],\"none\":null}", text);
    assertEquals(m.get("s"), ((Map<?, ?>) Json.parsePlain(text, Json.NonFinite.REJECT)).get("s"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Json.write(m));
    assertTrue(e.getMessage().contains("NaN has no JSON form"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Json.write(Map.of("x", new Object())));
  }
}
