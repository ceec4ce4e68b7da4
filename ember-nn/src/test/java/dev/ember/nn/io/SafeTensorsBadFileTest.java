package dev.ember.nn.io;

import static dev.ember.nn.io.SafeTensorsTest.concat;
import static dev.ember.nn.io.SafeTensorsTest.le64;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.SafeTensorsException.Reason;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The corpus of crafted bad files: each is built here byte by byte and must be refused with a
 * {@link SafeTensorsException} of the right {@link Reason} whose message names the file, the
 * byte offset and the tensor where they apply, and says what is wrong.
 */
class SafeTensorsBadFileTest {
  @TempDir Path dir;
  private int count;

  private static final String F32_2 = "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";

  private Path raw(byte[] bytes) throws IOException {
    Path f = dir.resolve("bad" + (count++) + ".safetensors");
    Files.write(f, bytes);
    return f;
  }

  /** A file whose header is {@code json} (unpadded) followed by {@code dataBytes} zero bytes. */
  private Path craft(String json, int dataBytes) throws IOException {
    byte[] h = json.getBytes(StandardCharsets.UTF_8);
    return raw(concat(le64(h.length), h, new byte[dataBytes]));
  }

  /** File offset of the first occurrence of {@code marker} in {@code json} (the header starts at byte 8). */
  private static long at(String json, String marker) {
    int i = json.indexOf(marker);
    assertTrue(i >= 0, marker);
    return 8 + json.getBytes(StandardCharsets.UTF_8).length - json.substring(i).getBytes(StandardCharsets.UTF_8).length;
  }

  /** Asserts the load fails with {@code reason} and exactly the message {@code safetensors: <file>: <rest>}. */
  private static SafeTensorsException rejects(Path f, Reason reason, String rest) {
    SafeTensorsException e = assertThrows(SafeTensorsException.class, () -> SafeTensors.load(f));
    assertEquals("safetensors: " + f + ": " + rest, e.getMessage());
    assertEquals(reason, e.reason(), e.getMessage());
    assertEquals(f, e.file());
    return e;
  }

  // ------------------------------------------------------------------ header length

  @Test
  void truncatedHeaderLength() throws IOException {
    rejects(raw(new byte[0]), Reason.TRUNCATED, "file is 0 bytes, too short for the 8-byte header length");
    rejects(raw(new byte[] {2, 0, 0, 0, 0}), Reason.TRUNCATED, "file is 5 bytes, too short for the 8-byte header length");
  }

  @Test
  void headerLengthOverTheCap() throws IOException {
    rejects(raw(concat(le64(9_999_999_999L), "{}".getBytes())), Reason.HEADER_TOO_LARGE,
        "byte 0: header length 9999999999 exceeds the 100000000-byte cap");
    rejects(raw(concat(le64(-1), "{}".getBytes())), Reason.HEADER_TOO_LARGE,
        "byte 0: header length 18446744073709551615 exceeds the 100000000-byte cap");
    rejects(raw(concat(le64(100_000_001), "{}".getBytes())), Reason.HEADER_TOO_LARGE,
        "byte 0: header length 100000001 exceeds the 100000000-byte cap");
  }

  @Test
  void headerLengthBeyondTheFile() throws IOException {
    rejects(raw(concat(le64(100), "{}      ".getBytes())), Reason.TRUNCATED,
        "byte 0: header length 100 runs past the end of the file (16 bytes, so at most 8 header bytes)");
    rejects(raw(le64(1)), Reason.TRUNCATED,
        "byte 0: header length 1 runs past the end of the file (8 bytes, so at most 0 header bytes)");
  }

  // ------------------------------------------------------------------ JSON syntax

  @Test
  void invalidJson() throws IOException {
    rejects(craft("", 0), Reason.MALFORMED_JSON, "byte 8: the header is empty; expected a JSON object");
    rejects(craft("{\"a\":1,}", 0), Reason.MALFORMED_JSON,
        "byte 15: expected a '\"' to start a member name, found '}'");
    rejects(craft("{\"a\" 1}", 0), Reason.MALFORMED_JSON, "byte 13: expected ':' after member name \"a\", found '1'");
    rejects(craft("{\"w\":" + F32_2, 8), Reason.MALFORMED_JSON,
        "byte 61: expected ',' or '}' after a member, found the end of the header");
    rejects(craft("{\"w\":" + F32_2 + "x}", 8), Reason.MALFORMED_JSON,
        "byte 61: expected ',' or '}' after a member, found 'x'");
    rejects(craft("{'a':1}", 0), Reason.MALFORMED_JSON, "byte 9: expected a '\"' to start a member name, found '''");
    rejects(craft("{\"a\":tru}", 0), Reason.MALFORMED_JSON, "byte 13: expected a value, found 't'");
    rejects(craft("{\"a\":01}", 0), Reason.MALFORMED_JSON, "byte 14: leading zeros are not allowed in a number");
    rejects(craft("{\"a\":1.}", 0), Reason.MALFORMED_JSON, "byte 15: expected a digit after the decimal point, found '}'");
    rejects(craft("{\"a\":[1,2}", 0), Reason.MALFORMED_JSON,
        "byte 17: expected ',' or ']' after an array element, found '}'");
    rejects(craft("{\"a\nb\":1}", 0), Reason.MALFORMED_JSON,
        "byte 11: control character 0x0a must be escaped inside a string");
    rejects(craft("{\"a\\xb\":1}", 0), Reason.MALFORMED_JSON, "byte 11: invalid escape sequence '\\x'");
    rejects(craft("{\"\\ud800\":1}", 0), Reason.MALFORMED_JSON, "byte 10: \\u escape \\ud800 is a lone high surrogate");
    rejects(craft("{\"\\u12g4\":1}", 0), Reason.MALFORMED_JSON, "byte 10: \\u must be followed by 4 hex digits");
    rejects(craft("{\"abc", 0), Reason.MALFORMED_JSON, "byte 13: unterminated string, found the end of the header");
    rejects(craft("{}}", 0), Reason.MALFORMED_JSON, "byte 10: unexpected '}' after the header object");
    rejects(craft("{\"a\":" + "[".repeat(40) + "]".repeat(40) + "}", 0), Reason.MALFORMED_JSON,
        "byte 28: nesting deeper than 16 levels");
  }

  @Test
  void invalidUtf8InTheHeader() throws IOException {
    byte[] h = {'{', '"', 'a', (byte) 0xff, '"', ':', '1', '}'};
    rejects(raw(concat(le64(h.length), h)), Reason.MALFORMED_JSON,
        "byte 11: invalid UTF-8 sequence starting with byte 0xff in a string");
    byte[] overlong = {'{', '"', (byte) 0xc0, (byte) 0xaf, '"', ':', '1', '}'}; // '/' in 2 bytes
    rejects(raw(concat(le64(overlong.length), overlong)), Reason.MALFORMED_JSON,
        "byte 10: invalid UTF-8 sequence starting with byte 0xc0 in a string");
    byte[] surrogate = {'{', '"', (byte) 0xed, (byte) 0xa0, (byte) 0x80, '"', ':', '1', '}'}; // U+D800
    rejects(raw(concat(le64(surrogate.length), surrogate)), Reason.MALFORMED_JSON,
        "byte 10: invalid UTF-8 sequence starting with byte 0xed in a string");
    byte[] cut = {'{', '"', (byte) 0xe2, (byte) 0x82, '"', ':', '1', '}'}; // a 3-byte sequence cut short
    rejects(raw(concat(le64(cut.length), cut)), Reason.MALFORMED_JSON,
        "byte 10: invalid UTF-8 sequence starting with byte 0xe2 in a string");
  }

  @Test
  void paddingOtherThanWhitespace() throws IOException {
    byte[] h = concat("{}".getBytes(), new byte[6]); // NUL padding, which the reference reader refuses too
    rejects(raw(concat(le64(8), h)), Reason.MALFORMED_JSON, "byte 10: unexpected byte 0x00 after the header object");
    Path ok = raw(concat(le64(8), "{}\t\r\n   ".getBytes())); // any JSON whitespace is fine
    assertEquals(0, SafeTensors.load(ok).size());
  }

  @Test
  void headerThatIsNotAnObject() throws IOException {
    rejects(craft("[]", 0), Reason.MALFORMED_JSON, "byte 8: the header must start with '{' (a JSON object), found '['");
    rejects(craft("\"w\"", 0), Reason.MALFORMED_JSON,
        "byte 8: the header must start with '{' (a JSON object), found '\"'");
    rejects(craft(" {}", 0), Reason.MALFORMED_JSON, "byte 8: the header must start with '{' (a JSON object), found ' '");
  }

  // ------------------------------------------------------------------ tensor entries

  @Test
  void tensorEntryThatIsNotAnObject() throws IOException {
    rejects(craft("{\"w\":3}", 0), Reason.INVALID_HEADER,
        "byte 13: tensor 'w': expected an object with dtype, shape and data_offsets, found the number 3");
  }

  @Test
  void missingFields() throws IOException {
    rejects(craft("{\"w\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8), Reason.INVALID_HEADER,
        "byte 13: tensor 'w': missing field \"dtype\"");
    rejects(craft("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8), Reason.INVALID_HEADER,
        "byte 13: tensor 'w': missing field \"shape\"");
    rejects(craft("{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8), Reason.INVALID_HEADER,
        "byte 13: tensor 'w': missing field \"data_offsets\"");
  }

  @Test
  void unknownAndDuplicateFields() throws IOException {
    String j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"strides\":[1]}}";
    rejects(craft(j, 8), Reason.INVALID_HEADER,
        "byte " + at(j, "\"strides\"") + ": tensor 'w': unknown field \"strides\" (expected dtype, shape, data_offsets)");
    String d = "{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    rejects(craft(d, 8), Reason.INVALID_HEADER, "byte 28: tensor 'w': duplicate field \"dtype\"");
  }

  @Test
  void unknownAndUnsupportedDtypes() throws IOException {
    for (String dt : new String[] {"U8", "I16", "U64", "F8_E4M3"}) {
      String j = "{\"w\":{\"dtype\":\"" + dt + "\",\"shape\":[2],\"data_offsets\":[0,2]}}";
      SafeTensorsException e = rejects(craft(j, 2), Reason.UNSUPPORTED_DTYPE,
          "byte 22: tensor 'w': dtype " + dt + " is not supported (Ember reads F32, F64, BF16, F16, I64, I32, I8, BOOL)");
      assertEquals("w", e.tensor().orElseThrow());
      assertEquals(22, e.byteOffset().orElseThrow());
    }
    rejects(craft("{\"w\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8), Reason.INVALID_HEADER,
        "byte 22: tensor 'w': unknown dtype \"F33\" (safetensors dtypes are BF16, BOOL, C64, F16, F32, F4, F64, "
            + "F6_E2M3, F6_E3M2, F8_E4M3, F8_E5M2, F8_E8M0, I16, I32, I64, I8, U16, U32, U64, U8)");
    rejects(craft("{\"w\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8), Reason.INVALID_HEADER,
        "byte 22: tensor 'w': unknown dtype \"f32\" (safetensors dtypes are BF16, BOOL, C64, F16, F32, F4, F64, "
            + "F6_E2M3, F6_E3M2, F8_E4M3, F8_E5M2, F8_E8M0, I16, I32, I64, I8, U16, U32, U64, U8)");
    rejects(craft("{\"w\":{\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]}}", 8), Reason.INVALID_HEADER,
        "byte 22: tensor 'w': dtype must be a string, found the number 4");
  }

  @Test
  void badShapes() throws IOException {
    String neg = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,8]}}";
    rejects(craft(neg, 8), Reason.INVALID_HEADER,
        "byte " + at(neg, "-1") + ": tensor 'w': shape[1] must be a non-negative integer, found the number -1");
    String frac = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}";
    rejects(craft(frac, 8), Reason.INVALID_HEADER,
        "byte " + at(frac, "2.0") + ": tensor 'w': shape[0] must be a non-negative integer, found the number 2.0");
    String exp = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2e0],\"data_offsets\":[0,8]}}";
    rejects(craft(exp, 8), Reason.INVALID_HEADER,
        "byte " + at(exp, "2e0") + ": tensor 'w': shape[0] must be a non-negative integer, found the number 2e0");
    String str = "{\"w\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}";
    rejects(craft(str, 8), Reason.INVALID_HEADER,
        "byte " + at(str, "\"2\"") + ": tensor 'w': shape[0] must be a non-negative integer, found the string \"2\"");
    String notArr = "{\"w\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}";
    rejects(craft(notArr, 8), Reason.INVALID_HEADER,
        "byte 36: tensor 'w': shape must be an array of non-negative integers, found the number 2");
    String nul = "{\"w\":{\"dtype\":\"F32\",\"shape\":null,\"data_offsets\":[0,8]}}";
    rejects(craft(nul, 8), Reason.INVALID_HEADER,
        "byte 36: tensor 'w': shape must be an array of non-negative integers, found null");
  }

  @Test
  void shapeProductOverflow() throws IOException {
    String big = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2147483583,2147483583,2147483583],\"data_offsets\":[0,8]}}";
    rejects(craft(big, 8), Reason.INVALID_OFFSETS,
        "byte 36: tensor 'w': the byte size of F32 [2147483583, 2147483583, 2147483583] overflows 64 bits");
    // the element count fits in 64 bits, the byte count does not
    String bytes = "{\"w\":{\"dtype\":\"F64\",\"shape\":[2147483583,2147483583],\"data_offsets\":[0,8]}}";
    rejects(craft(bytes, 8), Reason.INVALID_OFFSETS,
        "byte 36: tensor 'w': the byte size of F64 [2147483583, 2147483583] overflows 64 bits");
  }

  @Test
  void tensorsLargerThanEmberHolds() throws IOException {
    String dim = "{\"w\":{\"dtype\":\"BOOL\",\"shape\":[3000000000],\"data_offsets\":[0,3000000000]}}";
    rejects(craft(dim, 0), Reason.TOO_LARGE_FOR_EMBER,
        "byte 38: tensor 'w': shape[0] = 3000000000 exceeds Ember's limit of 2147483583 per dimension");
    String numel = "{\"w\":{\"dtype\":\"F32\",\"shape\":[65536,65536],\"data_offsets\":[0,17179869184]}}";
    rejects(craft(numel, 0), Reason.TOO_LARGE_FOR_EMBER,
        "byte 36: tensor 'w': F32 [65536, 65536] has 4294967296 elements; an Ember tensor holds at most 2147483583");
  }

  // ------------------------------------------------------------------ offsets

  @Test
  void badOffsetValues() throws IOException {
    String three = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4,8]}}";
    rejects(craft(three, 8), Reason.INVALID_HEADER, "byte " + at(three, "[0,4,8]")
        + ": tensor 'w': data_offsets must be an array of 2 non-negative integers, found an array of 3 elements");
    String neg = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}";
    rejects(craft(neg, 8), Reason.INVALID_HEADER, "byte " + at(neg, "-8")
        + ": tensor 'w': data_offsets[0] must be a non-negative integer, found the number -8");
    String huge = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,99999999999999999999]}}";
    rejects(craft(huge, 8), Reason.INVALID_HEADER, "byte " + at(huge, "999")
        + ": tensor 'w': data_offsets[1] = 99999999999999999999 is too large (over 2^63 - 1)");
  }

  @Test
  void offsetsOutOfRange() throws IOException {
    String j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    rejects(craft(j, 8), Reason.INVALID_OFFSETS, "byte " + at(j, "[0,16]")
        + ": tensor 'w': data_offsets [0, 16] run past the end of the data section (8 bytes)");
  }

  @Test
  void aHeaderAnnouncingGigabytesFailsBeforeAllocatingThem() throws IOException {
    // 1e9 floats would be 4 GB if allocated first; the offsets are checked against the file first
    String j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1000000000],\"data_offsets\":[0,4000000000]}}";
    rejects(craft(j, 16), Reason.INVALID_OFFSETS, "byte " + at(j, "[0,4000000000]")
        + ": tensor 'w': data_offsets [0, 4000000000] run past the end of the data section (16 bytes)");
  }

  @Test
  void offsetsEndingBeforeTheyBegin() throws IOException {
    String j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}";
    rejects(craft(j, 8), Reason.INVALID_OFFSETS,
        "byte " + at(j, "[8,0]") + ": tensor 'w': data_offsets [8, 0] end before they begin");
  }

  @Test
  void dtypeTimesShapeDisagreesWithOffsets() throws IOException {
    String j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}";
    rejects(craft(j, 12), Reason.INVALID_OFFSETS,
        "byte " + at(j, "[0,12]") + ": tensor 'w': data_offsets [0, 12] hold 12 bytes but F32 [2, 2] needs 16");
    String b = "{\"m\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,12]}}";
    rejects(craft(b, 12), Reason.INVALID_OFFSETS,
        "byte " + at(b, "[0,12]") + ": tensor 'm': data_offsets [0, 12] hold 12 bytes but BOOL [3] needs 3");
  }

  @Test
  void overlappingTensors() throws IOException {
    String j = "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        + "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}";
    rejects(craft(j, 24), Reason.INVALID_OFFSETS,
        "byte " + at(j, "\"b\"") + ": tensor 'b': data_offsets [8, 24] overlap tensor 'a' [0, 16]");
    String same = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        + "\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    rejects(craft(same, 8), Reason.INVALID_OFFSETS,
        "byte " + at(same, "\"b\"") + ": tensor 'b': data_offsets [0, 8] overlap tensor 'a' [0, 8]");
    String emptyInside = "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        + "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]}}";
    rejects(craft(emptyInside, 16), Reason.INVALID_OFFSETS,
        "byte " + at(emptyInside, "\"e\"") + ": tensor 'e': data_offsets [8, 8] overlap tensor 'a' [0, 16]");
  }

  @Test
  void gapsBetweenTensors() throws IOException {
    String j = "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        + "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[20,36]}}";
    rejects(craft(j, 36), Reason.INVALID_OFFSETS, "byte " + at(j, "\"b\"")
        + ": tensor 'b': data_offsets [20, 36] leave a gap of 4 bytes after tensor 'a' (which ends at 16);"
        + " tensors must be contiguous");
    String start = "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[4,20]}}";
    rejects(craft(start, 20), Reason.INVALID_OFFSETS, "byte 9: tensor 'a': data_offsets [4, 20] leave a gap of 4 bytes"
        + " at the start of the data section; tensors must be contiguous");
  }

  @Test
  void trailingBytesAfterTheData() throws IOException {
    String j = "{\"w\":" + F32_2 + "}";
    Path f = craft(j, 12);
    long dataStart = 8 + j.length();
    rejects(f, Reason.TRAILING_BYTES, "byte " + (dataStart + 8)
        + ": 4 trailing bytes after the tensor data (the header's tensors cover 8 of the 12 data bytes)");
    rejects(craft("{}", 1), Reason.TRAILING_BYTES,
        "byte 10: 1 trailing bytes after the tensor data (the header's tensors cover 0 of the 1 data bytes)");
  }

  @Test
  void duplicateTensorNames() throws IOException {
    String j = "{\"w\":" + F32_2 + ",\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}";
    SafeTensorsException e = rejects(craft(j, 16), Reason.INVALID_HEADER,
        "byte " + (8 + j.lastIndexOf("\"w\"")) + ": tensor 'w': duplicate tensor name (first defined at byte 9)");
    assertEquals("w", e.tensor().orElseThrow());
    // the same name written with an escape is the same name
    String esc = "{\"w\":" + F32_2 + ",\"\\u0077\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}";
    rejects(craft(esc, 16), Reason.INVALID_HEADER,
        "byte " + (8 + esc.indexOf("\"\\u0077\"")) + ": tensor 'w': duplicate tensor name (first defined at byte 9)");
  }

  @Test
  void metadataThatIsNotAStringToStringMap() throws IOException {
    String num = "{\"__metadata__\":{\"epoch\":3}}";
    rejects(craft(num, 0), Reason.INVALID_HEADER,
        "byte " + at(num, "3}") + ": \"__metadata__\" must map strings to strings, but \"epoch\" maps to the number 3");
    String nested = "{\"__metadata__\":{\"a\":{\"b\":\"c\"}}}";
    rejects(craft(nested, 0), Reason.INVALID_HEADER,
        "byte 29: \"__metadata__\" must map strings to strings, but \"a\" maps to an object");
    rejects(craft("{\"__metadata__\":[\"a\"]}", 0), Reason.INVALID_HEADER,
        "byte 24: \"__metadata__\" must be an object mapping strings to strings, found an array");
    rejects(craft("{\"__metadata__\":null}", 0), Reason.INVALID_HEADER,
        "byte 24: \"__metadata__\" must be an object mapping strings to strings, found null");
    String dup = "{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}";
    rejects(craft(dup, 0), Reason.INVALID_HEADER, "byte 33: duplicate key \"a\" in \"__metadata__\"");
    String twice = "{\"__metadata__\":{},\"__metadata__\":{}}";
    rejects(craft(twice, 0), Reason.INVALID_HEADER, "byte 27: duplicate \"__metadata__\"");
  }

  // ------------------------------------------------------------------ data

  @Test
  void boolBytesOtherThanZeroOrOne() throws IOException {
    String j = "{\"m\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}";
    byte[] h = j.getBytes(StandardCharsets.UTF_8);
    Path f = raw(concat(le64(h.length), h, new byte[] {1, 0, 2}));
    rejects(f, Reason.INVALID_DATA, "byte " + (8 + h.length + 2) + ": tensor 'm': BOOL element 2 is 0x02, not 0 or 1");
  }

  @Test
  void aValidFileFromTheCorpusBuilderLoads() throws IOException {
    // guards the builder itself: the same helpers produce a file that is accepted
    String j = "{\"__metadata__\":{\"k\":\"v\"},\"w\":" + F32_2 + ",\"e\":{\"dtype\":\"I64\",\"shape\":[0,3],"
        + "\"data_offsets\":[8,8]}}";
    SafeTensorsFile file = SafeTensors.read(craft(j, 8));
    assertEquals(java.util.List.of("w", "e"), java.util.List.copyOf(file.tensors().keySet()));
    assertEquals(java.util.Map.of("k", "v"), file.metadata());
  }

  @Test
  void headerOrderMayDifferFromDataOrder() throws IOException {
    // the reference reader sorts entries by offsets (older writers listed names alphabetically);
    // tensors come back in data order
    String j = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
        + "\"b\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}";
    SafeTensorsFile file = SafeTensors.read(craft(j, 12));
    assertEquals(java.util.List.of("b", "a"), java.util.List.copyOf(file.tensors().keySet()));
  }

  // ------------------------------------------------------------------ size limits, before allocating

  /** Like {@link #rejects}, for {@code SafeTensors.read(f, limit)}. */
  private static SafeTensorsException rejects(Path f, long limit, Reason reason, String rest) {
    SafeTensorsException e = assertThrows(SafeTensorsException.class, () -> SafeTensors.read(f, limit));
    assertEquals("safetensors: " + f + ": " + rest, e.getMessage());
    assertEquals(reason, e.reason(), e.getMessage());
    return e;
  }

  /** A header of {@code n} empty F32 tensors: as many as fit in a few bytes each. */
  private static String emptyTensors(int n) {
    StringBuilder sb = new StringBuilder("{");
    for (int i = 0; i < n; i++) {
      sb.append(i > 0 ? "," : "").append("\"t").append(i).append("\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}");
    }
    return sb.append('}').toString();
  }

  @Test
  void metadataOverTheLimitIsRefusedBeforeItIsDecoded() throws IOException {
    String value = "x".repeat((int) SafeTensors.MAX_METADATA_BYTES);
    String j = "{\"__metadata__\":{\"k\":\"" + value + "\"},\"w\":" + F32_2 + "}";
    long span = 8 + value.length(); // {"k":"..."}
    rejects(craft(j, 8), Reason.METADATA_TOO_LARGE, "byte 24: \"__metadata__\" is " + span
        + " bytes (16.0 MiB) of JSON, over the 16 MiB limit for metadata (real files hold a few KB of strings)");
    // just under the limit reads
    String under = "{\"__metadata__\":{\"k\":\"" + value.substring(8) + "\"},\"w\":" + F32_2 + "}";
    assertEquals(value.length() - 8, SafeTensors.read(craft(under, 8)).metadata().get("k").length());
  }

  @Test
  void aHeaderOfManyTensorsIsRefusedWhenItsParseCannotFit() throws IOException {
    String j = emptyTensors(300_000); // 17 MB of header, about 300 MB of parsed JSON
    Path f = craft(j, 0);
    long need = 300_000 * 1024L + 2L * j.length();
    rejects(f, 100_000_000, Reason.HEADER_TOO_LARGE, "byte 8: header declares 300000 tensors; parsing it needs about "
        + HeapBudget.human(need) + " of heap (1 KiB per tensor), more than the limit of 100000000 bytes");
    assertEquals(300, SafeTensors.read(craft(emptyTensors(300), 0), 400_000).tensors().size(), "a few hundred fit");
  }

  @Test
  void tensorsThatCannotFitAreRefusedBeforeAllocatingWithTheSizeTheyNeed() throws IOException {
    String j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1000],\"data_offsets\":[0,4000]}}";
    Path f = craft(j, 4000);
    rejects(f, 4000, Reason.EXCEEDS_HEAP, "its 1 tensor holds 4000 bytes of data, needing 4.4 KiB of heap, more than "
        + "the limit of 4000 bytes");
    rejects(f, 10, Reason.HEADER_TOO_LARGE, "byte 0: the header of " + j.length() + " bytes needs "
        + HeapBudget.human(j.length()) + " of heap to read, more than the limit of 10 bytes");
    assertEquals(1000, SafeTensors.read(f, 1L << 20).tensors().get("w").numel());
  }
}
