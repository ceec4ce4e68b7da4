package dev.ember.metrics;

import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Reads and checks a {@link Metric#loadStateDict} argument: the key set must be exactly the
 * expected one, and each getter checks the type and, for arrays, the length of one value. Errors
 * read {@code <Type>.loadStateDict: <problem>: metric=<name>}. Getters copy arrays, so that the
 * metric never aliases the caller's state.
 */
final class StateReader {
  private final String op;
  private final String subject;
  private final Map<String, Object> state;

  /** Checks that {@code state} holds exactly {@code keys}. */
  StateReader(Metric<?> m, Map<String, Object> state, String... keys) {
    this(m.getClass().getSimpleName() + ".loadStateDict", "metric=" + m.name(), state, keys);
  }

  /** As above, errors ending in {@code ": " + subject} ({@code metric=accuracy}). */
  StateReader(String op, String subject, Map<String, Object> state, String... keys) {
    this.op = op;
    this.subject = subject;
    this.state = state;
    if (state == null) throw fail("state must not be null");
    List<String> expected = List.of(keys);
    for (String k : keys) {
      if (!state.containsKey(k)) {
        throw fail("key '" + k + "' is missing (expected " + expected + ", got " + new TreeSet<>(state.keySet()) + ")");
      }
    }
    for (String k : state.keySet()) {
      if (!expected.contains(k)) throw fail("unexpected key '" + k + "' (expected " + expected + ")");
    }
  }

  IllegalArgumentException fail(String problem) {
    return new IllegalArgumentException(op + ": " + problem + ": " + subject);
  }

  private IllegalArgumentException wrongType(String key, String expected) {
    Object v = state.get(key);
    String got = v == null ? "null"
        : v instanceof Number || v instanceof Boolean ? v.getClass().getSimpleName() + " " + v
        : v.getClass().getSimpleName();
    return fail("'" + key + "' must be " + expected + " (got " + got + ")");
  }

  /** A Long (an Integer is widened) that is at least 0. */
  long count(String key) {
    long v = switch (state.get(key)) {
      case Long l -> l;
      case Integer i -> i;
      case null, default -> throw wrongType(key, "a Long");
    };
    if (v < 0) throw fail("'" + key + "' must be >= 0 (got " + v + ")");
    return v;
  }

  /** A Double, bit for bit. */
  double real(String key) {
    if (!(state.get(key) instanceof Double d)) throw wrongType(key, "a Double");
    return d;
  }

  /** A copy of a double[]; {@code length < 0} accepts any length. */
  double[] doubles(String key, int length, String why) {
    if (!(state.get(key) instanceof double[] a)) throw wrongType(key, "a double[]");
    requireLength(key, a.length, length, why);
    return a.clone();
  }

  /** A copy of a long[]; {@code length < 0} accepts any length. */
  long[] longs(String key, int length, String why) {
    if (!(state.get(key) instanceof long[] a)) throw wrongType(key, "a long[]");
    requireLength(key, a.length, length, why);
    return a.clone();
  }

  private void requireLength(String key, int actual, int expected, String why) {
    if (expected >= 0 && actual != expected) {
      throw fail("'" + key + "' has the wrong size (" + actual + " vs " + expected + " " + why + ")");
    }
  }

  /** The map under {@code key}, whose keys must all be Strings. */
  @SuppressWarnings("unchecked")
  Map<String, Object> map(String key) {
    if (!(state.get(key) instanceof Map<?, ?> m)) throw wrongType(key, "a Map");
    for (Object k : m.keySet()) {
      if (!(k instanceof String)) throw fail("'" + key + "' must have String keys (got " + k + ")");
    }
    return (Map<String, Object>) m;
  }

  /** Fails unless every element of {@code a} is at least 0. */
  void requireNonNegative(String key, long[] a) {
    for (int i = 0; i < a.length; i++) {
      if (a[i] < 0) throw fail("'" + key + "' must hold counts >= 0 (got " + a[i] + " at index " + i + ")");
    }
  }
}
