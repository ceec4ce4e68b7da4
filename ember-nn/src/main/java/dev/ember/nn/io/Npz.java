package dev.ember.nn.io;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32;
import java.util.zip.CheckedOutputStream;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * Named tensors in NumPy's {@code .npz} format (numpy.savez / savez_compressed / numpy.load): a zip
 * archive whose members {@code <name>.npy} are {@link Npy} streams, stored or deflated.
 *
 * <p>Reading parses the zip structure itself, as Python's zipfile (hence numpy.load) does: the
 * end-of-archive record is looked for in the last 65,557 bytes (a comment of up to 65,535 bytes, one
 * whose declared length runs past the end included), ZIP64 records and extra fields are read (numpy
 * writes them), and members are stored or deflated.
 * Everything is checked before a tensor is allocated: every member is a {@code .npy} and appears
 * once; no member declares more bytes than deflate can produce from its compressed size (at most
 * 1032:1, so a few kilobytes cannot claim gigabytes); each local header is where the central
 * directory says, with its signature and name; each member's data lies inside the file; each .npy
 * header agrees with the member's declared size; and all the arrays together fit in the heap
 * ({@link NpyException#exceedsHeap()} otherwise, with the size they need). While reading, a member
 * that inflates to more or fewer bytes than declared, or whose CRC-32 differs, is rejected. Every
 * failure is an {@link NpyException} naming the archive, the member and the byte offset.
 */
public final class Npz {
  private Npz() {}

  /** The best deflate ratio is about 1032:1; a member declaring more is lying about its size. */
  static final long MAX_DEFLATE_RATIO = 1032;

  /** Writes {@code tensors} uncompressed, as numpy.savez. */
  public static void save(Map<String, Tensor> tensors, Path file) throws IOException {
    save(tensors, file, false);
  }

  /** Writes {@code tensors}, deflated when {@code compressed} (numpy.savez_compressed), in map order. */
  public static void save(Map<String, Tensor> tensors, Path file, boolean compressed) throws IOException {
    if (tensors == null) throw Check.fail("npz.save", "tensors is null");
    if (file == null) throw Check.fail("npz.save", "file is null");
    for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
      if (e.getKey() == null || e.getKey().isEmpty()) throw Check.fail("npz.save", "a tensor name is null or empty");
      if (e.getValue() == null) throw Check.fail("npz.save", "tensor '" + e.getKey() + "' is null");
      if (e.getValue().dtype() == dev.ember.tensor.DType.BF16) {
        throw Check.fail("npz.save", "tensor '" + e.getKey() + "' has dtype bfloat16, which NumPy lacks: convert it "
            + "with x.to(DType.F32) before saving, or use safetensors, which stores BF16");
      }
    }
    AtomicFiles.write(file, ch -> {
      ZipOutputStream zip = new ZipOutputStream(new BufferedOutputStream(Channels.newOutputStream(ch), 1 << 16));
      for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
        ZipEntry entry = new ZipEntry(e.getKey() + ".npy");
        if (compressed) {
          entry.setMethod(ZipEntry.DEFLATED);
        } else { // a stored entry needs its size and CRC before its bytes: one pass to count, one to write
          CRC32 crc = new CRC32();
          long size = Npy.write(e.getValue(), new CheckedOutputStream(OutputStream.nullOutputStream(), crc));
          entry.setMethod(ZipEntry.STORED);
          entry.setSize(size);
          entry.setCompressedSize(size);
          entry.setCrc(crc.getValue());
        }
        zip.putNextEntry(entry);
        Npy.write(e.getValue(), zip);
        zip.closeEntry();
      }
      zip.finish();
      zip.flush();
    });
  }

  /**
   * The tensors of {@code file}, by name (the member name without {@code .npy}), in archive order.
   * An archive whose arrays need more heap than the JVM has free is refused before any is
   * allocated, with the size they need ({@link NpyException#exceedsHeap()}).
   */
  public static LinkedHashMap<String, Tensor> load(Path file) throws IOException {
    return load(file, HeapBudget.HEAP);
  }

  /**
   * {@link #load(Path)} with at most {@code limit} bytes of heap for the tensors
   * ({@link HeapBudget#HEAP}: what the heap has free).
   */
  static LinkedHashMap<String, Tensor> load(Path file, long limit) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = ch.size();
      List<Member> members = directory(ch, file, size);
      // pass 1: every member's .npy header (a few hundred inflated bytes each), and the heap all the arrays need
      long need = 0;
      long inflated = 0;
      Member largest = null;
      Npy.Header largestHeader = null;
      long[] starts = new long[members.size()]; // each member's data start, its local header checked once
      for (int k = 0; k < members.size(); k++) {
        Member m = members.get(k);
        starts[k] = dataStart(ch, file, size, m);
        Npy.Header h;
        try (MemberStream in = new MemberStream(ch, file, m, starts[k])) {
          h = Npy.readHeader(in, m.size(), file, m.name());
        }
        need += Npy.heapNeed(h);
        inflated += m.size();
        if (largest == null || m.size() > largest.size()) {
          largest = m;
          largestHeader = h;
        }
      }
      if (largest != null && !HeapBudget.allows(need, limit)) {
        String over = ", needing " + HeapBudget.human(need) + " of heap, more than " + HeapBudget.shortfall(limit);
        if (members.size() == 1) {
          throw NpyException.heap(file, largest.name(), "would inflate to " + largest.size() + " bytes (header says "
              + largestHeader.describe() + ")" + over + "; refusing", true);
        }
        throw NpyException.heap(file, null, "its " + members.size() + " members would inflate to " + inflated
            + " bytes" + over + "; the largest is '" + largest.name() + "', " + largest.size() + " bytes (header says "
            + largestHeader.describe() + "); refusing", true);
      }
      // pass 2: the arrays, each checked for its size and CRC-32 as it inflates
      LinkedHashMap<String, Tensor> out = new LinkedHashMap<>();
      for (int k = 0; k < members.size(); k++) {
        Member m = members.get(k);
        try (MemberStream in = new MemberStream(ch, file, m, starts[k])) {
          Tensor t = Npy.read(in, m.size(), file, m.name());
          in.verifyEnd();
          out.put(m.name().substring(0, m.name().length() - 4), t);
        }
      }
      return out;
    }
  }

  // ------------------------------------------------------------------ zip structure

  private static final int EOCD_SIG = 0x06054b50; // PK\5\6
  private static final int CEN_SIG = 0x02014b50; // PK\1\2
  private static final int LOC_SIG = 0x04034b50; // PK\3\4
  private static final int ZIP64_EOCD_SIG = 0x06064b50; // PK\6\6
  private static final int ZIP64_LOCATOR_SIG = 0x07064b50; // PK\6\7
  private static final int EOCD_SIZE = 22;
  private static final int ZIP64_EOCD_SIZE = 56;
  private static final int ZIP64_LOCATOR_SIZE = 20;
  private static final int CEN_SIZE = 46;
  private static final int LOC_SIZE = 30;
  private static final int MAX_COMMENT = 65535;
  private static final long U32 = 0xffffffffL;
  private static final int CHUNK = 1 << 16;

  /**
   * One member as the central directory describes it: {@code at} is the byte of its central
   * directory entry, {@code localHeader} that of its local header (both absolute), {@code rawName}
   * the name's bytes, compared with the local header's.
   */
  record Member(String name, byte[] rawName, int flags, int method, long crc, long compressed, long size,
      long localHeader, long at) {}

  /** The members listed by the central directory, validated, in directory order. */
  private static List<Member> directory(FileChannel ch, Path file, long size) throws IOException {
    if (size < EOCD_SIZE) {
      throw NpyException.archive(file, "not a zip archive: the file is " + size
          + " bytes, shorter than the 22-byte end-of-archive record");
    }
    // the end-of-archive record: the last one in the final 22 + 65535 bytes whose comment ends the file, else the
    // last one at all (Python's zipfile takes that one, reading a comment that runs past the end as far as it goes)
    int tailLength = (int) Math.min(size, EOCD_SIZE + MAX_COMMENT);
    long tailStart = size - tailLength;
    ByteBuffer tail = readAt(ch, file, null, tailStart, tailLength, "the end-of-archive record");
    int eocd = -1;
    int loose = -1;
    for (int i = tailLength - EOCD_SIZE; i >= 0; i--) {
      if (tail.getInt(i) != EOCD_SIG) continue;
      if (i + EOCD_SIZE + u16(tail, i + 20) == tailLength) {
        eocd = i;
        break;
      }
      if (loose < 0) loose = i;
    }
    if (eocd < 0) eocd = loose;
    if (eocd < 0) {
      throw NpyException.archive(file, "not a zip archive: no end-of-archive record (PK\\5\\6) in its last "
          + tailLength + " bytes");
    }
    long eocdAt = tailStart + eocd;
    long cdSize = u32(tail, eocd + 12);
    long cdOffset = u32(tail, eocd + 16);
    long cdEnd = eocdAt;
    if (eocdAt >= ZIP64_LOCATOR_SIZE
        && readAt(ch, file, null, eocdAt - ZIP64_LOCATOR_SIZE, 4, "the ZIP64 locator").getInt(0) == ZIP64_LOCATOR_SIG) {
      // ZIP64: the record sits right before its locator, as Python's zipfile expects it
      long recordAt = eocdAt - ZIP64_LOCATOR_SIZE - ZIP64_EOCD_SIZE;
      if (recordAt < 0) {
        throw NpyException.archive(file, "the ZIP64 locator at byte " + (eocdAt - ZIP64_LOCATOR_SIZE)
            + " has no room for its 56-byte ZIP64 end-of-archive record before it");
      }
      ByteBuffer rec = readAt(ch, file, null, recordAt, ZIP64_EOCD_SIZE, "the ZIP64 end-of-archive record");
      if (rec.getInt(0) != ZIP64_EOCD_SIG) {
        throw NpyException.archive(file, String.format("bad ZIP64 end-of-archive signature 0x%08x at byte %d "
            + "(expected 0x%08x, PK\\6\\6)", rec.getInt(0), recordAt, ZIP64_EOCD_SIG));
      }
      cdSize = rec.getLong(40);
      cdOffset = rec.getLong(48);
      cdEnd = recordAt;
    }
    // the directory ends where the end records begin
    long cdStart = cdEnd - cdSize;
    if (cdSize < 0 || cdOffset < 0 || cdStart < 0 || cdSize > Integer.MAX_VALUE - 8) {
      throw NpyException.archive(file, "the central directory (" + Long.toUnsignedString(cdSize) + " bytes at offset "
          + Long.toUnsignedString(cdOffset) + ") does not fit before the end-of-archive record at byte " + cdEnd);
    }
    if (cdStart != cdOffset) {
      // zipfile would take the difference for bytes prepended to the archive, but numpy.load reads only files that
      // start with a zip signature, so an npz has none: the offset is wrong
      throw NpyException.archive(file, "the end-of-archive record at byte " + eocdAt + " puts the central directory at"
          + " byte " + cdOffset + ", but its " + cdSize + " bytes end at byte " + cdEnd + " (so start at " + cdStart + ")");
    }
    ByteBuffer cd = readAt(ch, file, null, cdStart, (int) cdSize, "the central directory");
    List<Member> members = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (int p = 0; p < cdSize; ) {
      long at = cdStart + p;
      if (cdSize - p < CEN_SIZE) {
        throw NpyException.archive(file, "the central directory is truncated at byte " + at + " (" + (cdSize - p)
            + " bytes left, an entry takes at least 46)");
      }
      if (cd.getInt(p) != CEN_SIG) {
        throw NpyException.archive(file, String.format("bad central directory signature 0x%08x at byte %d "
            + "(expected 0x%08x, PK\\1\\2)", cd.getInt(p), at, CEN_SIG));
      }
      int flags = u16(cd, p + 8);
      int method = u16(cd, p + 10);
      long crc = u32(cd, p + 16);
      long compressed = u32(cd, p + 20);
      long uncompressed = u32(cd, p + 24);
      int nameLength = u16(cd, p + 28);
      int extraLength = u16(cd, p + 30);
      int commentLength = u16(cd, p + 32);
      long local = u32(cd, p + 42);
      int next = p + CEN_SIZE + nameLength + extraLength + commentLength;
      if (next > cdSize) {
        throw NpyException.archive(file, "the central directory entry at byte " + at + " runs past the directory's end"
            + " (byte " + (cdStart + cdSize) + ")");
      }
      byte[] rawName = new byte[nameLength];
      cd.get(p + CEN_SIZE, rawName);
      String name = new String(rawName, (flags & 0x800) != 0 ? StandardCharsets.UTF_8 : CP437);
      // ZIP64 extra field (id 1): the 8-byte forms of the fields whose 4-byte form is 0xffffffff, in this order
      int x = p + CEN_SIZE + nameLength;
      int extraEnd = x + extraLength;
      while (x + 4 <= extraEnd) {
        int id = u16(cd, x);
        int length = u16(cd, x + 2);
        if (x + 4 + length > extraEnd) {
          throw new NpyException(file, name, "extra field 0x" + Integer.toHexString(id) + " at byte " + (cdStart + x)
              + " runs past the entry's extra data");
        }
        if (id == 1) {
          int q = x + 4;
          int end = q + length;
          if (uncompressed == U32) q = zip64(cd, q, end, file, name, cdStart, "uncompressed size");
          if (uncompressed == U32) uncompressed = cd.getLong(q - 8);
          if (compressed == U32) q = zip64(cd, q, end, file, name, cdStart, "compressed size");
          if (compressed == U32) compressed = cd.getLong(q - 8);
          if (local == U32) q = zip64(cd, q, end, file, name, cdStart, "local header offset");
          if (local == U32) local = cd.getLong(q - 8);
        }
        x += 4 + length;
      }
      if (!name.endsWith(".npy") || name.endsWith("/")) {
        throw new NpyException(file, name, "not a .npy member (an npz holds only .npy arrays)");
      }
      if (!seen.add(name)) throw new NpyException(file, name, "appears twice in the archive");
      if ((flags & 1) != 0) throw new NpyException(file, name, "is encrypted (numpy.load cannot read it either)");
      if (method != ZipEntry.STORED && method != ZipEntry.DEFLATED) {
        throw new NpyException(file, name, "unsupported compression method " + method + " (central directory entry at"
            + " byte " + at + "); numpy.savez writes stored (0) or deflated (8) members");
      }
      if (compressed < 0 || uncompressed < 0) {
        throw new NpyException(file, name, "declares a size over 2^63 bytes (central directory entry at byte " + at + ")");
      }
      if (method == ZipEntry.STORED && compressed != uncompressed) {
        throw new NpyException(file, name, "is stored (not compressed) but declares " + uncompressed + " bytes in "
            + compressed + " (central directory entry at byte " + at + ")");
      }
      if (method == ZipEntry.DEFLATED && uncompressed > MAX_DEFLATE_RATIO * compressed + 1024) {
        throw new NpyException(file, name, "declares " + uncompressed + " bytes from " + compressed
            + " compressed, more than deflate can produce (corrupt, or a zip bomb; central directory entry at byte "
            + at + ")");
      }
      members.add(new Member(name, rawName, flags, method, crc, compressed, uncompressed, local, at));
      p = next;
    }
    return members;
  }

  /** Python's zipfile reads names without the UTF-8 flag as code page 437; ASCII, which numpy writes, is the same in both. */
  private static final Charset CP437 =
      Charset.isSupported("IBM437") ? Charset.forName("IBM437") : StandardCharsets.ISO_8859_1;

  private static int zip64(ByteBuffer cd, int q, int end, Path file, String name, long cdStart, String field)
      throws NpyException {
    if (q + 8 > end) {
      throw new NpyException(file, name, "the ZIP64 extra field at byte " + (cdStart + q) + " lacks the 8-byte "
          + field + " that the entry's 0xffffffff announces");
    }
    return q + 8;
  }

  /** Checks {@code m}'s local header and returns the byte where its data starts, which lies inside the file. */
  private static long dataStart(FileChannel ch, Path file, long size, Member m) throws IOException {
    long at = m.localHeader();
    if (at < 0 || at > size - LOC_SIZE) {
      throw new NpyException(file, m.name(), "local header offset " + at + " is past the end of the file (" + size
          + " bytes; central directory entry at byte " + m.at() + ")");
    }
    ByteBuffer h = readAt(ch, file, m.name(), at, LOC_SIZE, "the local header");
    if (h.getInt(0) != LOC_SIG) {
      throw new NpyException(file, m.name(), String.format("bad local header signature 0x%08x at byte %d (expected "
          + "0x%08x, PK\\3\\4; the central directory entry at byte %d points there)", h.getInt(0), at, LOC_SIG, m.at()));
    }
    int nameLength = u16(h, 26);
    int extraLength = u16(h, 28);
    long start = at + LOC_SIZE + nameLength + extraLength;
    if (start > size) {
      throw new NpyException(file, m.name(), "the local header at byte " + at + " runs past the end of the file ("
          + size + " bytes)");
    }
    byte[] local = new byte[nameLength];
    readAt(ch, file, m.name(), at + LOC_SIZE, nameLength, "the local header").get(local);
    if (!Arrays.equals(local, m.rawName())) {
      throw new NpyException(file, m.name(), "the local header at byte " + at + " names '"
          + new String(local, StandardCharsets.ISO_8859_1) + "' (central directory and local header differ)");
    }
    if (m.compressed() > size - start) {
      throw new NpyException(file, m.name(), "compressed data truncated: " + m.compressed() + " bytes from byte "
          + start + " run past the end of the file (" + size + " bytes)");
    }
    return start;
  }

  private static ByteBuffer readAt(FileChannel ch, Path file, String member, long position, int length, String what)
      throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
    while (buf.hasRemaining()) {
      if (ch.read(buf, position + buf.position()) < 0) {
        String problem = "the file ended at byte " + (position + buf.position()) + " while reading " + what
            + " (was it changed while being read?)";
        throw member == null ? NpyException.archive(file, problem) : new NpyException(file, member, problem);
      }
    }
    return buf.flip();
  }

  private static int u16(ByteBuffer b, int at) {
    return b.getShort(at) & 0xffff;
  }

  private static long u32(ByteBuffer b, int at) {
    return b.getInt(at) & U32;
  }

  /**
   * A member's bytes, stored or inflated, read straight from the archive: never more than the
   * declared size, and {@link #verifyEnd} checks that the data ends there and has the CRC-32 the
   * directory declares. Every problem is an {@link NpyException} naming the member and the byte.
   */
  private static final class MemberStream extends InputStream {
    private final FileChannel ch;
    private final Path file;
    private final Member m;
    private final long start;
    private final Inflater inflater;
    private final ByteBuffer input;
    private final CRC32 crc = new CRC32();
    private long fed; // compressed bytes handed to the inflater (or read, when stored)
    private long produced;
    private boolean verified;

    MemberStream(FileChannel ch, Path file, Member m, long start) {
      this.ch = ch;
      this.file = file;
      this.m = m;
      this.start = start;
      this.inflater = m.method() == ZipEntry.DEFLATED ? new Inflater(true) : null;
      this.input = ByteBuffer.allocate((int) Math.min(CHUNK, Math.max(1, m.compressed())));
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      int n = read(one, 0, 1);
      return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) return 0;
      if (produced == m.size()) {
        verifyEnd();
        return -1;
      }
      int want = (int) Math.min(len, m.size() - produced);
      int n = inflater == null ? readStored(b, off, want) : inflate(b, off, want);
      crc.update(b, off, n);
      produced += n;
      return n;
    }

    private int readStored(byte[] b, int off, int len) throws IOException {
      int n = ch.read(ByteBuffer.wrap(b, off, len), start + fed);
      if (n <= 0) throw truncated(start + fed);
      fed += n;
      return n;
    }

    private int inflate(byte[] b, int off, int len) throws IOException {
      try {
        while (true) {
          int n = inflater.inflate(b, off, len);
          if (n > 0) return n;
          if (inflater.finished()) {
            throw new NpyException(file, m.name(), "inflates to " + produced + " bytes but the archive declares "
                + m.size() + " (the deflate stream ends at byte " + (start + inflater.getBytesRead()) + ")");
          }
          if (inflater.needsDictionary()) {
            throw new NpyException(file, m.name(), "the deflate stream at byte " + start
                + " asks for a preset dictionary, which zip members never use");
          }
          if (!feed()) throw truncated(start + fed);
        }
      } catch (DataFormatException e) {
        throw new NpyException(file, m.name(), "corrupt deflate data near byte " + (start + inflater.getBytesRead())
            + " (" + e.getMessage() + ")");
      }
    }

    /** Hands the inflater the next compressed chunk; false when the member's compressed bytes are used up. */
    private boolean feed() throws IOException {
      long left = m.compressed() - fed;
      if (left <= 0) return false;
      input.clear().limit((int) Math.min(input.capacity(), left));
      while (input.hasRemaining()) {
        if (ch.read(input, start + fed + input.position()) < 0) throw truncated(start + fed + input.position());
      }
      fed += input.position();
      inflater.setInput(input.flip());
      return true;
    }

    @Override
    public void close() {
      if (inflater != null) inflater.end();
    }

    private NpyException truncated(long at) {
      return new NpyException(file, m.name(), "compressed data truncated at byte " + at + ": " + m.compressed()
          + " compressed bytes from byte " + start + " gave " + produced + " of the " + m.size() + " declared");
    }

    /** Checks, once all the declared bytes were read, that the data ends there and its CRC-32 matches. */
    void verifyEnd() throws IOException {
      if (verified) return;
      if (produced != m.size()) throw new IllegalStateException("verifyEnd before the member was read");
      if (inflater != null) {
        // the stream should end here; like zipfile, accept one that stops without its end marker, but not more data
        byte[] probe = new byte[1];
        try {
          while (!inflater.finished()) {
            if (inflater.inflate(probe) > 0) {
              throw new NpyException(file, m.name(), "inflates to more than the " + m.size()
                  + " bytes the archive declares (at byte " + (start + inflater.getBytesRead()) + ")");
            }
            if (inflater.needsInput() && !feed()) break;
            if (inflater.needsDictionary()) break;
          }
        } catch (DataFormatException e) {
          throw new NpyException(file, m.name(), "corrupt deflate data near byte " + (start + inflater.getBytesRead())
              + " (" + e.getMessage() + ")");
        }
      }
      if (crc.getValue() != m.crc()) {
        throw new NpyException(file, m.name(), String.format("CRC-32 mismatch: the data from byte %d has 0x%08x, the"
            + " central directory entry at byte %d declares 0x%08x", start, crc.getValue(), m.at(), m.crc()));
      }
      verified = true;
    }
  }
}
