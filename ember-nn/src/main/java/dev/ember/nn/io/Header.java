package dev.ember.nn.io;

import dev.ember.nn.io.SafeTensorsException.Reason;
import dev.ember.tensor.DType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The safetensors header: validation of a parsed header against the data section, and encoding
 * of a header the way the reference library (Hugging Face's safetensors, Rust crate) writes it.
 */
final class Header {
  private Header() {}

  /** The largest dimension (and element count) one Ember tensor can have: {@code Storage.allocate}'s limit. */
  static final long MAX_ELEMENTS = Integer.MAX_VALUE - 64;

  /** Every dtype name the safetensors format defines, to tell "unsupported" from "unknown". */
  private static final Set<String> FORMAT_DTYPES = Set.of("BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8",
      "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64");

  private static final String SUPPORTED = "F32, F64, BF16, F16, I64, I32, I8, BOOL";

  /** One tensor of the header; {@code pos} is the file offset of its name. */
  record Entry(String name, DType dtype, int[] shape, long begin, long end, long pos) {
    long numel() {
      long n = 1;
      for (int d : shape) n *= d;
      return n;
    }
  }

  /** A validated header: tensors in data order, and the metadata (empty when absent). */
  record Parsed(List<Entry> entries, Map<String, String> metadata) {}

  /** The safetensors name of an Ember dtype (they coincide). */
  static String formatName(DType dtype) {
    return switch (dtype) {
      case F32 -> "F32";
      case F64 -> "F64";
      case I64 -> "I64";
      case I32 -> "I32";
      case BOOL -> "BOOL";
      case I8 -> "I8";
      case BF16 -> "BF16";
      case F16 -> "F16";
    };
  }

  /**
   * Position of a dtype in the reference library's {@code Dtype} enum, which is declared in
   * increasing alignment ({@code BOOL < U8 < I8 < ... < F16 < BF16 < I32 < U32 < F32 < F64 < I64 < U64}). Its writer sorts
   * tensors by this rank, largest first, then by name, so that every tensor's data stays aligned.
   */
  static int formatRank(DType dtype) {
    return switch (dtype) {
      case BOOL -> 0;
      case I8 -> 1;
      case F16 -> 2;
      case BF16 -> 3;
      case I32 -> 4;
      case F32 -> 5;
      case F64 -> 6;
      case I64 -> 7;
    };
  }

  /** The writer's order: descending dtype rank, then names compared as UTF-8 bytes (Rust's {@code String} order). */
  static final Comparator<Map.Entry<String, DType>> WRITE_ORDER =
      Comparator.<Map.Entry<String, DType>>comparingInt(e -> -formatRank(e.getValue()))
          .thenComparing(Map.Entry::getKey, Header::compareCodePoints);

  /** Code-point order, which equals the byte order of the UTF-8 encodings. */
  static int compareCodePoints(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) return Integer.compare(ca, cb);
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }

  // ------------------------------------------------------------------ validation

  /**
   * Checks the whole header before any tensor is allocated: field types, dtypes, shapes, offsets
   * against dtype x shape, offsets tiling {@code [0, dataLength)} exactly, unique names, metadata.
   */
  static Parsed validate(Path file, Json.Obj root, long dataStart, long dataLength) throws SafeTensorsException {
    List<Entry> entries = new ArrayList<>();
    Map<String, String> metadata = null;
    Map<String, Long> seen = new HashMap<>();
    for (Json.Member m : root.members()) {
      if (m.key().equals("__metadata__")) {
        if (metadata != null) throw invalid(file, m.keyPos(), null, "duplicate \"__metadata__\"");
        metadata = metadata(file, m.value());
        continue;
      }
      Long first = seen.putIfAbsent(m.key(), m.keyPos());
      if (first != null) {
        throw invalid(file, m.keyPos(), m.key(), "duplicate tensor name (first defined at byte " + first + ")");
      }
      entries.add(entry(file, m, dataLength));
    }
    entries.sort(Comparator.comparingLong(Entry::begin).thenComparingLong(Entry::end));
    checkTiling(file, entries, dataStart, dataLength);
    return new Parsed(List.copyOf(entries), metadata == null ? Map.of() : metadata);
  }

  private static Map<String, String> metadata(Path file, Json.Value v) throws SafeTensorsException {
    if (!(v instanceof Json.Obj obj)) {
      throw invalid(file, v.pos(), null, "\"__metadata__\" must be an object mapping strings to strings, found "
          + v.describe());
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (Json.Member m : obj.members()) {
      if (!(m.value() instanceof Json.Str s)) {
        throw invalid(file, m.value().pos(), null, "\"__metadata__\" must map strings to strings, but \"" + m.key()
            + "\" maps to " + m.value().describe());
      }
      if (out.putIfAbsent(m.key(), s.value()) != null) {
        throw invalid(file, m.keyPos(), null, "duplicate key \"" + m.key() + "\" in \"__metadata__\"");
      }
    }
    return out;
  }

  private static Entry entry(Path file, Json.Member m, long dataLength) throws SafeTensorsException {
    String name = m.key();
    if (!(m.value() instanceof Json.Obj obj)) {
      throw invalid(file, m.value().pos(), name, "expected an object with dtype, shape and data_offsets, found "
          + m.value().describe());
    }
    Json.Value dtypeV = null;
    Json.Value shapeV = null;
    Json.Value offsetsV = null;
    for (Json.Member f : obj.members()) {
      Json.Value previous = switch (f.key()) {
        case "dtype" -> { Json.Value p = dtypeV; dtypeV = f.value(); yield p; }
        case "shape" -> { Json.Value p = shapeV; shapeV = f.value(); yield p; }
        case "data_offsets" -> { Json.Value p = offsetsV; offsetsV = f.value(); yield p; }
        default -> throw invalid(file, f.keyPos(), name,
            "unknown field \"" + f.key() + "\" (expected dtype, shape, data_offsets)");
      };
      if (previous != null) throw invalid(file, f.keyPos(), name, "duplicate field \"" + f.key() + "\"");
    }
    for (String field : List.of("dtype", "shape", "data_offsets")) {
      Json.Value v = field.equals("dtype") ? dtypeV : field.equals("shape") ? shapeV : offsetsV;
      if (v == null) throw invalid(file, obj.pos(), name, "missing field \"" + field + "\"");
    }
    DType dtype = dtype(file, name, dtypeV);
    int[] shape = shape(file, name, shapeV);
    long[] offsets = offsets(file, name, offsetsV);
    long begin = offsets[0];
    long end = offsets[1];
    String where = "data_offsets [" + begin + ", " + end + "]";
    if (end < begin) {
      throw new SafeTensorsException(file, Reason.INVALID_OFFSETS, offsetsV.pos(), name, where + " end before they begin");
    }
    long numel = 1;
    long nbytes;
    try {
      for (int d : shape) numel = Math.multiplyExact(numel, d);
      nbytes = Math.multiplyExact(numel, dtype.itemSize());
    } catch (ArithmeticException e) {
      throw new SafeTensorsException(file, Reason.INVALID_OFFSETS, shapeV.pos(), name,
          "the byte size of " + formatName(dtype) + " " + Arrays.toString(shape) + " overflows 64 bits");
    }
    if (end - begin != nbytes) {
      throw new SafeTensorsException(file, Reason.INVALID_OFFSETS, offsetsV.pos(), name,
          where + " hold " + (end - begin) + " bytes but " + formatName(dtype) + " " + Arrays.toString(shape)
              + " needs " + nbytes);
    }
    if (numel > MAX_ELEMENTS) {
      throw new SafeTensorsException(file, Reason.TOO_LARGE_FOR_EMBER, shapeV.pos(), name,
          formatName(dtype) + " " + Arrays.toString(shape) + " has " + numel
              + " elements; an Ember tensor holds at most " + MAX_ELEMENTS);
    }
    if (end > dataLength) {
      throw new SafeTensorsException(file, Reason.INVALID_OFFSETS, offsetsV.pos(), name,
          where + " run past the end of the data section (" + dataLength + " bytes)");
    }
    return new Entry(name, dtype, shape, begin, end, m.keyPos());
  }

  private static DType dtype(Path file, String name, Json.Value v) throws SafeTensorsException {
    if (!(v instanceof Json.Str s)) throw invalid(file, v.pos(), name, "dtype must be a string, found " + v.describe());
    return switch (s.value()) {
      case "F32" -> DType.F32;
      case "F64" -> DType.F64;
      case "I64" -> DType.I64;
      case "I32" -> DType.I32;
      case "BOOL" -> DType.BOOL;
      case "I8" -> DType.I8;
      case "BF16" -> DType.BF16;
      case "F16" -> DType.F16;
      default -> {
        if (FORMAT_DTYPES.contains(s.value())) {
          throw new SafeTensorsException(file, Reason.UNSUPPORTED_DTYPE, v.pos(), name,
              "dtype " + s.value() + " is not supported (Ember reads " + SUPPORTED + ")");
        }
        throw invalid(file, v.pos(), name, "unknown dtype \"" + s.value() + "\" (safetensors dtypes are "
            + String.join(", ", FORMAT_DTYPES.stream().sorted().toList()) + ")");
      }
    };
  }

  private static int[] shape(Path file, String name, Json.Value v) throws SafeTensorsException {
    if (!(v instanceof Json.Arr arr)) {
      throw invalid(file, v.pos(), name, "shape must be an array of non-negative integers, found " + v.describe());
    }
    int[] shape = new int[arr.items().size()];
    for (int k = 0; k < shape.length; k++) {
      long d = nonNegative(file, name, "shape[" + k + "]", arr.items().get(k));
      if (d > MAX_ELEMENTS) {
        throw new SafeTensorsException(file, Reason.TOO_LARGE_FOR_EMBER, arr.items().get(k).pos(), name,
            "shape[" + k + "] = " + d + " exceeds Ember's limit of " + MAX_ELEMENTS + " per dimension");
      }
      shape[k] = (int) d;
    }
    return shape;
  }

  private static long[] offsets(Path file, String name, Json.Value v) throws SafeTensorsException {
    if (!(v instanceof Json.Arr arr) || arr.items().size() != 2) {
      String found = v instanceof Json.Arr a ? "an array of " + a.items().size() + " elements" : v.describe();
      throw invalid(file, v.pos(), name, "data_offsets must be an array of 2 non-negative integers, found " + found);
    }
    return new long[] {
      nonNegative(file, name, "data_offsets[0]", arr.items().get(0)),
      nonNegative(file, name, "data_offsets[1]", arr.items().get(1))
    };
  }

  /** A non-negative integer that fits in a {@code long} (the format's {@code usize}, on 64-bit machines). */
  private static long nonNegative(Path file, String name, String what, Json.Value v) throws SafeTensorsException {
    if (!(v instanceof Json.Num n) || !n.isInteger() || n.text().startsWith("-")) {
      throw invalid(file, v.pos(), name, what + " must be a non-negative integer, found " + v.describe());
    }
    if (n.text().length() > 19 || (n.text().length() == 19 && n.text().compareTo("9223372036854775807") > 0)) {
      throw invalid(file, v.pos(), name, what + " = " + n.text() + " is too large (over 2^63 - 1)");
    }
    return Long.parseLong(n.text());
  }

  /** The tensors, sorted by offsets, must cover {@code [0, dataLength)} exactly, back to back. */
  private static void checkTiling(Path file, List<Entry> sorted, long dataStart, long dataLength)
      throws SafeTensorsException {
    long expected = 0;
    Entry previous = null;
    for (Entry e : sorted) {
      String where = "data_offsets [" + e.begin() + ", " + e.end() + "]";
      if (e.begin() < expected) {
        throw new SafeTensorsException(file, Reason.INVALID_OFFSETS, e.pos(), e.name(),
            where + " overlap tensor '" + previous.name() + "' [" + previous.begin() + ", " + previous.end() + "]");
      }
      if (e.begin() > expected) {
        String after = previous == null ? "at the start of the data section"
            : "after tensor '" + previous.name() + "' (which ends at " + expected + ")";
        throw new SafeTensorsException(file, Reason.INVALID_OFFSETS, e.pos(), e.name(),
            where + " leave a gap of " + (e.begin() - expected) + " bytes " + after + "; tensors must be contiguous");
      }
      expected = e.end();
      previous = e;
    }
    if (expected != dataLength) {
      throw new SafeTensorsException(file, Reason.TRAILING_BYTES, dataStart + expected, null,
          (dataLength - expected) + " trailing bytes after the tensor data (the header's tensors cover "
              + expected + " of the " + dataLength + " data bytes)");
    }
  }

  private static SafeTensorsException invalid(Path file, long pos, String tensor, String problem) {
    return new SafeTensorsException(file, Reason.INVALID_HEADER, pos, tensor, problem);
  }

  // ------------------------------------------------------------------ encoding

  /**
   * The header as the reference writer produces it: compact JSON ({@code serde_json::to_string}),
   * {@code __metadata__} first (when given), then the tensors in the given order, each as
   * {@code {"dtype":..,"shape":[..],"data_offsets":[b,e]}}; padded with spaces to a multiple of 8
   * so that the data section starts 8-byte aligned.
   */
  static byte[] encode(List<Entry> entries, Map<String, String> metadata) {
    StringBuilder sb = new StringBuilder("{");
    boolean first = true;
    if (metadata != null) {
      sb.append("\"__metadata__\":{");
      boolean firstKey = true;
      for (Map.Entry<String, String> kv : metadata.entrySet()) {
        if (!firstKey) sb.append(',');
        firstKey = false;
        quote(sb, kv.getKey());
        sb.append(':');
        quote(sb, kv.getValue());
      }
      sb.append('}');
      first = false;
    }
    for (Entry e : entries) {
      if (!first) sb.append(',');
      first = false;
      quote(sb, e.name());
      sb.append(":{\"dtype\":\"").append(formatName(e.dtype())).append("\",\"shape\":[");
      for (int k = 0; k < e.shape().length; k++) {
        if (k > 0) sb.append(',');
        sb.append(e.shape()[k]);
      }
      sb.append("],\"data_offsets\":[").append(e.begin()).append(',').append(e.end()).append("]}");
    }
    sb.append('}');
    byte[] json = sb.toString().getBytes(StandardCharsets.UTF_8);
    int padded = (json.length + 7) & ~7;
    byte[] out = Arrays.copyOf(json, padded);
    Arrays.fill(out, json.length, padded, (byte) ' ');
    return out;
  }

  /** A JSON string as serde_json writes it: escapes for '"', '\\' and control characters only. */
  private static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int k = 0; k < s.length(); k++) {
      char c = s.charAt(k);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        case '\b' -> sb.append("\\b");
        case '\f' -> sb.append("\\f");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }

  /** Whether {@code s} is valid Unicode (no unpaired surrogate), hence encodable as UTF-8. */
  static boolean isWellFormed(String s) {
    for (int k = 0; k < s.length(); k++) {
      char c = s.charAt(k);
      if (Character.isHighSurrogate(c)) {
        if (k + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(k + 1))) return false;
        k++;
      } else if (Character.isLowSurrogate(c)) {
        return false;
      }
    }
    return true;
  }
}
