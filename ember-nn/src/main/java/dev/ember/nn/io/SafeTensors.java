package dev.ember.nn.io;

import dev.ember.autograd.Grad;
import dev.ember.nn.io.SafeTensorsException.Reason;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.TensorData;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads and writes <a href="https://huggingface.co/docs/safetensors">safetensors</a> files, the
 * weight format of PyTorch ({@code safetensors.torch.save_file}/{@code load_file}) and Hugging Face:
 * <pre>
 * [8 bytes]  N, the header length, little-endian unsigned
 * [N bytes]  UTF-8 JSON: {"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},...}
 *            padded with spaces to a multiple of 8
 * [rest]     the tensors' data back to back, row-major, little-endian; offsets count from here
 * </pre>
 * <pre>{@code
 * SafeTensors.save(model.stateDict(), Map.of("epoch", "3"), Path.of("model.safetensors"));
 * model.loadStateDict(SafeTensors.load(Path.of("model.safetensors")));
 * }</pre>
 *
 * <p><b>Writing</b> follows the reference library byte for byte: tensors sorted by dtype alignment,
 * largest first (I64, F64, F32, I32, BF16, F16, I8, BOOL), then by name; compact JSON with {@code __metadata__}
 * first; spaces padding the header to a multiple of 8. Metadata keys are written sorted (the
 * reference writes its hash map in arbitrary order, so files with several metadata keys are
 * byte-identical to it only up to that order). Non-contiguous tensors are written by value. The
 * file appears atomically: see {@link AtomicFiles}.
 *
 * <p><b>Reading</b> validates the whole header before allocating any tensor: the header length
 * against {@link #MAX_HEADER_BYTES} and the file size, strict JSON, field types, dtypes, shapes,
 * offsets against dtype x shape, offsets tiling the data section with no gap, overlap or trailing
 * byte, unique names, string-to-string metadata. Each problem is a {@link SafeTensorsException}
 * naming the file, the byte offset and the tensor. Ember reads F32, F64, BF16, F16, I64, I32, I8 and
 * BOOL; other dtypes (U8, I16, F8_E4M3, ...) are rejected by name.
 *
 * <p>A small crafted file must not exhaust the heap: before the header is parsed, its outline
 * (the number of tensors and the size of {@code __metadata__}, found without allocating) is checked
 * against {@link #MAX_METADATA_BYTES} and against the heap the parse needs (about 1 KiB per
 * tensor: {@link SafeTensorsException.Reason#HEADER_TOO_LARGE}); before the tensors are allocated,
 * their total size is checked against the heap ({@link SafeTensorsException.Reason#EXCEEDS_HEAP}).
 * Each refusal names the size needed.
 */
public final class SafeTensors {
  private SafeTensors() {}

  /** The header-length cap of the reference library: larger headers are refused before reading them. */
  public static final long MAX_HEADER_BYTES = 100_000_000L;

  /**
   * The largest {@code __metadata__} read, in bytes of JSON: real files hold a few strings (format,
   * training settings); 16 MiB leaves room for the largest seen while a crafted 90 MB string is
   * refused before it is decoded.
   */
  public static final long MAX_METADATA_BYTES = 16L << 20;

  /** Heap the parse takes per tensor, measured at about 0.9 KiB (the JSON tree, the entry, the name), rounded up. */
  static final long PARSE_BYTES_PER_TENSOR = 1024;

  /** Size of the transfer buffer between tensors and the file. */
  private static final int CHUNK_BYTES = 1 << 20;

  /** Writes {@code tensors} to {@code file} with no {@code __metadata__}. */
  public static void save(Map<String, Tensor> tensors, Path file) throws IOException {
    write(tensors, null, file);
  }

  /** Writes {@code tensors} and the string-to-string {@code metadata} (written as {@code __metadata__}). */
  public static void save(Map<String, Tensor> tensors, Map<String, String> metadata, Path file) throws IOException {
    if (metadata == null) throw Check.fail("safetensors.save", "metadata is null; use save(tensors, file) for none");
    write(tensors, metadata, file);
  }

  /** The tensors of {@code file}, in file order. */
  public static LinkedHashMap<String, Tensor> load(Path file) throws IOException {
    return read(file).tensors();
  }

  /** The tensors of {@code file}, in file order, and its metadata. */
  public static SafeTensorsFile read(Path file) throws IOException {
    return read(file, HeapBudget.HEAP);
  }

  /**
   * {@link #read(Path)} with at most {@code limit} bytes of heap for the header and the tensors
   * ({@link HeapBudget#HEAP}: what the heap has free).
   */
  static SafeTensorsFile read(Path file, long limit) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = ch.size();
      if (size < 8) {
        throw new SafeTensorsException(file, Reason.TRUNCATED, -1, null,
            "file is " + size + " bytes, too short for the 8-byte header length");
      }
      long n = readFully(ch, file, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
      if (Long.compareUnsigned(n, MAX_HEADER_BYTES) > 0) {
        throw new SafeTensorsException(file, Reason.HEADER_TOO_LARGE, 0, null,
            "header length " + Long.toUnsignedString(n) + " exceeds the " + MAX_HEADER_BYTES + "-byte cap");
      }
      if (n > size - 8) {
        throw new SafeTensorsException(file, Reason.TRUNCATED, 0, null, "header length " + n
            + " runs past the end of the file (" + size + " bytes, so at most " + (size - 8) + " header bytes)");
      }
      if (!HeapBudget.allows(n, limit)) {
        throw new SafeTensorsException(file, Reason.HEADER_TOO_LARGE, 0, null, "the header of " + n + " bytes needs "
            + HeapBudget.human(n) + " of heap to read, more than " + HeapBudget.shortfall(limit));
      }
      byte[] headerBytes = readFully(ch, file, 8, (int) n).array();
      Json.Outline outline = Json.outline(headerBytes, 8);
      if (outline.metadataBytes() > MAX_METADATA_BYTES) {
        throw new SafeTensorsException(file, Reason.METADATA_TOO_LARGE, outline.metadataPos(), null,
            "\"__metadata__\" is " + HeapBudget.bytes(outline.metadataBytes()) + " of JSON, over the "
                + (MAX_METADATA_BYTES >> 20) + " MiB limit for metadata (real files hold a few KB of strings)");
      }
      int declared = outline.members() - (outline.metadataPos() >= 0 ? 1 : 0);
      long parseNeed = declared * PARSE_BYTES_PER_TENSOR + 2 * n;
      if (!HeapBudget.allows(parseNeed, limit)) {
        throw new SafeTensorsException(file, Reason.HEADER_TOO_LARGE, 8, null, "header declares " + declared
            + " tensors; parsing it needs about " + HeapBudget.human(parseNeed) + " of heap (1 KiB per tensor), more than "
            + HeapBudget.shortfall(limit));
      }
      Json.Obj root;
      try {
        root = Json.parseObject(headerBytes, 8);
      } catch (Json.SyntaxError e) {
        throw new SafeTensorsException(file, Reason.MALFORMED_JSON, e.pos, null, e.getMessage());
      }
      long dataStart = 8 + n;
      Header.Parsed header = Header.validate(file, root, dataStart, size - dataStart);
      root = null; // the JSON tree is garbage from here: the entries hold what is needed
      int count = header.entries().size();
      long need = (size - dataStart) + count * HeapBudget.PER_TENSOR_BYTES;
      if (!HeapBudget.allows(need, limit)) {
        throw new SafeTensorsException(file, Reason.EXCEEDS_HEAP, -1, null, "its " + count
            + (count == 1 ? " tensor holds " : " tensors hold ") + (size - dataStart) + " bytes of data, needing "
            + HeapBudget.human(need) + " of heap, more than " + HeapBudget.shortfall(limit));
      }
      LinkedHashMap<String, Tensor> tensors = new LinkedHashMap<>();
      ByteBuffer chunk = ByteBuffer.allocateDirect((int) Math.min(CHUNK_BYTES, Math.max(8, size - dataStart)))
          .order(ByteOrder.LITTLE_ENDIAN);
      for (Header.Entry e : header.entries()) {
        tensors.put(e.name(), readTensor(ch, file, e, dataStart, chunk));
      }
      return new SafeTensorsFile(tensors, header.metadata());
    }
  }

  // ------------------------------------------------------------------ writing

  private record Item(String name, Tensor data) {}

  private static void write(Map<String, Tensor> tensors, Map<String, String> metadata, Path file) throws IOException {
    if (tensors == null) throw Check.fail("safetensors.save", "tensors is null");
    if (file == null) throw Check.fail("safetensors.save", "file is null");
    List<Map.Entry<String, DType>> order = new ArrayList<>();
    Map<String, Tensor> byName = new LinkedHashMap<>();
    for (Map.Entry<String, Tensor> kv : tensors.entrySet()) {
      String name = kv.getKey();
      Tensor t = kv.getValue();
      if (name == null) throw Check.fail("safetensors.save", "a tensor name is null");
      if (name.equals("__metadata__")) {
        throw Check.fail("safetensors.save", "the name \"__metadata__\" is reserved for the file's metadata",
            "hint", "rename the tensor or pass the strings as metadata");
      }
      if (!Header.isWellFormed(name)) {
        throw Check.fail("safetensors.save", "tensor name \"" + name + "\" has an unpaired surrogate, not valid UTF-8");
      }
      if (t == null) throw Check.fail("safetensors.save", "tensor '" + name + "' is null");
      order.add(new AbstractMap.SimpleImmutableEntry<>(name, t.dtype()));
      byName.put(name, t);
    }
    Map<String, String> meta = null;
    if (metadata != null) {
      meta = new TreeMap<>(Header::compareCodePoints);
      for (Map.Entry<String, String> kv : metadata.entrySet()) {
        if (kv.getKey() == null || kv.getValue() == null) {
          throw Check.fail("safetensors.save", "metadata must map strings to strings, got " + kv.getKey() + " -> "
              + kv.getValue());
        }
        if (!Header.isWellFormed(kv.getKey()) || !Header.isWellFormed(kv.getValue())) {
          throw Check.fail("safetensors.save", "metadata entry \"" + kv.getKey() + "\" has an unpaired surrogate");
        }
        meta.put(kv.getKey(), kv.getValue());
      }
    }
    order.sort(Header.WRITE_ORDER);
    List<Header.Entry> entries = new ArrayList<>();
    List<Item> items = new ArrayList<>();
    long offset = 0;
    try (var ignored = Grad.off()) {
      for (Map.Entry<String, DType> kv : order) {
        Tensor t = TensorData.hostContiguous(byName.get(kv.getKey())); // views (and device tensors) by value
        long nbytes = t.numel() * t.dtype().itemSize();
        entries.add(new Header.Entry(kv.getKey(), t.dtype(), t.shape(), offset, offset + nbytes, -1));
        items.add(new Item(kv.getKey(), t));
        offset += nbytes;
      }
    }
    byte[] header = Header.encode(entries, meta);
    if (header.length > MAX_HEADER_BYTES) {
      throw Check.fail("safetensors.save", "the header would be " + header.length + " bytes, over the "
          + MAX_HEADER_BYTES + "-byte cap readers enforce", "hint", "save fewer tensors per file or shorten the metadata");
    }
    long total = offset;
    AtomicFiles.write(file, ch -> {
      ByteBuffer chunk = ByteBuffer.allocateDirect((int) Math.max(header.length + 8, Math.min(CHUNK_BYTES, total)))
          .order(ByteOrder.LITTLE_ENDIAN);
      chunk.putLong(header.length).put(header).flip();
      writeFully(ch, chunk);
      for (Item item : items) writeTensor(ch, item.data(), chunk);
    });
  }

  /** Streams a contiguous tensor's elements to {@code ch} through {@code chunk}, little-endian. */
  private static void writeTensor(FileChannel ch, Tensor t, ByteBuffer chunk) throws IOException {
    int item = t.dtype().itemSize();
    long n = t.numel();
    int perChunk = chunk.capacity() / item;
    for (long done = 0; done < n; ) {
      int count = (int) Math.min(perChunk, n - done);
      chunk.clear();
      TensorData.read(t, done, count, chunk);
      chunk.position(0).limit(count * item);
      writeFully(ch, chunk);
      done += count;
    }
  }

  private static void writeFully(FileChannel ch, ByteBuffer buf) throws IOException {
    while (buf.hasRemaining()) ch.write(buf);
  }

  // ------------------------------------------------------------------ reading

  /** Reads one validated tensor; the header has already been checked against the file size. */
  private static Tensor readTensor(FileChannel ch, Path file, Header.Entry e, long dataStart, ByteBuffer chunk)
      throws IOException {
    Tensor t = Tensor.empty(e.dtype(), e.shape());
    int item = e.dtype().itemSize();
    long n = e.numel();
    int perChunk = chunk.capacity() / item;
    long pos = dataStart + e.begin();
    for (long done = 0; done < n; ) {
      int count = (int) Math.min(perChunk, n - done);
      int at = (int) done;
      chunk.clear().limit(count * item);
      while (chunk.hasRemaining()) {
        if (ch.read(chunk, pos + chunk.position()) < 0) {
          throw new SafeTensorsException(file, Reason.TRUNCATED, pos + chunk.position(), e.name(),
              "the file ended while reading the tensor's data (was it changed while being read?)");
        }
      }
      chunk.flip();
      if (e.dtype() == DType.BOOL) {
        for (int k = at; k < at + count; k++) {
          byte b = chunk.get(k - at);
          if (b != 0 && b != 1) {
            throw new SafeTensorsException(file, Reason.INVALID_DATA, pos + (k - at), e.name(),
                String.format("BOOL element %d is 0x%02x, not 0 or 1", k, b & 0xff));
          }
        }
      }
      TensorData.write(chunk, t, at, count);
      pos += (long) count * item;
      done += count;
    }
    return t;
  }

  private static ByteBuffer readFully(FileChannel ch, Path file, long position, int length) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(length);
    while (buf.hasRemaining()) {
      if (ch.read(buf, position + buf.position()) < 0) {
        throw new SafeTensorsException(file, Reason.TRUNCATED, position + buf.position(), null,
            "the file ended while reading the header (was it changed while being read?)");
      }
    }
    return buf.flip();
  }
}
