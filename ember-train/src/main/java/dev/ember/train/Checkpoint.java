package dev.ember.train;

import dev.ember.autograd.Grad;
import dev.ember.nn.io.SafeTensors;
import dev.ember.nn.io.SafeTensorsFile;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A training checkpoint on disk: one safetensors file (so any safetensors reader can look inside)
 * holding every tensor of the state, with the rest of the state (numbers, lists, maps, with their
 * Java types) as JSON in the metadata, and a SHA-256 over both.
 *
 * <p>Writing goes to a temporary file in the same folder, which is flushed ({@code fsync}) and
 * then renamed over the target in one step, so a reader sees the old file or the whole new one,
 * never part of one. Reading checks the file's structure (safetensors validation, before any
 * tensor is allocated), the format tag and the checksum before returning anything.
 */
public final class Checkpoint {
  /** The format tag stored in every checkpoint. */
  public static final String FORMAT = "ember-checkpoint/1";

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

  /** Reads and verifies a checkpoint written by {@link #write}. */
  public static Map<String, Object> read(Path file) throws IOException {
    SafeTensorsFile f;
    try {
      f = SafeTensors.read(file);
    } catch (IOException e) {
      throw new CheckpointException(file, "not a readable checkpoint (" + e.getMessage() + ")", e);
    }
    Map<String, String> meta = f.metadata();
    if (!FORMAT.equals(meta.get("format"))) {
      throw new CheckpointException(file, "format is '" + meta.get("format") + "', expected '" + FORMAT + "'");
    }
    String json = meta.get("state");
    String sum = meta.get("sha256");
    if (json == null || sum == null) throw new CheckpointException(file, "metadata lacks 'state' or 'sha256'");
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
      throw new CheckpointException(file, "checksum mismatch (stored " + sum + ", computed " + actual + "): the file is corrupt");
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
      Tensor c = t.isContiguous() ? t : t.cloneContiguous();
      Storage s = c.storage();
      int off = c.offset();
      int n = Math.toIntExact(c.numel());
      for (int i = 0; i < n; i++) {
        if (buf.remaining() < 8) {
          md.update(buf.flip());
          buf.clear();
        }
        switch (c.dtype()) {
          case F32 -> buf.putFloat(s.floats()[off + i]);
          case F64 -> buf.putDouble(s.doubles()[off + i]);
          case I64 -> buf.putLong(s.longs()[off + i]);
          case I32 -> buf.putInt(s.ints()[off + i]);
          case BOOL -> buf.put(s.bools()[off + i]);
          default -> throw new IllegalArgumentException("checkpoint: cannot store dtype " + c.dtype());
        }
      }
    }
    md.update(buf.flip());
    return HexFormat.of().formatHex(md.digest());
  }
}
