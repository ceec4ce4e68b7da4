package dev.ember.nn.io;

import dev.ember.autograd.Grad;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One tensor in NumPy's {@code .npy} format (numpy.save / numpy.load): the magic {@code \x93NUMPY},
 * a version (1.0, 2.0 or 3.0), the header length, a Python dict literal
 * {@code {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }} padded so the data starts at
 * a multiple of 64 bytes, then the elements.
 *
 * <p>Reading validates everything before it allocates: magic, version, a header length under
 * {@link #MAX_HEADER_BYTES} that fits in the file, the dict's exact grammar and keys (parsed, never
 * evaluated), a dtype Ember holds ({@code <f4 <f8 <f2 <i8 <i4 |i1 |b1}, and the big-endian forms, which are
 * byte-swapped), non-negative dims whose product fits one tensor, and a data section of exactly
 * dtype x shape bytes. Fortran-ordered arrays are read into Ember's row-major layout. Writing is
 * atomic: a reader sees the old file or the whole new one. Failures throw {@link NpyException}.
 */
public final class Npy {
  private Npy() {}

  /** Largest header accepted (NumPy writes a few hundred bytes; 2.0 headers may be larger). */
  public static final int MAX_HEADER_BYTES = 1 << 20;

  private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
  private static final int CHUNK = 1 << 16;

  /** Writes {@code tensor} (by value: views are written as their elements) to {@code file}. */
  public static void save(Tensor tensor, Path file) throws IOException {
    if (tensor == null) throw Check.fail("npy.save", "tensor is null");
    if (file == null) throw Check.fail("npy.save", "file is null");
    descr(tensor.dtype()); // a dtype NumPy lacks fails before the file is touched
    AtomicFiles.write(file, ch -> {
      OutputStream out = new BufferedOutputStream(Channels.newOutputStream(ch), CHUNK);
      write(tensor, out);
      out.flush();
    });
  }

  /**
   * The tensor in {@code file}. A file whose array needs more heap than the JVM has free is refused
   * from its header, with the size it needs ({@link NpyException#exceedsHeap()}).
   */
  public static Tensor load(Path file) throws IOException {
    return load(file, HeapBudget.HEAP);
  }

  /**
   * {@link #load(Path)} with at most {@code limit} bytes of heap for the tensor
   * ({@link HeapBudget#HEAP}: what the heap has free).
   */
  static Tensor load(Path file, long limit) throws IOException {
    long size = Files.size(file);
    try (InputStream in = new BufferedInputStream(Files.newInputStream(file), CHUNK)) {
      Header h = readHeader(in, size, file, null);
      long need = heapNeed(h);
      if (!HeapBudget.allows(need, limit)) {
        throw NpyException.heap(file, null, h.describe() + " needs " + HeapBudget.bytes(need) + " of heap, more than "
            + HeapBudget.shortfall(limit), false);
      }
      return readBody(in, h, size, file, null);
    }
  }

  /** The heap reading {@code h}'s array takes: its data, twice for a Fortran-ordered one (read, then transposed). */
  static long heapNeed(Header h) {
    boolean transposed = h.fortran() && h.shape().length >= 2;
    return h.dataBytes() * (transposed ? 2 : 1) + HeapBudget.PER_TENSOR_BYTES;
  }

  /**
   * The header of {@code file}, validated exactly as {@link #load} does (including that the data
   * section has dtype x shape bytes), without reading the data.
   */
  public static Header header(Path file) throws IOException {
    long size = Files.size(file);
    try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 4096)) {
      return readHeader(in, size, file, null);
    }
  }

  // ------------------------------------------------------------------ format

  /**
   * A validated header: the dtype, its byte order, the layout and shape, and where the data starts
   * (public so that readers which map the data, such as dev.ember.data's, reuse these checks).
   */
  public record Header(String descr, DType dtype, ByteOrder order, boolean fortran, int[] shape, long numel, int dataStart) {
    long dataBytes() {
      return numel * dtype.itemSize();
    }

    String describe() {
      return "'" + descr + "' " + pythonShape(shape);
    }
  }

  static String descr(DType dtype) {
    return switch (dtype) {
      case F32 -> "<f4";
      case F64 -> "<f8";
      case I64 -> "<i8";
      case I32 -> "<i4";
      case BOOL -> "|b1";
      case I8 -> "|i1";
      case F16 -> "<f2";
      case BF16 -> throw Check.fail("npy.save", "dtype bfloat16 has no NumPy equivalent (NumPy has no bfloat16): "
          + "convert with x.to(DType.F32) before saving, or use safetensors, which stores BF16");
    };
  }

  static String pythonShape(int[] shape) {
    StringBuilder sb = new StringBuilder("(");
    for (int i = 0; i < shape.length; i++) sb.append(i > 0 ? ", " : "").append(shape[i]);
    return sb.append(shape.length == 1 ? ",)" : ")").toString();
  }

  /** The bytes before the data for {@code tensor}: magic, version, length and the padded dict. */
  static byte[] headerBytes(DType dtype, int[] shape) {
    String dict = "{'descr': '" + descr(dtype) + "', 'fortran_order': False, 'shape': " + pythonShape(shape) + ", }";
    int prefix = dict.length() + 1 > 65535 - 64 ? 12 : 10; // version 1.0's length field is 2 bytes; 2.0's is 4
    int total = (prefix + dict.length() + 1 + 63) / 64 * 64;
    byte[] out = new byte[total];
    System.arraycopy(MAGIC, 0, out, 0, 6);
    out[6] = (byte) (prefix == 10 ? 1 : 2);
    out[7] = 0;
    int hlen = total - prefix;
    if (prefix == 10) {
      out[8] = (byte) hlen;
      out[9] = (byte) (hlen >>> 8);
    } else {
      ByteBuffer.wrap(out, 8, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(hlen);
    }
    byte[] d = dict.getBytes(StandardCharsets.ISO_8859_1);
    System.arraycopy(d, 0, out, prefix, d.length);
    for (int i = prefix + d.length; i < total - 1; i++) out[i] = ' ';
    out[total - 1] = '\n';
    return out;
  }

  /** Writes {@code t} as a complete .npy stream; returns the bytes written. */
  static long write(Tensor t, OutputStream out) throws IOException {
    Tensor c;
    try (var ignored = Grad.off()) {
      c = TensorData.hostContiguous(t);
    }
    byte[] header = headerBytes(c.dtype(), c.shape());
    out.write(header);
    int item = c.dtype().itemSize();
    int perChunk = CHUNK / item;
    byte[] buf = new byte[CHUNK];
    ByteBuffer bb = ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN);
    long n = c.numel();
    for (long done = 0; done < n; ) {
      int count = (int) Math.min(perChunk, n - done);
      bb.clear();
      TensorData.read(c, done, count, bb);
      out.write(buf, 0, count * item);
      done += count;
    }
    return header.length + n * item;
  }

  /**
   * Reads one .npy stream of exactly {@code length} bytes (the file's size, or an npz member's
   * declared size); {@code member} names the npz member in errors, or is null for a .npy file.
   */
  static Tensor read(InputStream in, long length, Path file, String member) throws IOException {
    return readBody(in, readHeader(in, length, file, member), length, file, member);
  }

  /** Reads the data of the validated header {@code h}; the stream is at the first data byte. */
  private static Tensor readBody(InputStream in, Header h, long length, Path file, String member) throws IOException {
    Tensor t = Tensor.empty(h.dtype(), h.fortran() ? reversed(h.shape()) : h.shape());
    readData(in, h, t, file, member);
    if (in.read() >= 0) {
      throw new NpyException(file, member, "more bytes than the declared size (" + length + "); the file changed "
          + "while being read or the archive lies about its size");
    }
    if (!h.fortran() || h.shape().length < 2) return t;
    int[] perm = new int[h.shape().length];
    for (int i = 0; i < perm.length; i++) perm[i] = perm.length - 1 - i;
    try (var ignored = Grad.off()) {
      return t.permute(perm).contiguous();
    }
  }

  /** Reads and validates everything up to the data; the stream is left at the first data byte. */
  static Header readHeader(InputStream in, long length, Path file, String member) throws IOException {
    if (length < 10) {
      throw new NpyException(file, member, (member == null ? "file" : "member") + " is " + length
          + " bytes, too short for the magic, version and header length");
    }
    byte[] pre = readN(in, 8, file, member);
    for (int i = 0; i < 6; i++) {
      if (pre[i] != MAGIC[i]) {
        throw new NpyException(file, member, "not a .npy array: the first bytes are " + hex(pre, 6)
            + ", not the magic \\x93NUMPY");
      }
    }
    int major = pre[6] & 0xff, minor = pre[7] & 0xff;
    if (major < 1 || major > 3 || minor != 0) {
      throw new NpyException(file, member, "format version " + major + "." + minor
          + " is not one Ember reads (1.0, 2.0, 3.0)");
    }
    int lenBytes = major == 1 ? 2 : 4;
    byte[] lb = readN(in, lenBytes, file, member);
    long hlen = major == 1 ? (lb[0] & 0xff) | (lb[1] & 0xff) << 8
        : ByteBuffer.wrap(lb).order(ByteOrder.LITTLE_ENDIAN).getInt() & 0xffffffffL;
    int prefix = 8 + lenBytes;
    if (hlen > MAX_HEADER_BYTES) {
      throw new NpyException(file, member, "header length " + hlen + " exceeds the " + MAX_HEADER_BYTES + "-byte cap");
    }
    if (prefix + hlen > length) {
      throw new NpyException(file, member, "header length " + hlen + " runs past the end (" + length + " bytes in all)");
    }
    byte[] hb = readN(in, (int) hlen, file, member);
    String text = new String(hb, major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
    if (text.isEmpty() || text.charAt(text.length() - 1) != '\n') {
      throw new NpyException(file, member, "header does not end with a newline");
    }
    Map<String, Object> dict;
    try {
      dict = new DictParser(text).parse();
    } catch (IllegalArgumentException e) {
      throw new NpyException(file, member, "header is not the dict NumPy writes: " + e.getMessage());
    }
    if (!dict.keySet().equals(java.util.Set.of("descr", "fortran_order", "shape"))) {
      throw new NpyException(file, member, "header keys are " + dict.keySet()
          + ", expected exactly descr, fortran_order and shape");
    }
    if (!(dict.get("descr") instanceof String descr)) {
      throw new NpyException(file, member, "descr must be a string, got " + dict.get("descr"));
    }
    if (!(dict.get("fortran_order") instanceof Boolean fortran)) {
      throw new NpyException(file, member, "fortran_order must be True or False, got " + dict.get("fortran_order"));
    }
    if (!(dict.get("shape") instanceof long[] dims)) {
      throw new NpyException(file, member, "shape must be a tuple of integers, got " + dict.get("shape"));
    }
    DType dtype = dtypeOf(descr);
    if (dtype == null) {
      throw new NpyException(file, member, "unsupported dtype '" + descr
          + "' (Ember reads <f4 <f8 <f2 <i8 <i4 |i1 |b1, either byte order)");
    }
    ByteOrder order = descr.charAt(0) == '>' ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
    int[] shape = new int[dims.length];
    long numel = 1;
    for (int i = 0; i < dims.length; i++) {
      if (dims[i] < 0) throw new NpyException(file, member, "shape " + tuple(dims) + " has a negative dim");
      if (dims[i] > Integer.MAX_VALUE || (numel = mulCapped(numel, dims[i])) > Integer.MAX_VALUE) {
        throw new NpyException(file, member, "shape " + tuple(dims) + " has more elements than one tensor holds ("
            + Integer.MAX_VALUE + ")");
      }
      shape[i] = (int) dims[i];
    }
    Header h = new Header(descr, dtype, order, fortran, shape, numel, (int) (prefix + hlen));
    long data = length - h.dataStart();
    if (data < h.dataBytes()) {
      throw new NpyException(file, member, "data holds " + data + " bytes but " + h.describe() + " needs "
          + h.dataBytes());
    }
    if (data > h.dataBytes()) {
      throw new NpyException(file, member, (data - h.dataBytes()) + " trailing bytes after the " + h.dataBytes()
          + " bytes of " + h.describe());
    }
    return h;
  }

  private static void readData(InputStream in, Header h, Tensor t, Path file, String member) throws IOException {
    int item = h.dtype().itemSize();
    int perChunk = CHUNK / item;
    byte[] buf = new byte[CHUNK];
    ByteBuffer bb = ByteBuffer.wrap(buf).order(h.order());
    for (long done = 0; done < h.numel(); ) {
      int count = (int) Math.min(perChunk, h.numel() - done);
      int at = (int) done;
      readFully(in, buf, count * item, file, member);
      bb.clear();
      if (h.dtype() == DType.BOOL) {
        for (int k = 0; k < count; k++) {
          if (buf[k] != 0 && buf[k] != 1) {
            throw new NpyException(file, member, String.format("bool element %d (byte %d%s) is 0x%02x, not 0 or 1",
                at + k, h.dataStart() + at + k, member == null ? "" : " of the member", buf[k] & 0xff));
          }
        }
      }
      TensorData.write(bb, t, at, count);
      done += count;
    }
  }

  private static DType dtypeOf(String descr) {
    if (descr.equals("|b1")) return DType.BOOL;
    if (descr.equals("|i1")) return DType.I8;
    if (descr.length() != 3 || (descr.charAt(0) != '<' && descr.charAt(0) != '>')) return null;
    return switch (descr.substring(1)) {
      case "f4" -> DType.F32;
      case "f8" -> DType.F64;
      case "f2" -> DType.F16;
      case "i8" -> DType.I64;
      case "i4" -> DType.I32;
      default -> null;
    };
  }

  private static long mulCapped(long a, long b) {
    return b == 0 || a <= Long.MAX_VALUE / b ? a * b : Long.MAX_VALUE;
  }

  private static int[] reversed(int[] shape) {
    int[] r = new int[shape.length];
    for (int i = 0; i < r.length; i++) r[i] = shape[shape.length - 1 - i];
    return r;
  }

  private static String tuple(long[] dims) {
    StringBuilder sb = new StringBuilder("(");
    for (int i = 0; i < dims.length; i++) sb.append(i > 0 ? ", " : "").append(dims[i]);
    return sb.append(dims.length == 1 ? ",)" : ")").toString();
  }

  private static String hex(byte[] b, int n) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < n; i++) sb.append(String.format("\\x%02x", b[i] & 0xff));
    return sb.toString();
  }

  private static byte[] readN(InputStream in, int n, Path file, String member) throws IOException {
    byte[] b = new byte[n];
    readFully(in, b, n, file, member);
    return b;
  }

  private static void readFully(InputStream in, byte[] b, int n, Path file, String member) throws IOException {
    int got = 0;
    while (got < n) {
      int r;
      try {
        r = in.read(b, got, n - got);
      } catch (EOFException e) {
        r = -1;
      }
      if (r < 0) {
        throw new NpyException(file, member, "ended early, while reading the "
            + (n <= 12 ? "header" : "data") + " (was it changed while being read?)");
      }
      got += r;
    }
  }

  /**
   * The dict literal numpy.lib.format writes, and nothing more: string keys, and values that are
   * strings, True/False, or tuples of non-negative integers (an optional Python 2 {@code L}
   * suffix allowed). Trailing commas and spaces as NumPy writes them; the newline-padded tail.
   */
  static final class DictParser {
    private final String s;
    private int i;

    DictParser(String s) {
      this.s = s;
    }

    Map<String, Object> parse() {
      Map<String, Object> out = new LinkedHashMap<>();
      ws();
      expect('{');
      ws();
      while (peek() != '}') {
        String key = string();
        ws();
        expect(':');
        ws();
        if (out.put(key, value()) != null) throw err("duplicate key '" + key + "'");
        ws();
        if (peek() == ',') {
          i++;
          ws();
        } else if (peek() != '}') {
          throw err("expected ',' or '}'");
        }
      }
      i++;
      while (i < s.length()) {
        if (!Character.isWhitespace(s.charAt(i))) throw err("unexpected text after the dict");
        i++;
      }
      return out;
    }

    private Object value() {
      char c = peek();
      if (c == '\'' || c == '"') return string();
      if (c == '(') return tuple();
      if (s.startsWith("True", i)) {
        i += 4;
        return Boolean.TRUE;
      }
      if (s.startsWith("False", i)) {
        i += 5;
        return Boolean.FALSE;
      }
      throw err("expected a string, True, False or a tuple");
    }

    private long[] tuple() {
      expect('(');
      ws();
      List<Long> dims = new ArrayList<>();
      boolean comma = true;
      while (peek() != ')') {
        if (!comma) throw err("expected ',' or ')' in the shape");
        dims.add(integer());
        ws();
        comma = peek() == ',';
        if (comma) {
          i++;
          ws();
        }
      }
      i++;
      if (dims.size() == 1 && !comma) throw err("a one-element tuple needs a trailing comma");
      return dims.stream().mapToLong(Long::longValue).toArray();
    }

    private long integer() {
      int start = i;
      boolean negative = peek() == '-';
      if (negative) i++;
      while (i < s.length() && Character.isDigit(s.charAt(i))) i++;
      if (i == start + (negative ? 1 : 0)) throw err("expected an integer");
      String digits = s.substring(start, i);
      if (peek() == 'L') i++;
      try {
        return Long.parseLong(digits);
      } catch (NumberFormatException e) {
        throw err("integer " + digits + " is out of range");
      }
    }

    private String string() {
      char q = peek();
      if (q != '\'' && q != '"') throw err("expected a quoted key");
      int start = ++i;
      while (i < s.length() && s.charAt(i) != q) {
        if (s.charAt(i) == '\\') throw err("escapes are not part of NumPy's header");
        i++;
      }
      if (i >= s.length()) throw err("unterminated string");
      return s.substring(start, i++);
    }

    private void ws() {
      while (i < s.length() && (s.charAt(i) == ' ' || s.charAt(i) == '\t')) i++;
    }

    private char peek() {
      if (i >= s.length()) throw err("the header ends inside the dict");
      return s.charAt(i);
    }

    private void expect(char c) {
      if (peek() != c) throw err("expected '" + c + "'");
      i++;
    }

    private IllegalArgumentException err(String what) {
      return new IllegalArgumentException(what + " at character " + i);
    }
  }
}
