package dev.ember.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small strict JSON parser for the benchmark result lines (no dependency just for this):
 * objects become {@code Map<String, Object>} in key order, arrays {@code List<Object>}, numbers
 * {@code Double}, plus {@code String}, {@code Boolean} and {@code null}. Python's {@code json}
 * writes non-finite floats as {@code NaN}, {@code Infinity} and {@code -Infinity}; those are
 * accepted too, as Python's reader accepts them.
 */
final class JsonReader {
  private final String s;
  private int i;

  private JsonReader(String s) {
    this.s = s;
  }

  /** Parses one complete JSON value; throws {@link IllegalArgumentException} naming the column of a syntax error. */
  static Object parse(String text) {
    JsonReader r = new JsonReader(text);
    r.skipWs();
    Object v = r.value();
    r.skipWs();
    if (r.i != text.length()) throw r.error("unexpected text after the value");
    return v;
  }

  private IllegalArgumentException error(String what) {
    String near = s.substring(i, Math.min(s.length(), i + 20));
    return new IllegalArgumentException("invalid JSON: " + what + " at column " + (i + 1)
        + (near.isEmpty() ? " (end of line)" : " (near '" + near + "')"));
  }

  private void skipWs() {
    while (i < s.length() && (s.charAt(i) == ' ' || s.charAt(i) == '\t' || s.charAt(i) == '\r' || s.charAt(i) == '\n')) i++;
  }

  private Object value() {
    if (i >= s.length()) throw error("expected a value");
    char c = s.charAt(i);
    return switch (c) {
      case '{' -> object();
      case '[' -> array();
      case '"' -> string();
      case 't' -> literal("true", Boolean.TRUE);
      case 'f' -> literal("false", Boolean.FALSE);
      case 'n' -> literal("null", null);
      case 'N' -> literal("NaN", Double.NaN);
      case 'I' -> literal("Infinity", Double.POSITIVE_INFINITY);
      default -> {
        if (c == '-' && s.startsWith("-Infinity", i)) yield literal("-Infinity", Double.NEGATIVE_INFINITY);
        if (c == '-' || (c >= '0' && c <= '9')) yield number();
        throw error("expected a value");
      }
    };
  }

  private Object literal(String word, Object v) {
    if (!s.startsWith(word, i)) throw error("expected '" + word + "'");
    i += word.length();
    return v;
  }

  private Map<String, Object> object() {
    Map<String, Object> m = new LinkedHashMap<>();
    i++;
    skipWs();
    if (i < s.length() && s.charAt(i) == '}') {
      i++;
      return m;
    }
    while (true) {
      skipWs();
      if (i >= s.length() || s.charAt(i) != '"') throw error("expected a quoted key");
      String k = string();
      skipWs();
      if (i >= s.length() || s.charAt(i) != ':') throw error("expected ':'");
      i++;
      skipWs();
      if (m.containsKey(k)) throw error("duplicate key '" + k + "'");
      m.put(k, value());
      skipWs();
      if (i < s.length() && s.charAt(i) == ',') {
        i++;
      } else if (i < s.length() && s.charAt(i) == '}') {
        i++;
        return m;
      } else {
        throw error("expected ',' or '}'");
      }
    }
  }

  private List<Object> array() {
    List<Object> a = new ArrayList<>();
    i++;
    skipWs();
    if (i < s.length() && s.charAt(i) == ']') {
      i++;
      return a;
    }
    while (true) {
      skipWs();
      a.add(value());
      skipWs();
      if (i < s.length() && s.charAt(i) == ',') {
        i++;
      } else if (i < s.length() && s.charAt(i) == ']') {
        i++;
        return a;
      } else {
        throw error("expected ',' or ']'");
      }
    }
  }

  private String string() {
    StringBuilder sb = new StringBuilder();
    i++;
    while (true) {
      if (i >= s.length()) throw error("unterminated string");
      char c = s.charAt(i++);
      if (c == '"') return sb.toString();
      if (c < 0x20) {
        i--;
        throw error("control character in string");
      }
      if (c != '\\') {
        sb.append(c);
        continue;
      }
      if (i >= s.length()) throw error("unterminated string");
      char e = s.charAt(i++);
      switch (e) {
        case '"', '\\', '/' -> sb.append(e);
        case 'b' -> sb.append('\b');
        case 'f' -> sb.append('\f');
        case 'n' -> sb.append('\n');
        case 'r' -> sb.append('\r');
        case 't' -> sb.append('\t');
        case 'u' -> {
          if (i + 4 > s.length()) throw error("short \\u escape");
          try {
            sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
          } catch (NumberFormatException ex) {
            throw error("bad \\u escape");
          }
          i += 4;
        }
        default -> {
          i--;
          throw error("bad escape '\\" + e + "'");
        }
      }
    }
  }

  private Double number() {
    int start = i;
    if (s.charAt(i) == '-') i++;
    int digits = i;
    while (i < s.length() && Character.isDigit(s.charAt(i))) i++;
    if (i == digits) throw error("expected digits");
    if (i < s.length() && s.charAt(i) == '.') {
      i++;
      int frac = i;
      while (i < s.length() && Character.isDigit(s.charAt(i))) i++;
      if (i == frac) throw error("expected digits after '.'");
    }
    if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
      i++;
      if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) i++;
      int exp = i;
      while (i < s.length() && Character.isDigit(s.charAt(i))) i++;
      if (i == exp) throw error("expected exponent digits");
    }
    return Double.parseDouble(s.substring(start, i));
  }
}
