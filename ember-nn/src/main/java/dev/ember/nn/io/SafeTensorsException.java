package dev.ember.nn.io;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A safetensors file that cannot be read: it is truncated, its header is malformed or inconsistent
 * with its data, or it holds a dtype Ember does not read. The message reads
 * {@code safetensors: <file>: [byte <n>: ][tensor '<name>': ]<problem>}, for example
 * <pre>
 * safetensors: w.safetensors: header length 9999999999 exceeds the 100000000-byte cap
 * safetensors: w.safetensors: byte 31: tensor 'w': data_offsets [0, 12] hold 12 bytes but F32 [2, 2] needs 16
 * safetensors: w.safetensors: byte 57: expected ',' or '}' after a member, found 'x'
 * </pre>
 * and the parts are also kept as fields ({@link #file()}, {@link #reason()}, {@link #byteOffset()},
 * {@link #tensor()}) so that callers and tests need not parse it.
 */
public class SafeTensorsException extends IOException {
  /** What kind of problem was found, coarse enough to branch on. */
  public enum Reason {
    /** The file ends before the 8-byte header length, the header or the data it announces. */
    TRUNCATED,
    /**
     * The announced header length exceeds {@link SafeTensors#MAX_HEADER_BYTES}, or reading or
     * parsing the header (so many tensors) needs more heap than the JVM has.
     */
    HEADER_TOO_LARGE,
    /** The header is not well-formed JSON (or not valid UTF-8). */
    MALFORMED_JSON,
    /** The JSON is well-formed but not a valid safetensors header (types, fields, names, metadata). */
    INVALID_HEADER,
    /** A well-formed dtype that Ember does not read (F16, BF16, I8, U8, ...). */
    UNSUPPORTED_DTYPE,
    /** Data offsets that do not tile the data section exactly, or that disagree with dtype x shape. */
    INVALID_OFFSETS,
    /** Bytes after the last tensor's data. */
    TRAILING_BYTES,
    /** Tensor data that is not a valid value of its dtype (a BOOL byte other than 0 or 1). */
    INVALID_DATA,
    /** A tensor larger than one Ember tensor can hold. */
    TOO_LARGE_FOR_EMBER,
    /** A {@code __metadata__} larger than {@link SafeTensors#MAX_METADATA_BYTES}. */
    METADATA_TOO_LARGE,
    /**
     * A valid file whose tensors need more heap than the JVM can give, found from the header before
     * they are allocated; the message says how much. A larger heap (-Xmx) reads it.
     */
    EXCEEDS_HEAP
  }

  private final transient Path file;
  private final Reason reason;
  private final long byteOffset;
  private final String tensor;
  private final String problem;

  /**
   * @param byteOffset offset in the file where the problem is, or -1 if it has no single place
   * @param tensor the tensor concerned, or null
   */
  public SafeTensorsException(Path file, Reason reason, long byteOffset, String tensor, String problem) {
    super(format(file, byteOffset, tensor, problem));
    this.file = file;
    this.reason = reason;
    this.byteOffset = byteOffset;
    this.tensor = tensor;
    this.problem = problem;
  }

  private static String format(Path file, long byteOffset, String tensor, String problem) {
    StringBuilder sb = new StringBuilder("safetensors: ").append(file).append(": ");
    if (byteOffset >= 0) sb.append("byte ").append(byteOffset).append(": ");
    if (tensor != null) sb.append("tensor '").append(tensor).append("': ");
    return sb.append(problem).toString();
  }

  public Path file() {
    return file;
  }

  public Reason reason() {
    return reason;
  }

  /** Where in the file the problem is, when it has one place. */
  public OptionalLong byteOffset() {
    return byteOffset >= 0 ? OptionalLong.of(byteOffset) : OptionalLong.empty();
  }

  /** The tensor the problem concerns, when it concerns one. */
  public Optional<String> tensor() {
    return Optional.ofNullable(tensor);
  }

  /** The problem alone, without the file, offset and tensor prefix. */
  public String problem() {
    return problem;
  }
}
