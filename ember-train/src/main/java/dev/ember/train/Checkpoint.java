package dev.ember.train;

import dev.ember.autograd.Grad;
import dev.ember.nn.io.SafeTensors;
import dev.ember.nn.io.SafeTensorsException;
import dev.ember.nn.io.SafeTensorsFile;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A training checkpoint on disk: one safetensors file (so any safetensors reader can look inside)
 * holding every tensor of the state, with the rest of the state (numbers, lists, maps, with their
 * Java types) as JSON in the metadata, and a SHA-256 over both.
 *
 * <p>Writing goes to a temporary file in the same folder, which is flushed ({@code fsync}) and
 * then renamed over the target in one step, so a reader sees the old file or the whole new one,
 * never part of one. Reading checks the file's structure (safetensors validation, before any
 * tensor is allocated), the format tag and the checksum before returning anything, and says what
 * is wrong in a {@link CheckpointException}: {@code truncated at 1,204,224 of 2,409,001 bytes},
 * {@code checksum mismatch (expected sha256 9f2c..., got 41d0...)}, {@code unknown version
 * 'ember-checkpoint/2' (this Ember reads ember-checkpoint/1)}, {@code unparsable header at byte 57:
 * ...}, {@code not a checkpoint: ...}. {@link #verify} gives that reason without throwing.
 */
public final class Checkpoint {
  /** The format tag stored in every checkpoint. */
  public static final String FORMAT = "ember-checkpoint/1";

  private static final String FORMAT_FAMILY = "ember-checkpoint/";
  private static final Pattern DATA_OFFSETS = Pattern.compile("\"data_offsets\"\\s*:\\s*\\[\\s*(\\d+)\\s*,\\s*(\\d+)\\s*\\]");

  private Checkpoint() {}

  /** Writes {@code state} (see {@link Callback#stateDict()} for the allowed values) atomically to {@code file}. */
  public static void write(Path file, Map<String, Object> state) throws IOException {
    LinkedHashMap<String, Tensor> tensors = new LinkedHashMap<>();
    String json;
    try (var ignored = Grad.off()) {
      json = StateJson.write(state, t -> {
        String name = "t" + tensors.size();
        tensors.put(name, t.detach().cloneContiguous());
        return name;
      });
    }
    LinkedHashMap<String, String> meta = new LinkedHashMap<>();
    meta.put("format", FORMAT);
    meta.put("state", json);
    meta.put("sha256", digest(json, tensors));
    SafeTensors.save(tensors, meta, file);
  }

  /**
   * Why {@code file} is not a usable checkpoint (the {@link CheckpointException#problem()} that
   * {@link #read} would throw), or empty when it reads and verifies. It reads the whole file.
   */
  public static Optional<String> verify(Path file) {
    try {
      read(file);
      return Optional.empty();
    } catch (CheckpointException e) {
      return Optional.of(e.problem());
    } catch (IOException e) {
      return Optional.of(String.valueOf(e.getMessage()));
    }
  }

  /** Reads and verifies a checkpoint written by {@link #write}; a {@link CheckpointException} says what is wrong. */
  public static Map<String, Object> read(Path file) throws IOException {
    SafeTensorsFile f = readFile(file);
    Map<String, String> meta = f.metadata();
    String format = meta.get("format");
    if (format == null) {
      throw new CheckpointException(file, "not a checkpoint: a safetensors file without the '" + FORMAT_FAMILY
          + "' format tag in its metadata");
    }
    if (!FORMAT.equals(format)) {
      throw new CheckpointException(file, format.startsWith(FORMAT_FAMILY)
          ? "unknown version '" + format + "' (this Ember reads " + FORMAT + ")"
          : "not a checkpoint: its format tag is '" + format + "', expected '" + FORMAT + "'");
    }
    String json = meta.get("state");
    String sum = meta.get("sha256");
    if (json == null || sum == null) {
      throw new CheckpointException(file, "not a checkpoint: its metadata lacks '" + (json == null ? "state" : "sha256") + "'");
    }
    if (f.tensors().keySet().stream().anyMatch(k -> !k.matches("t\\d+"))) {
      throw new CheckpointException(file, "holds tensors not written by a checkpoint: " + f.tensors().keySet());
    }
    String actual;
    try {
      actual = digest(json, f.tensors());
    } catch (IllegalArgumentException e) {
      throw new CheckpointException(file, e.getMessage(), e);
    }
    if (!actual.equals(sum)) {
      throw new CheckpointException(file, "checksum mismatch (expected sha256 " + sum + ", got " + actual + ")");
    }
    try {
      Object state = StateJson.read(json, f.tensors()::get);
      if (!(state instanceof Map<?, ?> m)) throw new CheckpointException(file, "state is not a map");
      @SuppressWarnings("unchecked")
      Map<String, Object> out = (Map<String, Object>) m;
      return out;
    } catch (StateJson.FormatException e) {
      throw new CheckpointException(file, e.getMessage(), e);
    }
  }

  /** The safetensors layer's read, its failures told in a checkpoint's terms. */
  private static SafeTensorsFile readFile(Path file) throws CheckpointException {
    try {
      return SafeTensors.read(file);
    } catch (NoSuchFileException e) {
      throw new CheckpointException(file, "no such file", e);
    } catch (SafeTensorsException e) {
      String truncated = truncation(file);
      if (truncated != null) throw new CheckpointException(file, truncated, e);
      String at = e.byteOffset().isPresent() ? " at byte " + grouped(e.byteOffset().getAsLong()) : "";
      String tensor = e.tensor().map(t -> " (tensor '" + t + "')").orElse("");
      throw new CheckpointException(file, switch (e.reason()) {
        case TRUNCATED -> "truncated" + at + tensor + ": " + e.problem();
        case HEADER_TOO_LARGE -> "not a checkpoint: bad magic" + at + ", " + e.problem();
        case MALFORMED_JSON -> "unparsable header" + at + ": " + e.problem();
        default -> "invalid safetensors layout" + at + tensor + ": " + e.problem();
      }, e);
    } catch (IOException e) {
      throw new CheckpointException(file, "cannot be read (" + e + ")", e);
    }
  }

  /**
   * {@code truncated at N of M bytes} when {@code file} is shorter than its own header says (M
   * is 8 + the header + the end of the last tensor's data), else null.
   */
  private static String truncation(Path file) {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = ch.size();
      if (size < 8) return "truncated at " + size + " bytes, before the end of the 8-byte header length";
      long n = readAt(ch, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
      if (n < 0 || n > SafeTensors.MAX_HEADER_BYTES) return null;
      if (8 + n > size) {
        return "truncated at " + grouped(size) + " of at least " + grouped(8 + n) + " bytes (inside the header)";
      }
      String header = StandardCharsets.UTF_8.decode(readAt(ch, 8, (int) n)).toString();
      long end = 0;
      for (Matcher m = DATA_OFFSETS.matcher(header); m.find(); ) end = Math.max(end, Long.parseLong(m.group(2)));
      long expected = 8 + n + end;
      return size < expected ? "truncated at " + grouped(size) + " of " + grouped(expected) + " bytes" : null;
    } catch (IOException | NumberFormatException e) {
      return null;                                     // no better diagnosis than the reader's own
    }
  }

  private static ByteBuffer readAt(FileChannel ch, long position, int length) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(length);
    while (buf.hasRemaining()) {
      if (ch.read(buf, position + buf.position()) < 0) throw new java.io.EOFException();
    }
    return buf.flip();
  }

  private static String grouped(long n) {
    return String.format(Locale.ROOT, "%,d", n);
  }

  /** SHA-256 over the JSON and each tensor's name, dtype, shape and values (little-endian), in name order of insertion. */
  private static String digest(String json, Map<String, Tensor> tensors) {
    MessageDigest md;
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is not available in this JDK", e);
    }
    md.update(json.getBytes(StandardCharsets.UTF_8));
    ByteBuffer buf = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
    for (int k = 0; k < tensors.size(); k++) {
      String name = "t" + k;
      Tensor t = tensors.get(name);
      if (t == null) throw new IllegalArgumentException("checkpoint: tensor '" + name + "' is missing");
      md.update((name + ":" + t.dtype() + ":" + java.util.Arrays.toString(t.shape()) + ";").getBytes(StandardCharsets.UTF_8));
      Tensor c = TensorData.hostContiguous(t);
      int n = Math.toIntExact(c.numel());
      int item = c.dtype().itemSize();
      // The buffer is flushed when fewer than 8 bytes are left before an element, as element by element: the
      // digest sees the same bytes in the same order.
      for (int i = 0; i < n; ) {
        if (buf.remaining() < 8) {
          md.update(buf.flip());
          buf.clear();
        }
        int count = Math.min(n - i, (buf.remaining() - 8) / item + 1);
        TensorData.read(c, i, count, buf);
        buf.position(buf.position() + count * item);
        i += count;
      }
    }
    md.update(buf.flip());
    return HexFormat.of().formatHex(md.digest());
  }
}
