package dev.ember.nn.io;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A small strict JSON parser for safetensors headers (RFC 8259: objects, arrays, strings with
 * escapes, numbers, {@code true}, {@code false}, {@code null}). It works on the raw header bytes so
 * that every error and every value carries the byte offset where it starts. Numbers keep their
 * text: the header only needs non-negative integers, and the validator reports the exact token when
 * it gets something else. Objects keep their members in order, duplicates included, so that the
 * validator can name a duplicate tensor instead of silently keeping the last one.
 *
 * <p>Nesting is capped ({@link #MAX_DEPTH}) so that a hostile header of {@code [[[[...} cannot
 * overflow the stack; a valid header is three levels deep.
 */
final class Json {
  static final int MAX_DEPTH = 16;

  /** A parsed value; {@code pos} is the byte offset of its first byte, counted from the file start. */
  sealed interface Value permits Obj, Arr, Str, Num, Lit {
    long pos();

    /** How the value is described in errors: {@code a string}, {@code the number 2.5}, ... */
    String describe();
  }

  record Member(String key, long keyPos, Value value) {}

  record Obj(List<Member> members, long pos) implements Value {
    @Override
    public String describe() {
      return "an object";
    }
  }

  record Arr(List<Value> items, long pos) implements Value {
    @Override
    public String describe() {
      return "an array";
    }
  }

  record Str(String value, long pos) implements Value {
    @Override
    public String describe() {
      // a hostile header can hold megabyte strings: quote only the start
      return "the string \"" + (value.length() > 64 ? value.substring(0, 64) + "..." : value) + "\"";
    }
  }

  /** A number token as written; {@link #isInteger()} when it has neither fraction nor exponent. */
  record Num(String text, long pos) implements Value {
    boolean isInteger() {
      return text.indexOf('.') < 0 && text.indexOf('e') < 0 && text.indexOf('E') < 0;
    }

    @Override
    public String describe() {
      return "the number " + text;
    }
  }

  /** {@code true}, {@code false} or {@code null}. */
  record Lit(String text, long pos) implements Value {
    @Override
    public String describe() {
      return text;
    }
  }

  /** A syntax error at {@code pos} (a file byte offset). */
  static final class SyntaxError extends Exception {
    final long pos;

    SyntaxError(long pos, String message) {
      super(message, null, false, false);
      this.pos = pos;
    }
  }

  private final byte[] b;
  private final long base;
  private int i;

  private Json(byte[] bytes, long base) {
    this.b = bytes;
    this.base = base;
  }

  /**
   * Parses {@code bytes} as one JSON object followed only by whitespace (the format pads the header
   * with spaces). {@code base} is the file offset of {@code bytes[0]}, added to every position.
   */
  static Obj parseObject(byte[] bytes, long base) throws SyntaxError {
    Json p = new Json(bytes, base);
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
    if (i >= b.length) throw error("expected a value, found the end of the header");
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
      default -> {
        if (b[i] == '-' || (b[i] >= '0' && b[i] <= '9')) yield number();
        throw error("expected a value, found " + found());
      }
    };
  }

  private Obj object(int depth) throws SyntaxError {
    if (depth > MAX_DEPTH) throw error("nesting deeper than " + MAX_DEPTH + " levels");
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
    if (depth > MAX_DEPTH) throw error("nesting deeper than " + MAX_DEPTH + " levels");
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
      if (i >= b.length) throw error("unterminated string, found the end of the header");
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
    if (i >= b.length) throw error("unterminated escape sequence, found the end of the header");
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
    while (i < b.length && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) i++;
  }

  private String found() {
    if (i >= b.length) return "the end of the header";
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
