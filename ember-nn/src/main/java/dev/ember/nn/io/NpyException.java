package dev.ember.nn.io;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A NumPy {@code .npy} or {@code .npz} file that cannot be read: bad magic or version, a header that
 * is not the dict NumPy writes, a dtype Ember does not hold, data that does not match dtype x shape,
 * or (npz) a zip archive that is corrupt, has duplicate or non-.npy members, or declares sizes that
 * cannot be true; or arrays that need more heap than the JVM has ({@link #exceedsHeap()}), found
 * from the headers before anything is allocated. The message reads {@code npy: <file>: <problem>}
 * or {@code npz: <file>: member '<name>': <problem>}, and names the byte where there is one, e.g.
 * <pre>
 * npy: w.npy: data holds 20 bytes but '&lt;f4' (2, 3) needs 24
 * npz: w.npz: member 'b.npy': unsupported dtype '&lt;c8' (Ember reads &lt;f4 &lt;f8 &lt;f2 &lt;i8 &lt;i4 |b1, either byte order)
 * npz: w.npz: member 'w.npy': bad local header signature 0x00000000 at byte 7 (expected 0x04034b50, PK\3\4)
 * </pre>
 */
public class NpyException extends IOException {
  private final transient Path file;
  private final String member;
  private final String problem;
  private final boolean exceedsHeap;

  /** @param member the npz member concerned, or null for a .npy file */
  public NpyException(Path file, String member, String problem) {
    this(file, member, problem, member != null, false);
  }

  private NpyException(Path file, String member, String problem, boolean npz, boolean exceedsHeap) {
    super(format(file, member, problem, npz));
    this.file = file;
    this.member = member;
    this.problem = problem;
    this.exceedsHeap = exceedsHeap;
  }

  /** A problem with an npz archive as a whole (not one member). */
  static NpyException archive(Path file, String problem) {
    return new NpyException(file, null, problem, true, false);
  }

  /** A valid file whose arrays need more heap than there is; {@code npz} picks the message's prefix. */
  static NpyException heap(Path file, String member, String problem, boolean npz) {
    return new NpyException(file, member, problem, npz, true);
  }

  private static String format(Path file, String member, String problem, boolean npz) {
    StringBuilder sb = new StringBuilder(npz ? "npz: " : "npy: ").append(file).append(": ");
    if (member != null) sb.append("member '").append(member).append("': ");
    return sb.append(problem).toString();
  }

  public Path file() {
    return file;
  }

  /** The npz member concerned, or null. */
  public String member() {
    return member;
  }

  /**
   * Whether the file is refused only because its arrays need more heap than the JVM can give (the
   * message says how much): a larger heap (-Xmx) reads it.
   */
  public boolean exceedsHeap() {
    return exceedsHeap;
  }

  /** The problem alone, without the file and member. */
  public String problem() {
    return problem;
  }
}
