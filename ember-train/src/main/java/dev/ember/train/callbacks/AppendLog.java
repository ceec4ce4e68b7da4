package dev.ember.train.callbacks;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.zip.CRC32;

/**
 * A text file that grows one line at a time and can be continued after a resume: it counts the
 * lines and bytes written and keeps a CRC-32 of them. {@link #state()} records those three numbers;
 * a resumed run checks that the file still starts with exactly those bytes and cuts off anything
 * after them (lines the interrupted run wrote after its checkpoint), so no line is lost or
 * written twice. Each line goes straight to the file (no buffering in the JVM).
 */
final class AppendLog {
  private final String owner;
  private final Path file;
  private FileChannel channel;
  private long lines;
  private long bytes;
  private final CRC32 crc = new CRC32();
  private Map<String, Object> restored;

  AppendLog(String owner, Path file) {
    if (file == null) throw new IllegalArgumentException(owner + ": file must not be null");
    this.owner = owner;
    this.file = file;
  }

  Path file() {
    return file;
  }

  long lines() {
    return lines;
  }

  /** Starts writing: a fresh run empties the file, a restored one verifies and keeps the recorded prefix. */
  void open() {
    close();
    try {
      Path parent = file.toAbsolutePath().getParent();
      if (parent != null) Files.createDirectories(parent);
      channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.READ);
      crc.reset();
      if (restored == null) {
        channel.truncate(0);
        lines = 0;
        bytes = 0;
      } else {
        verifyPrefix(((Number) restored.get("lines")).longValue(), ((Number) restored.get("bytes")).longValue(),
            ((Number) restored.get("crc32")).longValue());
        restored = null;
      }
      channel.position(bytes);
    } catch (IOException e) {
      close();
      throw new UncheckedIOException(owner + ": cannot open " + file + " for writing", e);
    }
  }

  private void verifyPrefix(long wantLines, long wantBytes, long wantCrc) throws IOException {
    long size = channel.size();
    if (size < wantBytes) {
      throw new IllegalStateException(owner + ": cannot continue " + file + ": the checkpoint recorded " + wantLines
          + " lines (" + wantBytes + " bytes) but the file holds only " + size + " bytes; it was truncated or replaced"
          + " since the checkpoint; hint: restore the file or start the run afresh");
    }
    long gotLines = 0;
    try (InputStream in = Files.newInputStream(file)) {
      byte[] buf = new byte[1 << 16];
      long left = wantBytes;
      while (left > 0) {
        int n = in.read(buf, 0, (int) Math.min(buf.length, left));
        if (n < 0) break;
        crc.update(buf, 0, n);
        for (int k = 0; k < n; k++) if (buf[k] == '\n') gotLines++;
        left -= n;
      }
    }
    if (gotLines != wantLines || crc.getValue() != wantCrc) {
      throw new IllegalStateException(owner + ": cannot continue " + file + ": its first " + wantBytes
          + " bytes are not the " + wantLines + " lines the checkpoint recorded (found " + gotLines + " lines, crc32 "
          + Long.toHexString(crc.getValue()) + " vs " + Long.toHexString(wantCrc) + "); the file was changed since the"
          + " checkpoint; hint: restore the file or start the run afresh");
    }
    channel.truncate(wantBytes);
    lines = wantLines;
    bytes = wantBytes;
  }

  /** Appends {@code line} and a line break; the line must not contain one itself. */
  void append(CharSequence line) {
    if (channel == null) open();
    byte[] b = (line + "\n").getBytes(StandardCharsets.UTF_8);
    try {
      ByteBuffer buf = ByteBuffer.wrap(b);
      while (buf.hasRemaining()) channel.write(buf);
    } catch (IOException e) {
      throw new UncheckedIOException(owner + ": writing line " + (lines + 1) + " of " + file + " failed", e);
    }
    crc.update(b);
    lines++;
    bytes += b.length;
  }

  void close() {
    if (channel == null) return;
    try {
      channel.close();
    } catch (IOException e) {
      throw new UncheckedIOException(owner + ": closing " + file + " failed", e);
    } finally {
      channel = null;
    }
  }

  /** Lines, bytes and CRC-32 written so far. */
  Map<String, Object> state() {
    return Map.of("lines", lines, "bytes", bytes, "crc32", crc.getValue());
  }

  /** Takes a {@link #state()}; the next {@link #open()} continues after those lines. */
  void load(Map<String, Object> state) {
    if (!(state.get("lines") instanceof Number l) || !(state.get("bytes") instanceof Number b)
        || !(state.get("crc32") instanceof Number c) || l.longValue() < 0 || b.longValue() < l.longValue()) {
      throw new IllegalArgumentException(owner + ".loadStateDict: expected lines, bytes and crc32 (numbers, bytes >= lines >= 0),"
          + " got " + state + "; file=" + file);
    }
    restored = Map.of("lines", l, "bytes", b, "crc32", c);
    close();
  }
}
