package dev.ember.data;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A data file that cannot be read: wrong magic, a header whose sizes cannot be true, data shorter
 * or longer than the header declares, corrupt compression, or (CSV) a missing or non-numeric value.
 * Readers throw it before allocating anything sized by the file. The message reads
 * {@code <format>: <file>: at byte <offset>: <problem>}, or for text files
 * {@code csv: <file>: line <l>, column <c>: <problem>}, for example
 * <pre>
 * idx: train-images-idx3-ubyte: at byte 4: dims [2147483648, 2147483648] hold 4611686018427387904 elements, more than ...
 * csv: iris.csv: line 12, column 3 ('petal_length'): 'abc' is not a number
 * </pre>
 * For a compressed file the offset counts bytes of the decompressed data.
 */
public class DataFormatException extends IOException {
  private final String format;
  private final transient Path file;
  private final long offset;
  private final long line;
  private final int column;
  private final String problem;

  private DataFormatException(String format, Path file, long offset, long line, int column, String where, String problem,
      Throwable cause) {
    super(format + ": " + file + ": " + (where.isEmpty() ? "" : where + ": ") + problem, cause);
    this.format = format;
    this.file = file;
    this.offset = offset;
    this.line = line;
    this.column = column;
    this.problem = problem;
  }

  /** A problem at byte {@code offset} of a binary file ({@code offset < 0}: not tied to one position). */
  public static DataFormatException at(String format, Path file, long offset, String problem) {
    return new DataFormatException(format, file, offset, -1, -1, offset >= 0 ? "at byte " + offset : "", problem, null);
  }

  /** As {@link #at(String, Path, long, String)}, caused by a lower-level failure (e.g. corrupt gzip data). */
  public static DataFormatException at(String format, Path file, long offset, String problem, Throwable cause) {
    return new DataFormatException(format, file, offset, -1, -1, offset >= 0 ? "at byte " + offset : "", problem, cause);
  }

  /**
   * A problem in a text file at {@code line} (from 1) and {@code column} (from 1; 0: the line as a
   * whole), described as {@code columnName} when known; {@code offset} is the line's first byte.
   */
  public static DataFormatException atLine(String format, Path file, long offset, long line, int column, String columnName,
      String problem) {
    String where = "line " + line + (column > 0 ? ", column " + column + (columnName == null ? "" : " ('" + columnName + "')") : "");
    return new DataFormatException(format, file, offset, line, column, where, problem, null);
  }

  /** The format being read ({@code idx}, {@code csv}, {@code npy}, {@code fashion-mnist}). */
  public String format() {
    return format;
  }

  /** The file being read. */
  public Path file() {
    return file;
  }

  /** The byte offset of the problem (of the decompressed data for a .gz file), or -1 when not tied to one. */
  public long offset() {
    return offset;
  }

  /** The line of a text file (from 1), or -1. */
  public long line() {
    return line;
  }

  /** The column of a text file (from 1), 0 for the line as a whole, or -1. */
  public int column() {
    return column;
  }

  /** The problem alone, without the file and position. */
  public String problem() {
    return problem;
  }
}
