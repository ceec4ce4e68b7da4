package dev.ember.train;

import java.io.IOException;
import java.nio.file.Path;

/** A checkpoint file that cannot be used: not a checkpoint, corrupt (checksum mismatch), or of another format version. */
public final class CheckpointException extends IOException {
  private final transient Path file;

  public CheckpointException(Path file, String problem) {
    super("checkpoint " + file + ": " + problem);
    this.file = file;
  }

  public CheckpointException(Path file, String problem, Throwable cause) {
    super("checkpoint " + file + ": " + problem, cause);
    this.file = file;
  }

  /** The offending file. */
  public Path file() {
    return file;
  }
}
