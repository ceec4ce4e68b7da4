package dev.ember.train.report;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A file of a run folder (metrics CSV, JSON or JSON-lines output of the callbacks) that cannot be
 * read as what it should be: it names the file and the byte offset (or line) where reading failed.
 */
public final class RunFileException extends IOException {
  private final transient Path file;
  private final long offset;

  /** {@code offset} is the byte offset of the problem in {@code file} (-1 when it concerns the whole file). */
  public RunFileException(Path file, long offset, String message) {
    super(file + (offset >= 0 ? " at byte " + offset : "") + ": " + message);
    this.file = file;
    this.offset = offset;
  }

  /** The file that could not be read. */
  public Path file() {
    return file;
  }

  /** Byte offset of the problem, or -1 when it concerns the whole file. */
  public long offset() {
    return offset;
  }
}
