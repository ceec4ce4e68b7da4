package dev.ember.train;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A checkpoint file that cannot be used, saying why: truncated (at how many of how many bytes),
 * not a checkpoint (bad framing, no format tag), an unknown format version, an unparsable header
 * (at which byte), or a checksum mismatch (expected and computed). The message reads
 * {@code checkpoint <file>: <problem>}; {@link #problem()} is the part after the file.
 */
public final class CheckpointException extends IOException {
  private final transient Path file;
  private final String problem;

  public CheckpointException(Path file, String problem) {
    super("checkpoint " + file + ": " + problem);
    this.file = file;
    this.problem = problem;
  }

  public CheckpointException(Path file, String problem, Throwable cause) {
    super("checkpoint " + file + ": " + problem, cause);
    this.file = file;
    this.problem = problem;
  }

  /** The offending file. */
  public Path file() {
    return file;
  }

  /** What is wrong with it, without the file's name, e.g. {@code truncated at 1,204,224 of 2,409,001 bytes}. */
  public String problem() {
    return problem;
  }
}
