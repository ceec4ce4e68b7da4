package dev.ember.train;

import dev.ember.tensor.Tensor;
import dev.ember.train.report.Json;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Checkpoint state (maps of numbers, strings, arrays, lists and tensors) as JSON that keeps every
 * Java type: an {@code int} comes back an {@code Integer}, a {@code long[]} a {@code long[]}, and a
 * double bit for bit (written with {@link Double#toString}, which round-trips, or as a tag for
 * NaN and infinities). Tensors are not written inline: {@link #write} hands each to a sink that
 * stores it elsewhere and returns a reference name, and {@link #read} resolves the names back.
 *
 * <p>Encoding: {@code null}, booleans and strings as JSON; {@code {"i":1}}, {@code {"l":1}},
 * {@code {"f":"1.5"}}, {@code {"d":"1.5"}}; arrays {@code {"i[]":[..]}}, {@code {"l[]":[..]}},
 * {@code {"d[]":[".."]}}; lists as JSON arrays; maps {@code {"m":{..}}}; tensors {@code {"t":"name"}}.
 */
final class StateJson {
  private StateJson() {}

  /** Thrown for text that is not what {@link #write} produces. */
  static final class FormatException extends IllegalArgumentException {
    FormatException(String message) {
      super(message);
    }
  }

  static String write(Object value, Function<Tensor, String> tensorSink) {
    StringBuilder sb = new StringBuilder();
    write(sb, value, tensorSink);
    return sb.toString();
  }

  private static void write(StringBuilder sb, Object v, Function<Tensor, String> sink) {
    switch (v) {
      case null -> sb.append("null");
      case Boolean b -> sb.append(b);
      case String s -> Json.string(sb, s);
      case Integer i -> sb.append("{\"i\":").append(i).append('}');
      case Long l -> sb.append("{\"l\":").append(l).append('}');
      case Float f -> tagged(sb, "f", Float.toString(f));
      case Double d -> tagged(sb, "d", Double.toString(d));
      case int[] a -> {
        sb.append("{\"i[]\":[");
        for (int i = 0; i < a.length; i++) sb.append(i == 0 ? "" : ",").append(a[i]);
        sb.append("]}");
      }
      case long[] a -> {
        sb.append("{\"l[]\":[");
        for (int i = 0; i < a.length; i++) sb.append(i == 0 ? "" : ",").append(a[i]);
        sb.append("]}");
      }
      case double[] a -> {
        sb.append("{\"d[]\":[");
        for (int i = 0; i < a.length; i++) {
          if (i > 0) sb.append(',');
          Json.string(sb, Double.toString(a[i]));
        }
        sb.append("]}");
      }
      case Tensor t -> {
        sb.append("{\"t\":");
        Json.string(sb, sink.apply(t));
        sb.append('}');
      }
      case List<?> list -> {
        sb.append('[');
        for (int i = 0; i < list.size(); i++) {
          if (i > 0) sb.append(',');
          write(sb, list.get(i), sink);
        }
        sb.append(']');
      }
      case Map<?, ?> map -> {
        sb.append("{\"m\":{");
        boolean first = true;
        for (var e : map.entrySet()) {
          if (!(e.getKey() instanceof String k)) {
            throw new IllegalArgumentException("checkpoint state: map keys must be strings, got " + e.getKey());
          }
          if (!first) sb.append(',');
          first = false;
          Json.string(sb, k);
          sb.append(':');
          write(sb, e.getValue(), sink);
        }
        sb.append("}}");
      }
      default -> throw new IllegalArgumentException("checkpoint state: cannot store a " + v.getClass().getName()
          + " (allowed: numbers, strings, booleans, int[]/long[]/double[], lists, maps, tensors)");
    }
  }

  private static void tagged(StringBuilder sb, String tag, String text) {
    sb.append("{\"").append(tag).append("\":");
    Json.string(sb, text);
    sb.append('}');
  }

  static Object read(String text, Function<String, Tensor> tensors) {
    Parser p = new Parser(text, tensors);
    Object v = p.value(0);
    p.skipWs();
    if (p.pos != text.length()) throw p.fail("trailing characters");
    return v;
  }

  private static final class Parser {
    private final String s;
    private final Function<String, Tensor> tensors;
    int pos;

    Parser(String s, Function<String, Tensor> tensors) {
      this.s = s;
      this.tensors = tensors;
    }

    FormatException fail(String what) {
      return new FormatException("checkpoint state: " + what + " at character " + pos);
    }

    void skipWs() {
      while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) pos++;
    }

    void expect(char c) {
      skipWs();
      if (pos >= s.length() || s.charAt(pos) != c) throw fail("expected '" + c + "'");
      pos++;
    }

    boolean peek(char c) {
      skipWs();
      return pos < s.length() && s.charAt(pos) == c;
    }

    Object value(int depth) {
      if (depth > 64) throw fail("nesting deeper than 64");
      skipWs();
      if (pos >= s.length()) throw fail("unexpected end");
      char c = s.charAt(pos);
      if (c == '"') return string();
      if (c == '[') {
        pos++;
        List<Object> out = new ArrayList<>();
        if (peek(']')) {
          pos++;
          return out;
        }
        do {
          out.add(value(depth + 1));
        } while (comma());
        expect(']');
        return out;
      }
      if (c == '{') return tagged(depth);
      if (s.startsWith("null", pos)) {
        pos += 4;
        return null;
      }
      if (s.startsWith("true", pos)) {
        pos += 4;
        return Boolean.TRUE;
      }
      if (s.startsWith("false", pos)) {
        pos += 5;
        return Boolean.FALSE;
      }
      throw fail("unexpected character '" + c + "'");
    }

    boolean comma() {
      if (peek(',')) {
        pos++;
        return true;
      }
      return false;
    }

    Object tagged(int depth) {
      expect('{');
      String tag = string();
      expect(':');
      Object out = switch (tag) {
        case "i" -> Math.toIntExact(integer());
        case "l" -> integer();
        case "f" -> Float.parseFloat(string());
        case "d" -> parseDouble(string());
        case "t" -> {
          String name = string();
          Tensor t = tensors.apply(name);
          if (t == null) throw fail("tensor '" + name + "' is missing");
          yield t;
        }
        case "i[]", "l[]" -> {
          expect('[');
          List<Long> vals = new ArrayList<>();
          if (!peek(']')) {
            do {
              vals.add(integer());
            } while (comma());
          }
          expect(']');
          if (tag.equals("l[]")) yield vals.stream().mapToLong(Long::longValue).toArray();
          yield vals.stream().mapToInt(Math::toIntExact).toArray();
        }
        case "d[]" -> {
          expect('[');
          List<Double> vals = new ArrayList<>();
          if (!peek(']')) {
            do {
              vals.add(parseDouble(string()));
            } while (comma());
          }
          expect(']');
          yield vals.stream().mapToDouble(Double::doubleValue).toArray();
        }
        case "m" -> {
          expect('{');
          LinkedHashMap<String, Object> m = new LinkedHashMap<>();
          if (!peek('}')) {
            do {
              String k = string();
              expect(':');
              m.put(k, value(depth + 1));
            } while (comma());
          }
          expect('}');
          yield m;
        }
        default -> throw fail("unknown tag '" + tag + "'");
      };
      expect('}');
      return out;
    }

    double parseDouble(String text) {
      try {
        return Double.parseDouble(text);
      } catch (NumberFormatException e) {
        throw fail("bad number '" + text + "'");
      }
    }

    long integer() {
      skipWs();
      int start = pos;
      if (pos < s.length() && s.charAt(pos) == '-') pos++;
      while (pos < s.length() && Character.isDigit(s.charAt(pos))) pos++;
      try {
        return Long.parseLong(s.substring(start, pos));
      } catch (NumberFormatException e) {
        throw fail("bad integer");
      }
    }

    String string() {
      skipWs();
      if (pos >= s.length() || s.charAt(pos) != '"') throw fail("expected a string");
      pos++;
      StringBuilder sb = new StringBuilder();
      while (true) {
        if (pos >= s.length()) throw fail("unterminated string");
        char c = s.charAt(pos++);
        if (c == '"') return sb.toString();
        if (c != '\\') {
          sb.append(c);
          continue;
        }
        if (pos >= s.length()) throw fail("unterminated escape");
        char e = s.charAt(pos++);
        switch (e) {
          case '"', '\\', '/' -> sb.append(e);
          case 'n' -> sb.append('\n');
          case 'r' -> sb.append('\r');
          case 't' -> sb.append('\t');
          case 'u' -> {
            if (pos + 4 > s.length()) throw fail("short \\u escape");
            try {
              sb.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
            } catch (NumberFormatException ex) {
              throw fail("bad \\u escape");
            }
            pos += 4;
          }
          default -> throw fail("bad escape '\\" + e + "'");
        }
      }
    }
  }
}
