package dev.ember.train.report;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The small JSON dialect the run-folder files use (profile.json, confusion_matrix.json, the
 * JSON-lines logs): RFC 8259 values read into plain Java ({@link LinkedHashMap} for objects, in
 * order; {@link List}; {@link Long} for integers that fit, {@link Double} for other numbers;
 * {@link String}; {@link Boolean}; {@code null}) and written back from the same types (plus
 * {@code double[]}, {@code long[]}, {@code int[]} and any {@link Number}). JSON has no NaN or
 * infinity: they are written as {@code null}. Nesting is capped at {@link #MAX_DEPTH} levels.
 */
public final class Json {
  /** Deepest nesting {@link #parse} accepts (run files are at most four levels deep). */
  public static final int MAX_DEPTH = 64;

  private final String s;
  private final Path file;
  private final long base;
  private int i;

  private Json(String s, Path file, long base) {
    this.s = s;
    this.file = file;
    this.base = base;
  }

  /**
   * Parses {@code text} (one value, surrounded only by whitespace). {@code file} and {@code base}
   * (the byte offset of {@code text} in that file) only serve the error message.
   *
   * @throws RunFileException if the text is not one JSON value
   */
  public static Object parse(String text, Path file, long base) throws RunFileException {
    Json p = new Json(text, file, base);
    Object v = p.value(0);
    p.skipSpace();
    if (p.i < text.length()) throw p.error("unexpected " + p.found() + " after the JSON value");
    return v;
  }

  /** Writes {@code value} as compact JSON. */
  public static String write(Object value) {
    StringBuilder sb = new StringBuilder();
    write(sb, value);
    return sb.toString();
  }

  /** Appends {@code value} as compact JSON to {@code sb}. */
  public static void write(StringBuilder sb, Object value) {
    switch (value) {
      case null -> sb.append("null");
      case Boolean b -> sb.append(b);
      case String str -> string(sb, str);
      case Double d -> number(sb, d);
      case Float f -> number(sb, f.doubleValue());
      case Number n -> sb.append(n.longValue());
      case double[] a -> {
        sb.append('[');
        for (int k = 0; k < a.length; k++) {
          if (k > 0) sb.append(',');
          number(sb, a[k]);
        }
        sb.append(']');
      }
      case long[] a -> {
        sb.append('[');
        for (int k = 0; k < a.length; k++) sb.append(k == 0 ? "" : ",").append(a[k]);
        sb.append(']');
      }
      case int[] a -> {
        sb.append('[');
        for (int k = 0; k < a.length; k++) sb.append(k == 0 ? "" : ",").append(a[k]);
        sb.append(']');
      }
      case List<?> list -> {
        sb.append('[');
        for (int k = 0; k < list.size(); k++) {
          if (k > 0) sb.append(',');
          write(sb, list.get(k));
        }
        sb.append(']');
      }
      case Map<?, ?> map -> {
        sb.append('{');
        boolean first = true;
        for (var e : map.entrySet()) {
          if (!first) sb.append(',');
          first = false;
          string(sb, String.valueOf(e.getKey()));
          sb.append(':');
          write(sb, e.getValue());
        }
        sb.append('}');
      }
      default -> throw new IllegalArgumentException("Json.write: cannot write a " + value.getClass().getName()
          + "; expected null, a boolean, number, string, primitive array, list or map");
    }
  }

  /** A finite double in the shortest form that reads back to the same value; NaN and infinities as null. */
  public static void number(StringBuilder sb, double d) {
    if (!Double.isFinite(d)) {
      sb.append("null");
    } else if (d == Math.rint(d) && Math.abs(d) < 1e15 && !(d == 0 && 1 / d < 0)) {
      sb.append((long) d);
    } else {
      sb.append(Double.toString(d));
    }
  }

  /** A JSON string literal with the escapes RFC 8259 requires. */
  public static void string(StringBuilder sb, String str) {
    sb.append('"');
    for (int k = 0; k < str.length(); k++) {
      char c = str.charAt(k);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          else sb.append(c);
        }
      }
    }
    sb.append('"');
  }

  private Object value(int depth) throws RunFileException {
    skipSpace();
    if (i >= s.length()) throw error("expected a value, found the end of the text");
    char c = s.charAt(i);
    return switch (c) {
      case '{' -> object(depth + 1);
      case '[' -> array(depth + 1);
      case '"' -> string();
      case 't' -> literal("true", Boolean.TRUE);
      case 'f' -> literal("false", Boolean.FALSE);
      case 'n' -> literal("null", null);
      default -> {
        if (c == '-' || (c >= '0' && c <= '9')) yield number();
        throw error("expected a value, found " + found());
      }
    };
  }

  private Map<String, Object> object(int depth) throws RunFileException {
    if (depth > MAX_DEPTH) throw error("nesting deeper than " + MAX_DEPTH + " levels");
    i++;
    LinkedHashMap<String, Object> m = new LinkedHashMap<>();
    skipSpace();
    if (i < s.length() && s.charAt(i) == '}') {
      i++;
      return m;
    }
    while (true) {
      skipSpace();
      if (i >= s.length() || s.charAt(i) != '"') throw error("expected '\"' to start a member name, found " + found());
      String key = string();
      skipSpace();
      if (i >= s.length() || s.charAt(i) != ':') throw error("expected ':' after member \"" + key + "\", found " + found());
      i++;
      m.put(key, value(depth));
      skipSpace();
      if (i < s.length() && s.charAt(i) == ',') {
        i++;
      } else if (i < s.length() && s.charAt(i) == '}') {
        i++;
        return m;
      } else {
        throw error("expected ',' or '}' after a member, found " + found());
      }
    }
  }

  private List<Object> array(int depth) throws RunFileException {
    if (depth > MAX_DEPTH) throw error("nesting deeper than " + MAX_DEPTH + " levels");
    i++;
    List<Object> list = new ArrayList<>();
    skipSpace();
    if (i < s.length() && s.charAt(i) == ']') {
      i++;
      return list;
    }
    while (true) {
      list.add(value(depth));
      skipSpace();
      if (i < s.length() && s.charAt(i) == ',') {
        i++;
      } else if (i < s.length() && s.charAt(i) == ']') {
        i++;
        return list;
      } else {
        throw error("expected ',' or ']' after an element, found " + found());
      }
    }
  }

  private Object literal(String word, Object v) throws RunFileException {
    if (!s.startsWith(word, i)) throw error("expected a value, found " + found());
    i += word.length();
    return v;
  }

  private Object number() throws RunFileException {
    int start = i;
    if (s.charAt(i) == '-') i++;
    if (i < s.length() && s.charAt(i) == '0') {
      i++;
    } else if (!digits()) {
      throw error("expected a digit, found " + found());
    }
    boolean integer = true;
    if (i < s.length() && s.charAt(i) == '.') {
      integer = false;
      i++;
      if (!digits()) throw error("expected a digit after the decimal point, found " + found());
    }
    if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
      integer = false;
      i++;
      if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) i++;
      if (!digits()) throw error("expected a digit in the exponent, found " + found());
    }
    String text = s.substring(start, i);
    if (integer && text.length() <= 18) return Long.parseLong(text);
    return Double.parseDouble(text);
  }

  private boolean digits() {
    int start = i;
    while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') i++;
    return i > start;
  }

  private String string() throws RunFileException {
    i++;
    StringBuilder sb = new StringBuilder();
    while (true) {
      if (i >= s.length()) throw error("unterminated string");
      char c = s.charAt(i);
      if (c == '"') {
        i++;
        return sb.toString();
      }
      if (c < 0x20) throw error(String.format(Locale.ROOT, "control character 0x%02x inside a string", (int) c));
      if (c != '\\') {
        sb.append(c);
        i++;
        continue;
      }
      if (i + 1 >= s.length()) throw error("unterminated escape sequence");
      char e = s.charAt(i + 1);
      i += 2;
      switch (e) {
        case '"', '\\', '/' -> sb.append(e);
        case 'b' -> sb.append('\b');
        case 'f' -> sb.append('\f');
        case 'n' -> sb.append('\n');
        case 'r' -> sb.append('\r');
        case 't' -> sb.append('\t');
        case 'u' -> {
          if (i + 4 > s.length()) throw error("\\u must be followed by 4 hex digits");
          int v = 0;
          for (int k = 0; k < 4; k++) {
            int d = Character.digit(s.charAt(i + k), 16);
            if (d < 0) throw error("\\u must be followed by 4 hex digits");
            v = v * 16 + d;
          }
          i += 4;
          sb.append((char) v);
        }
        default -> {
          i -= 2;
          throw error("invalid escape sequence '\\" + e + "'");
        }
      }
    }
  }

  private void skipSpace() {
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      i++;
    }
  }

  private String found() {
    if (i >= s.length()) return "the end of the text";
    char c = s.charAt(i);
    return c >= 0x20 && c < 0x7f ? "'" + c + "'" : String.format(Locale.ROOT, "character U+%04X", (int) c);
  }

  private RunFileException error(String message) {
    long at = base + s.substring(0, Math.min(i, s.length())).getBytes(StandardCharsets.UTF_8).length;
    return new RunFileException(file, at, message);
  }
}
