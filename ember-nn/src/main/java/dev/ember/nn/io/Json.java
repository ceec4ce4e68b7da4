package dev.ember.nn.io;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Ember's one JSON reader and writer (RFC 8259), used by safetensors headers, checkpoints, the
 * run-folder reports and the benchmark results.
 *
 * <p><b>Reading</b> is strict and works on bytes, so that every error ({@link SyntaxError}) and
 * every value ({@link Value#pos()}) carries the byte offset where it is, counted from the start of
 * the file the bytes came from; strings must be valid UTF-8; nesting is capped (a hostile
 * {@code [[[[...} cannot overflow the stack). {@link #parse} gives a tree of {@link Value}s that
 * keeps number tokens as written and object members in order, duplicates included (the safetensors
 * validator names a duplicate tensor); {@link #parsePlain} gives plain Java values and rejects
 * duplicate names. JSON has no NaN or infinity: they are refused unless {@link
 * NonFinite#LITERALS} asks to accept Python's {@code NaN}, {@code Infinity} and {@code -Infinity}.
 *
 * <p><b>Writing</b> ({@link #write}) is compact: no whitespace, members in map order, strings with
 * the escapes RFC 8259 requires (backslash escapes for quote, backslash, newline, carriage return
 * and tab; a four-hex-digit escape for other control characters) and nothing else escaped.
 * Doubles are written in the shortest form that reads back to the same value, integral ones below
 * 1e15 without a fraction. A non-finite double is refused unless {@link NonFinite#NULL} asks for
 * {@code null}. The checkpoint format keeps NaN and infinities (and every double bit for bit) by
 * storing doubles as strings: see ember-train's checkpoint state.
 */
public final class Json {
  /** The default nesting cap of {@link #parse} and {@link #parsePlain}. */
  public static final int MAX_DEPTH = 64;

  /** The nesting cap of a safetensors header (a valid one is three levels deep). */
  static final int HEADER_MAX_DEPTH = 16;

  /** What to do with NaN and the infinities, which JSON cannot express. */
  public enum NonFinite {
    /** Refuse them: a reader reports a syntax error, a writer throws. */
    REJECT,
    /** Read Python's {@code NaN}, {@code Infinity} and {@code -Infinity} tokens as numbers. */
    LITERALS,
    /** Write them as {@code null} (the run-folder files' convention). */
    NULL
  }

  /** A parsed value; {@code pos} is the byte offset of its first byte, counted from the file start. */
  public sealed interface Value permits Obj, Arr, Str, Num, Lit {
    /** The byte offset of the value's first byte. */
    long pos();

    /** How the value is described in errors: {@code a string}, {@code the number 2.5}, ... */
    String describe();
  }

  /** An object member: its name, the byte offset of the name's opening quote, and its value. */
  public record Member(String key, long keyPos, Value value) {}

  /** An object, its members in order (duplicates kept). */
  public record Obj(List<Member> members, long pos) implements Value {
    @Override
    public String describe() {
      return "an object";
    }
  }

  /** An array. */
  public record Arr(List<Value> items, long pos) implements Value {
    @Override
    public String describe() {
      return "an array";
    }
  }

  /** A string, unescaped. */
  public record Str(String value, long pos) implements Value {
    @Override
    public String describe() {
      // a hostile header can hold megabyte strings: quote only the start
      return "the string \"" + (value.length() > 64 ? value.substring(0, 64) + "..." : value) + "\"";
    }
  }

  /**
   * A number token as written ({@code NaN}, {@code Infinity} or {@code -Infinity} only when read
   * with {@link NonFinite#LITERALS}).
   */
  public record Num(String text, long pos) implements Value {
    /** Whether the token is an integer: no fraction, no exponent, not a non-finite literal. */
    public boolean isInteger() {
      return text.indexOf('.') < 0 && text.indexOf('e') < 0 && text.indexOf('E') < 0 && !isNonFinite();
    }

    /** Whether the token is {@code NaN}, {@code Infinity} or {@code -Infinity}. */
    public boolean isNonFinite() {
      return text.endsWith("NaN") || text.endsWith("Infinity");
    }

    /** The token's double value (correctly rounded). */
    public double doubleValue() {
      return Double.parseDouble(text);
    }

    @Override
    public String describe() {
      return "the number " + text;
    }
  }

  /** {@code true}, {@code false} or {@code null}. */
  public record Lit(String text, long pos) implements Value {
    @Override
    public String describe() {
      return text;
    }
  }

  /** A syntax error at a byte offset of the file ({@link #pos}); the message does not repeat it. */
  public static final class SyntaxError extends Exception {
    /** The byte offset of the error, counted from the start of the file. */
    public final long pos;

    SyntaxError(long pos, String message) {
      super(message, null, false, false);
      this.pos = pos;
    }
  }

  /**
   * Parses {@code bytes} as one JSON value surrounded only by whitespace. {@code base} is the file
   * offset of {@code bytes[0]}, added to every position.
   *
   * @param maxDepth the deepest nesting of objects and arrays accepted
   * @param nonFinite {@link NonFinite#LITERALS} to accept Python's non-finite tokens, otherwise refused
   * @throws SyntaxError at the offending byte
   */
  public static Value parse(byte[] bytes, long base, int maxDepth, NonFinite nonFinite) throws SyntaxError {
    Json p = new Json(bytes, base, "the text", maxDepth, nonFinite == NonFinite.LITERALS);
    Value v = p.value(0);
    p.skipSpace();
    if (p.i < bytes.length) throw p.error("unexpected " + p.found() + " after the JSON value");
    return v;
  }

  /**
   * Parses {@code bytes} into plain Java values: {@link LinkedHashMap} (members in order; a
   * duplicate name is an error), {@link ArrayList}, {@link String}, {@link Boolean}, {@code null},
   * and {@link Long} for integers of at most 18 characters, {@link Double} for other numbers.
   * Parameters as for {@link #parse}.
   *
   * @param bytes the UTF-8 text
   * @param base the file offset of {@code bytes[0]}
   * @param maxDepth the deepest nesting accepted
   * @param nonFinite {@link NonFinite#LITERALS} to accept Python's non-finite tokens
   * @return the value
   * @throws SyntaxError at the offending byte
   */
  public static Object parsePlain(byte[] bytes, long base, int maxDepth, NonFinite nonFinite) throws SyntaxError {
    return plain(parse(bytes, base, maxDepth, nonFinite));
  }

  /** {@link #parsePlain} of a string's UTF-8 bytes, positions counted from its first byte, default depth cap. */
  public static Object parsePlain(String text, NonFinite nonFinite) throws SyntaxError {
    return parsePlain(text.getBytes(StandardCharsets.UTF_8), 0, MAX_DEPTH, nonFinite);
  }

  /**
   * {@code value} as plain Java values (see {@link #parsePlain}).
   *
   * @throws SyntaxError at the second member of an object with a duplicate name
   */
  public static Object plain(Value value) throws SyntaxError {
    switch (value) {
      case Obj o -> {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        for (Member member : o.members()) {
          if (m.containsKey(member.key())) {
            throw new SyntaxError(member.keyPos(), "duplicate member name \"" + member.key() + "\"");
          }
          m.put(member.key(), plain(member.value()));
        }
        return m;
      }
      case Arr a -> {
        ArrayList<Object> list = new ArrayList<>(a.items().size());
        for (Value item : a.items()) list.add(plain(item));
        return list;
      }
      case Str str -> {
        return str.value();
      }
      case Num n -> {
        return n.isInteger() && n.text().length() <= 18 ? (Object) Long.parseLong(n.text()) : n.doubleValue();
      }
      case Lit lit -> {
        return lit.text().equals("null") ? null : Boolean.valueOf(lit.text());
      }
    }
  }

  /** Writes {@code value} as compact JSON; a non-finite double throws. See {@link #write(StringBuilder, Object, NonFinite)}. */
  public static String write(Object value) {
    return write(value, NonFinite.REJECT);
  }

  /** Writes {@code value} as compact JSON, non-finite doubles as {@code nonFinite} says. */
  public static String write(Object value, NonFinite nonFinite) {
    StringBuilder sb = new StringBuilder();
    write(sb, value, nonFinite);
    return sb.toString();
  }

  /**
   * Appends {@code value} as compact JSON: {@code null}, {@link Boolean}, {@link String}, any
   * {@link Number} (a {@link Double} or {@link Float} as {@link #number}, others as their
   * {@code long} value), {@code double[]}, {@code long[]}, {@code int[]}, {@link List} and {@link
   * Map} (keys written as {@link String#valueOf}).
   *
   * @param nonFinite {@link NonFinite#NULL} writes NaN and infinities as {@code null}; otherwise they throw
   * @throws IllegalArgumentException for another type, or a non-finite double not allowed
   */
  public static void write(StringBuilder sb, Object value, NonFinite nonFinite) {
    switch (value) {
      case null -> sb.append("null");
      case Boolean b -> sb.append(b);
      case String str -> string(sb, str);
      case Double d -> number(sb, d, nonFinite);
      case Float f -> number(sb, f.doubleValue(), nonFinite);
      case Number n -> sb.append(n.longValue());
      case double[] a -> {
        sb.append('[');
        for (int k = 0; k < a.length; k++) {
          if (k > 0) sb.append(',');
          number(sb, a[k], nonFinite);
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
          write(sb, list.get(k), nonFinite);
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
          write(sb, e.getValue(), nonFinite);
        }
        sb.append('}');
      }
      default -> throw new IllegalArgumentException("Json.write: cannot write a " + value.getClass().getName()
          + "; expected null, a boolean, number, string, primitive array, list or map");
    }
  }

  /**
   * Appends a double in the shortest form that reads back to the same value ({@link
   * Double#toString}), or as an integer when it is integral, below 1e15 in magnitude and not -0.0.
   *
   * @param nonFinite {@link NonFinite#NULL} writes NaN and infinities as {@code null}; otherwise they throw
   * @throws IllegalArgumentException for a non-finite {@code d} not allowed
   */
  public static void number(StringBuilder sb, double d, NonFinite nonFinite) {
    if (!Double.isFinite(d)) {
      if (nonFinite != NonFinite.NULL) {
        throw new IllegalArgumentException("Json.write: " + d + " has no JSON form (pass NonFinite.NULL to write it as null)");
      }
      sb.append("null");
    } else if (d == Math.rint(d) && Math.abs(d) < 1e15 && !(d == 0 && 1 / d < 0)) {
      sb.append((long) d);
    } else {
      sb.append(Double.toString(d));
    }
  }

  /** Appends a JSON string literal with the escapes RFC 8259 requires, and no others. */
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

  private final byte[] b;
  private final long base;
  private final String source;
  private final int maxDepth;
  private final boolean nonFiniteLiterals;
  private int i;

  private Json(byte[] bytes, long base, String source, int maxDepth, boolean nonFiniteLiterals) {
    this.b = bytes;
    this.base = base;
    this.source = source;
    this.maxDepth = maxDepth;
    this.nonFiniteLiterals = nonFiniteLiterals;
  }

  /**
   * Parses a safetensors header: one JSON object followed only by whitespace (the format pads the
   * header with spaces), nested at most {@link #HEADER_MAX_DEPTH} levels. {@code base} is the file
   * offset of {@code bytes[0]}, added to every position.
   */
  static Obj parseObject(byte[] bytes, long base) throws SyntaxError {
    Json p = new Json(bytes, base, "the header", HEADER_MAX_DEPTH, false);
    if (bytes.length == 0) throw p.error("the header is empty; expected a JSON object");
    if (bytes[0] != '{') {
      throw p.error("the header must start with '{' (a JSON object), found " + p.found());
    }
    Obj root = (Obj) p.value(0);
    p.skipSpace();
    if (p.i < bytes.length) throw p.error("unexpected " + p.found() + " after the header object");
    return root;
  }

  /**
   * The outline of a header, found without building anything: how many members its root object
   * has, and where the value of its {@code "__metadata__"} member starts and how many bytes it
   * spans (-1 and 0 without one). It lets a reader refuse a header whose parse would not fit
   * before parsing it. On malformed input it stops and returns what it has counted so far: the
   * parse that follows reports the error.
   */
  record Outline(int members, long metadataPos, long metadataBytes) {}

  static Outline outline(byte[] b, long base) {
    int members = 0;
    long metadataPos = -1;
    long metadataBytes = 0;
    int i = skipSpace(b, 0);
    if (i < b.length && b[i] == '{') {
      i = skipSpace(b, i + 1);
      while (i < b.length && b[i] == '"') {
        int keyStart = i;
        i = skipString(b, i);
        if (i < 0) break;
        boolean metadata = isMetadataKey(b, keyStart, i);
        i = skipSpace(b, i);
        if (i >= b.length || b[i] != ':') break;
        i = skipSpace(b, i + 1);
        int valueStart = i;
        i = skipValue(b, i);
        if (i < 0) break;
        members++;
        if (metadata) {
          metadataPos = base + valueStart;
          metadataBytes += i - valueStart;
        }
        i = skipSpace(b, i);
        if (i >= b.length || b[i] != ',') break;
        i = skipSpace(b, i + 1);
      }
    }
    return new Outline(members, metadataPos, metadataBytes);
  }

  private static final byte[] METADATA_KEY = "\"__metadata__\"".getBytes(StandardCharsets.US_ASCII);

  private static boolean isMetadataKey(byte[] b, int from, int to) {
    return to - from == METADATA_KEY.length && java.util.Arrays.equals(b, from, to, METADATA_KEY, 0, to - from);
  }

  private static int skipSpace(byte[] b, int i) {
    while (i < b.length && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) i++;
    return i;
  }

  /** The index after the string starting at {@code b[i] == '"'}, or -1 if it does not end. */
  private static int skipString(byte[] b, int i) {
    for (i++; i < b.length; i++) {
      if (b[i] == '\\') {
        i++;
      } else if (b[i] == '"') {
        return i + 1;
      }
    }
    return -1;
  }

  /** The index after the value starting at {@code b[i]} (brackets matched, strings skipped), or -1. */
  private static int skipValue(byte[] b, int i) {
    if (i >= b.length) return -1;
    if (b[i] == '"') return skipString(b, i);
    if (b[i] != '{' && b[i] != '[') {
      while (i < b.length && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n'
          && b[i] != '\t' && b[i] != '\r') {
        i++;
      }
      return i;
    }
    int depth = 0;
    while (i < b.length) {
      byte c = b[i];
      if (c == '"') {
        i = skipString(b, i);
        if (i < 0) return -1;
        continue;
      }
      if (c == '{' || c == '[') {
        depth++;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return i + 1;
      }
      i++;
    }
    return -1;
  }

  private Value value(int depth) throws SyntaxError {
    skipSpace();
    if (i >= b.length) throw error("expected a value, found the end of " + source);
    return switch (b[i]) {
      case '{' -> object(depth + 1);
      case '[' -> array(depth + 1);
      case '"' -> {
        long pos = base + i;
        yield new Str(string(), pos);
      }
      case 't' -> literal("true");
      case 'f' -> literal("false");
      case 'n' -> literal("null");
      case 'N' -> nonFinite("NaN");
      case 'I' -> nonFinite("Infinity");
      default -> {
        if (b[i] == '-' && i + 1 < b.length && b[i + 1] == 'I') yield nonFinite("-Infinity");
        if (b[i] == '-' || (b[i] >= '0' && b[i] <= '9')) yield number();
        throw error("expected a value, found " + found());
      }
    };
  }

  private Obj object(int depth) throws SyntaxError {
    if (depth > maxDepth) throw error("nesting deeper than " + maxDepth + " levels");
    long pos = base + i;
    i++; // '{'
    List<Member> members = new ArrayList<>();
    skipSpace();
    if (i < b.length && b[i] == '}') {
      i++;
      return new Obj(members, pos);
    }
    while (true) {
      skipSpace();
      if (i >= b.length || b[i] != '"') throw error("expected a '\"' to start a member name, found " + found());
      long keyPos = base + i;
      String key = string();
      skipSpace();
      if (i >= b.length || b[i] != ':') throw error("expected ':' after member name \"" + key + "\", found " + found());
      i++;
      members.add(new Member(key, keyPos, value(depth)));
      skipSpace();
      if (i < b.length && b[i] == ',') {
        i++;
        continue;
      }
      if (i < b.length && b[i] == '}') {
        i++;
        return new Obj(members, pos);
      }
      throw error("expected ',' or '}' after a member, found " + found());
    }
  }

  private Arr array(int depth) throws SyntaxError {
    if (depth > maxDepth) throw error("nesting deeper than " + maxDepth + " levels");
    long pos = base + i;
    i++; // '['
    List<Value> items = new ArrayList<>();
    skipSpace();
    if (i < b.length && b[i] == ']') {
      i++;
      return new Arr(items, pos);
    }
    while (true) {
      items.add(value(depth));
      skipSpace();
      if (i < b.length && b[i] == ',') {
        i++;
        continue;
      }
      if (i < b.length && b[i] == ']') {
        i++;
        return new Arr(items, pos);
      }
      throw error("expected ',' or ']' after an array element, found " + found());
    }
  }

  private Lit literal(String word) throws SyntaxError {
    long pos = base + i;
    for (int k = 0; k < word.length(); k++) {
      if (i + k >= b.length || b[i + k] != word.charAt(k)) throw error("expected a value, found " + found());
    }
    i += word.length();
    return new Lit(word, pos);
  }

  /** Python's {@code NaN}, {@code Infinity} or {@code -Infinity}, when they are accepted. */
  private Num nonFinite(String word) throws SyntaxError {
    if (!nonFiniteLiterals) throw error("expected a value, found " + found());
    long pos = base + i;
    for (int k = 0; k < word.length(); k++) {
      if (i + k >= b.length || b[i + k] != word.charAt(k)) throw error("expected a value, found " + found());
    }
    i += word.length();
    return new Num(word, pos);
  }

  /** RFC 8259 number grammar: {@code -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?}. */
  private Num number() throws SyntaxError {
    int start = i;
    if (b[i] == '-') i++;
    if (i < b.length && b[i] == '0') {
      i++;
      if (i < b.length && isDigit(b[i])) throw error("leading zeros are not allowed in a number");
    } else if (!digits()) {
      throw error("expected a digit, found " + found());
    }
    if (i < b.length && b[i] == '.') {
      i++;
      if (!digits()) throw error("expected a digit after the decimal point, found " + found());
    }
    if (i < b.length && (b[i] == 'e' || b[i] == 'E')) {
      i++;
      if (i < b.length && (b[i] == '+' || b[i] == '-')) i++;
      if (!digits()) throw error("expected a digit in the exponent, found " + found());
    }
    return new Num(new String(b, start, i - start, StandardCharsets.US_ASCII), base + start);
  }

  private boolean digits() {
    int start = i;
    while (i < b.length && isDigit(b[i])) i++;
    return i > start;
  }

  private static boolean isDigit(byte c) {
    return c >= '0' && c <= '9';
  }

  /** Parses a string starting at the opening quote; raw bytes are checked to be UTF-8. */
  private String string() throws SyntaxError {
    i++; // opening quote
    StringBuilder sb = new StringBuilder();
    int runStart = i;
    while (true) {
      if (i >= b.length) throw error("unterminated string, found the end of " + source);
      byte c = b[i];
      if (c == '"') {
        appendUtf8(sb, runStart, i);
        i++;
        return sb.toString();
      }
      if (c == '\\') {
        appendUtf8(sb, runStart, i);
        escape(sb);
        runStart = i;
      } else if ((c & 0xff) < 0x20) {
        throw error(String.format("control character 0x%02x must be escaped inside a string", c & 0xff));
      } else {
        i++;
      }
    }
  }

  private void escape(StringBuilder sb) throws SyntaxError {
    int start = i;
    i++; // backslash
    if (i >= b.length) throw error("unterminated escape sequence, found the end of " + source);
    char c = (char) b[i++];
    switch (c) {
      case '"', '\\', '/' -> sb.append(c);
      case 'b' -> sb.append('\b');
      case 'f' -> sb.append('\f');
      case 'n' -> sb.append('\n');
      case 'r' -> sb.append('\r');
      case 't' -> sb.append('\t');
      case 'u' -> {
        char u = hex4(start);
        if (Character.isHighSurrogate(u)) {
          if (i + 1 < b.length && b[i] == '\\' && b[i + 1] == 'u') {
            int lowStart = i;
            i += 2;
            char low = hex4(lowStart);
            if (!Character.isLowSurrogate(low)) {
              i = lowStart;
              throw error("\\u escape " + hexOf(u) + " (a high surrogate) is not followed by a low surrogate");
            }
            sb.append(u).append(low);
          } else {
            i = start;
            throw error("\\u escape " + hexOf(u) + " is a lone high surrogate");
          }
        } else if (Character.isLowSurrogate(u)) {
          i = start;
          throw error("\\u escape " + hexOf(u) + " is a lone low surrogate");
        } else {
          sb.append(u);
        }
      }
      default -> {
        i = start;
        throw error("invalid escape sequence '\\" + printable(c) + "'");
      }
    }
  }

  /** Reads the 4 hex digits of a {@code \\u} escape; {@code i} points at the first digit. */
  private char hex4(int escapeStart) throws SyntaxError {
    int v = 0;
    for (int k = 0; k < 4; k++) {
      int d = i < b.length ? Character.digit(b[i], 16) : -1;
      if (d < 0) {
        i = escapeStart;
        throw error("\\u must be followed by 4 hex digits");
      }
      v = v * 16 + d;
      i++;
    }
    return (char) v;
  }

  private static String hexOf(char c) {
    return String.format("\\u%04x", (int) c);
  }

  /**
   * Appends the raw bytes {@code [from, to)} decoded as UTF-8, rejecting what a strict decoder
   * rejects (bad lead or continuation bytes, overlong forms, surrogates, code points past U+10FFFF)
   * at the offset of the sequence's first byte.
   */
  private void appendUtf8(StringBuilder sb, int from, int to) throws SyntaxError {
    int k = from;
    while (k < to) {
      int c = b[k] & 0xff;
      if (c < 0x80) {
        sb.append((char) c);
        k++;
        continue;
      }
      int n;
      int cp;
      int min;
      if (c >= 0xc2 && c <= 0xdf) {
        n = 1;
        cp = c & 0x1f;
        min = 0x80;
      } else if (c >= 0xe0 && c <= 0xef) {
        n = 2;
        cp = c & 0x0f;
        min = 0x800;
      } else if (c >= 0xf0 && c <= 0xf4) {
        n = 3;
        cp = c & 0x07;
        min = 0x10000;
      } else {
        throw invalidUtf8(k);
      }
      for (int m = 1; m <= n; m++) {
        if (k + m >= to || (b[k + m] & 0xc0) != 0x80) throw invalidUtf8(k);
        cp = (cp << 6) | (b[k + m] & 0x3f);
      }
      if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) throw invalidUtf8(k);
      sb.appendCodePoint(cp);
      k += n + 1;
    }
  }

  private SyntaxError invalidUtf8(int at) {
    i = at;
    return error(String.format("invalid UTF-8 sequence starting with byte 0x%02x in a string", b[at] & 0xff));
  }

  private void skipSpace() {
    i = skipSpace(b, i);
  }

  private String found() {
    if (i >= b.length) return "the end of " + source;
    int c = b[i] & 0xff;
    return c >= 0x20 && c < 0x7f ? "'" + (char) c + "'" : String.format("byte 0x%02x", c);
  }

  private static String printable(char c) {
    return c >= 0x20 && c < 0x7f ? String.valueOf(c) : String.format("\\x%02x", (int) c & 0xff);
  }

  private SyntaxError error(String message) {
    return new SyntaxError(base + i, message);
  }
}
