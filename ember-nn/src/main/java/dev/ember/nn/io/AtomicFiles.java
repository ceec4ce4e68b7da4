package dev.ember.nn.io;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Pattern;

/**
 * Writes a file so that a reader sees either the old content or the complete new one, never half
 * a file: the bytes go to a temporary file in the same folder (so the rename stays on one file
 * system), which is flushed to disk ({@code fsync}) and then renamed over the target in one atomic
 * step; the folder is flushed too, so that the rename survives a crash. On any failure the
 * temporary file is deleted and the target is left as it was.
 */
public final class AtomicFiles {
  private AtomicFiles() {}

  /** Writes the whole content to a freshly created, empty channel. */
  @FunctionalInterface
  public interface Body {
    void writeTo(FileChannel channel) throws IOException;
  }

  /** Writes {@code text} as UTF-8 to {@code target} atomically, creating its folder if needed. */
  public static void write(Path target, String text) throws IOException {
    write(target, text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  /** Writes {@code bytes} to {@code target} atomically, creating its folder if needed. */
  public static void write(Path target, byte[] bytes) throws IOException {
    Path parent = target.toAbsolutePath().getParent();
    if (parent != null) Files.createDirectories(parent);
    write(target, ch -> {
      java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(bytes);
      while (buf.hasRemaining()) ch.write(buf);
    });
  }

  /** Writes what {@code body} puts in the channel to {@code target} atomically. */
  public static void write(Path target, Body body) throws IOException {
    Path abs = target.toAbsolutePath();
    Path dir = abs.getParent();
    Path tmp = createTemp(dir, abs.getFileName().toString());
    try {
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
        body.writeTo(ch);
        ch.force(true);
      }
      Files.move(tmp, abs, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (Throwable t) {
      try {
        Files.deleteIfExists(tmp);
      } catch (IOException cleanup) {
        t.addSuppressed(cleanup);
      }
      throw t;
    }
    syncDirectory(dir);
  }

  /** The name of {@link #createTemp}'s files: {@code .<target name>.<random hex>.tmp}. */
  private static final Pattern TEMPORARY = Pattern.compile("\\..+\\.[0-9a-f]{1,16}\\.tmp");

  /**
   * Whether {@code file} is named as this class's temporary file, which only a process killed
   * while writing leaves behind.
   */
  public static boolean isTemporary(Path file) {
    return TEMPORARY.matcher(file.getFileName().toString()).matches();
  }

  /** A new empty file named {@code .<name>.<random>.tmp} beside the target (hidden, and recognisable if a crash leaves it). */
  private static Path createTemp(Path dir, String name) throws IOException {
    for (int attempt = 0; ; attempt++) {
      Path tmp = dir.resolve("." + name + "." + Long.toHexString(ThreadLocalRandom.current().nextLong()) + ".tmp");
      try {
        FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE).close();
        return tmp;
      } catch (FileAlreadyExistsException e) {
        if (attempt >= 100) throw e;
      }
    }
  }

  /** Flushes the folder entry of the rename; not every platform can open a folder, so failure is ignored. */
  private static void syncDirectory(Path dir) {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException e) {
      // Windows cannot open a directory as a channel; the rename is still atomic there
    }
  }
}
