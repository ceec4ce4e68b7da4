package dev.ember.train;

import dev.ember.nn.io.Json;
import dev.ember.tensor.Tensor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;

/**
 * Checkpoint state (maps of numbers, strings, arrays, lists and tensors) as JSON that keeps every
 * Java type: an {@code int} comes back an {@code Integer}, a {@code long[]} a {@code long[]}, and a
 * double bit for bit (written with {@link Double#toString}, which round-trips, or as a tag for
 * NaN and infinities). Tensors are not written inline: {@link #write} hands each to a sink that
 * stores it elsewhere and returns a reference name, and {@link #read} resolves the names back.
 * The JSON itself is read and written by {@link Json}; this class only maps types to tags.
 *
 * <p>Encoding: {@code null}, booleans and strings as JSON; {@code {"i":1}}, {@code {"l":1}},
 * {@code {"f":"1.5"}}, {@code {"d":"1.5"}}; arrays {@code {"i[]":[..]}}, {@code {"l[]":[..]}},
 * {@code {"d[]":[".."]}}; lists as JSON arrays; maps {@code {"m":{..}}}; tensors {@code {"t":"name"}}.
 */
final class StateJson {
  /** JSON nesting accepted: a state nested 64 levels deep (a map is two JSON levels), as before. */
  private static final int MAX_DEPTH = 2 * 64 + 2;

  private StateJson() {}

  /** Thrown for text that is not what {@link #write} produces. */
  static final class FormatException extends IllegalArgumentException {
    FormatException(String message) {
      super(message);
    }
  }

  static String write(Object value, Function<Tensor, String> tensorSink) {
    return Json.write(tagged(value, tensorSink));
  }

  /** {@code v} as the plain JSON values of its tagged encoding. */
  private static Object tagged(Object v, Function<Tensor, String> sink) {
    return switch (v) {
      case null -> null;
      case Boolean b -> b;
      case String s -> s;
      case Integer i -> Map.of("i", i);
      case Long l -> Map.of("l", l);
      case Float f -> Map.of("f", Float.toString(f));
      case Double d -> Map.of("d", Double.toString(d));
      case int[] a -> Map.of("i[]", a);
      case long[] a -> Map.of("l[]", a);
      case double[] a -> {
        List<String> texts = new ArrayList<>(a.length);
        for (double d : a) texts.add(Double.toString(d));
        yield Map.of("d[]", texts);
      }
      case Tensor t -> Map.of("t", sink.apply(t));
      case List<?> list -> {
        List<Object> out = new ArrayList<>(list.size());
        for (Object item : list) out.add(tagged(item, sink));
        yield out;
      }
      case Map<?, ?> map -> {
        // a map with an order (LinkedHashMap, TreeMap) keeps it; one without (Map.of, HashMap) iterates in an
        // order that can change from one JVM to the next, so its entries are taken in key order, before their values
        // are encoded (a tensor's name comes from the order the sink sees it): the same state, the same bytes
        LinkedHashMap<String, Object> out = new LinkedHashMap<>();
        for (var e : map instanceof SequencedMap<?, ?> ? map.entrySet() : byKey(map)) {
          out.put(key(e), tagged(e.getValue(), sink));
        }
        yield Map.of("m", out);
      }
      default -> throw new IllegalArgumentException("checkpoint state: cannot store a " + v.getClass().getName()
          + " (allowed: numbers, strings, booleans, int[]/long[]/double[], lists, maps, tensors)");
    };
  }

  private static String key(Map.Entry<?, ?> e) {
    if (!(e.getKey() instanceof String k)) {
      throw new IllegalArgumentException("checkpoint state: map keys must be strings, got " + e.getKey());
    }
    return k;
  }

  /** {@code map}'s entries sorted by key (all checked to be strings first). */
  private static List<Map.Entry<?, ?>> byKey(Map<?, ?> map) {
    List<Map.Entry<?, ?>> entries = new ArrayList<>(map.entrySet());
    entries.forEach(StateJson::key);
    entries.sort(Comparator.comparing(StateJson::key));
    return entries;
  }

  static Object read(String text, Function<String, Tensor> tensors) {
    Json.Value root;
    try {
      root = Json.parse(text.getBytes(StandardCharsets.UTF_8), 0, MAX_DEPTH, Json.NonFinite.REJECT);
    } catch (Json.SyntaxError e) {
      throw new FormatException("checkpoint state: " + e.getMessage() + " at byte " + e.pos);
    }
    return value(root, tensors);
  }

  private static FormatException fail(Json.Value at, String what) {
    return new FormatException("checkpoint state: " + what + " at byte " + at.pos());
  }

  private static Object value(Json.Value v, Function<String, Tensor> tensors) {
    return switch (v) {
      case Json.Str s -> s.value();
      case Json.Lit lit -> lit.text().equals("null") ? null : Boolean.valueOf(lit.text());
      case Json.Arr a -> {
        List<Object> out = new ArrayList<>(a.items().size());
        for (Json.Value item : a.items()) out.add(value(item, tensors));
        yield out;
      }
      case Json.Obj o -> tagged(o, tensors);
      case Json.Num n -> throw fail(n, "untagged number " + n.text());
    };
  }

  private static Object tagged(Json.Obj o, Function<String, Tensor> tensors) {
    if (o.members().size() != 1) throw fail(o, "expected one tag in an object, found " + o.members().size() + " members");
    Json.Member m = o.members().get(0);
    Json.Value v = m.value();
    return switch (m.key()) {
      case "i" -> {
        long l = integer(v);
        if (l != (int) l) throw fail(v, "integer " + l + " does not fit an int");
        yield (int) l;
      }
      case "l" -> integer(v);
      case "f" -> (float) number(v, Float::parseFloat);
      case "d" -> number(v, Double::parseDouble);
      case "t" -> {
        String name = string(v);
        Tensor t = tensors.apply(name);
        if (t == null) throw fail(v, "tensor '" + name + "' is missing");
        yield t;
      }
      case "i[]" -> {
        List<Json.Value> items = array(v);
        int[] out = new int[items.size()];
        for (int k = 0; k < out.length; k++) {
          long l = integer(items.get(k));
          if (l != (int) l) throw fail(items.get(k), "integer " + l + " does not fit an int");
          out[k] = (int) l;
        }
        yield out;
      }
      case "l[]" -> {
        List<Json.Value> items = array(v);
        long[] out = new long[items.size()];
        for (int k = 0; k < out.length; k++) out[k] = integer(items.get(k));
        yield out;
      }
      case "d[]" -> {
        List<Json.Value> items = array(v);
        double[] out = new double[items.size()];
        for (int k = 0; k < out.length; k++) out[k] = number(items.get(k), Double::parseDouble);
        yield out;
      }
      case "m" -> {
        if (!(v instanceof Json.Obj map)) throw fail(v, "expected an object after \"m\", found " + v.describe());
        LinkedHashMap<String, Object> out = new LinkedHashMap<>();
        for (Json.Member e : map.members()) {
          if (out.containsKey(e.key())) throw fail(e.value(), "duplicate key \"" + e.key() + "\"");
          out.put(e.key(), value(e.value(), tensors));
        }
        yield out;
      }
      default -> throw fail(o, "unknown tag '" + m.key() + "'");
    };
  }

  private static long integer(Json.Value v) {
    if (!(v instanceof Json.Num n) || !n.isInteger()) throw fail(v, "expected an integer, found " + v.describe());
    try {
      return Long.parseLong(n.text());
    } catch (NumberFormatException e) {
      throw fail(v, "integer " + n.text() + " does not fit a long");
    }
  }

  /**
   * A float's or double's text as {@link Float#toString} or {@link Double#toString} wrote it, parsed
   * once by {@code parse} ({@link Float#parseFloat} or {@link Double#parseDouble}, which accept the
   * same texts).
   */
  private static double number(Json.Value v, ToDoubleFunction<String> parse) {
    String s = string(v);
    try {
      return parse.applyAsDouble(s);
    } catch (NumberFormatException e) {
      throw fail(v, "bad number '" + s + "'");
    }
  }

  private static String string(Json.Value v) {
    if (!(v instanceof Json.Str s)) throw fail(v, "expected a string, found " + v.describe());
    return s.value();
  }

  private static List<Json.Value> array(Json.Value v) {
    if (!(v instanceof Json.Arr a)) throw fail(v, "expected an array, found " + v.describe());
    return a.items();
  }
}
