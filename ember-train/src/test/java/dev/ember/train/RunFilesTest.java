package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.AtomicFiles;
import dev.ember.nn.io.Json;
import dev.ember.train.report.CsvTable;
import dev.ember.train.report.RunFileException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The small readers and writers behind the run files: Json, CsvTable, AtomicFiles. */
class RunFilesTest {
  @TempDir Path dir;
  final Path f = Path.of("run/x.json");

  @Test
  void jsonRoundTripsThePlainTypes() throws RunFileException {
    LinkedHashMap<String, Object> m = new LinkedHashMap<>();
    m.put("s", "a\"b\\c\n\u0001é");
    m.put("i", 42L);
    m.put("d", 0.1);
    m.put("big", 1e300);
    m.put("neg0", -0.0);
    m.put("nan", Double.NaN);
    m.put("arr", new double[] {1.5, Double.POSITIVE_INFINITY});
    m.put("longs", new long[] {1, -2});
    m.put("list", List.of(true, false, "x"));
    m.put("none", null);
    String text = Json.write(m, Json.NonFinite.NULL);
    assertEquals("{\"s\":\"a\\\"b\\\\c\\n\\u0001é\",\"i\":42,\"d\":0.1,\"big\":1.0E300,\"neg0\":-0.0,\"nan\":null,"
        + "\"arr\":[1.5,null],\"longs\":[1,-2],\"list\":[true,false,\"x\"],\"none\":null}", text);
    @SuppressWarnings("unchecked")
    Map<String, Object> back = (Map<String, Object>) parse(text, f, 0);
    assertEquals(m.get("s"), back.get("s"));
    assertEquals(42L, back.get("i"));
    assertEquals(0.1, back.get("d"));
    assertEquals(1e300, back.get("big"));
    assertEquals(List.of(1.5, Double.NaN).get(0), ((List<?>) back.get("arr")).get(0));
    assertEquals(null, ((List<?>) back.get("arr")).get(1));
    assertEquals(List.of(1L, -2L), back.get("longs"));
    assertEquals(List.of(true, false, "x"), back.get("list"));
    assertTrue(back.containsKey("none"));
    assertEquals("\u00e9\ud83d\ude00", parse("\"\\u00e9\\ud83d\\ude00\"", f, 0));
    assertThrows(IllegalArgumentException.class, () -> Json.write(Map.of("x", new Object())));
  }

  /** What the run-file readers do: the one JSON reader, its errors told as a {@link RunFileException}. */
  private static Object parse(String text, Path file, long base) throws RunFileException {
    try {
      return Json.parsePlain(text.getBytes(StandardCharsets.UTF_8), base, Json.MAX_DEPTH, Json.NonFinite.REJECT);
    } catch (Json.SyntaxError e) {
      throw new RunFileException(file, e.pos, e.getMessage());
    }
  }

  @Test
  void jsonErrorsNameTheFileAndByteOffset() {
    RunFileException e = assertThrows(RunFileException.class, () -> parse("{\"é\": tru}", f, 100));
    // "é" is two bytes in UTF-8: the bad token starts at byte 100 + 7 (character 6)
    assertEquals(107, e.offset());
    assertEquals("run/x.json at byte 107: expected a value, found 't'", e.getMessage());
    e = assertThrows(RunFileException.class, () -> parse("[1, 2] x", f, 0));
    assertEquals("run/x.json at byte 7: unexpected 'x' after the JSON value", e.getMessage());
    e = assertThrows(RunFileException.class, () -> parse("[1.]", f, 0));
    assertTrue(e.getMessage().endsWith("expected a digit after the decimal point, found ']'"), e.getMessage());
    e = assertThrows(RunFileException.class, () -> parse("\"a\\qb\"", f, 0));
    assertEquals(2, e.offset());
    e = assertThrows(RunFileException.class, () -> parse("[".repeat(Json.MAX_DEPTH + 1), f, 0));
    assertTrue(e.getMessage().endsWith("nesting deeper than " + Json.MAX_DEPTH + " levels"), e.getMessage());
    e = assertThrows(RunFileException.class, () -> parse("", f, 0));
    assertTrue(e.getMessage().endsWith("expected a value, found the end of the text"), e.getMessage());
  }

  @Test
  void csvQuotesWhatNeedsQuotingAndReadsItBack() throws RunFileException {
    StringBuilder sb = new StringBuilder();
    CsvTable.row(sb, List.of("plain", "with,comma", "with \"quote\"", "two\nlines", ""));
    assertEquals("plain,\"with,comma\",\"with \"\"quote\"\"\",\"two\nlines\",\n", sb.toString());
    List<List<String>> rows = CsvTable.parse(sb + "1,2,3,4,5\r\nlast,row", f);
    assertEquals(List.of(List.of("plain", "with,comma", "with \"quote\"", "two\nlines", ""), List.of("1", "2", "3", "4", "5"),
        List.of("last", "row")), rows);
    RunFileException e = assertThrows(RunFileException.class, () -> CsvTable.parse("a,b\n1,x\"y\n", f));
    assertEquals(7, e.offset());
    assertTrue(e.getMessage().endsWith("a quote inside an unquoted cell"), e.getMessage());
    e = assertThrows(RunFileException.class, () -> CsvTable.parse("a,\"b\"c\n", f));
    assertEquals(5, e.offset());
  }

  @Test
  void atomicFileReplacesTheWholeFileAndLeavesNoTemporary() throws Exception {
    Path t = dir.resolve("sub/out.txt");
    AtomicFiles.write(t, "first version, longer\n");
    AtomicFiles.write(t, "second\n");
    assertEquals("second\n", Files.readString(t));
    AtomicFiles.write(t, new byte[] {1, 2, 3});
    assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(t));
    try (Stream<Path> s = Files.list(t.getParent())) {
      assertEquals(List.of(t), s.toList());
    }
  }
}
