package dev.ember.train.report;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Replaces a file so that a reader sees the old content or the complete new one, never half of
 * it: the text goes to a hidden temporary file in the same folder ({@code .<name>.<random>.tmp}),
 * is flushed to disk and renamed over the target in one step. On failure the temporary file is
 * removed and the target is left as it was.
 */
public final class AtomicFile {
  private AtomicFile() {}

  /** Writes {@code text} as UTF-8 to {@code target} atomically, creating its folder if needed. */
  public static void write(Path target, String text) throws IOException {
    write(target, text.getBytes(StandardCharsets.UTF_8));
  }

  /** Writes {@code bytes} to {@code target} atomically, creating its folder if needed. */
  public static void write(Path target, byte[] bytes) throws IOException {
    Path abs = target.toAbsolutePath();
    Path dir = abs.getParent();
    Files.createDirectories(dir);
    Path tmp = createTemp(dir, abs.getFileName().toString());
    try {
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        while (buf.hasRemaining()) ch.write(buf);
        ch.force(true);
      }
      Files.move(tmp, abs, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException | RuntimeException | Error e) {
      try {
        Files.deleteIfExists(tmp);
      } catch (IOException cleanup) {
        e.addSuppressed(cleanup);
      }
      throw e;
    }
  }

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
}
