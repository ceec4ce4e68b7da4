package dev.ember.nn.io;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A NumPy {@code .npy} or {@code .npz} file that cannot be read: bad magic or version, a header that
 * is not the dict NumPy writes, a dtype Ember does not hold, data that does not match dtype x shape,
 * or (npz) a zip archive that is corrupt, has duplicate or non-.npy members, or declares sizes that
 * cannot be true. The message reads {@code npy: <file>: <problem>} or
 * {@code npz: <file>: member '<name>': <problem>}, e.g.
 * <pre>
 * npy: w.npy: data holds 20 bytes but '&lt;f4' (2, 3) needs 24
 * npz: w.npz: member 'b.npy': unsupported dtype '&lt;f2' (Ember reads &lt;f4 &lt;f8 &lt;i8 &lt;i4 |b1, either byte order)
 * </pre>
 */
public class NpyException extends IOException {
  private final transient Path file;
  private final String member;
  private final String problem;

  /** @param member the npz member concerned, or null for a .npy file */
  public NpyException(Path file, String member, String problem) {
    this(file, member, problem, member != null);
  }

  private NpyException(Path file, String member, String problem, boolean npz) {
    super(format(file, member, problem, npz));
    this.file = file;
    this.member = member;
    this.problem = problem;
  }

  /** A problem with an npz archive as a whole (not one member). */
  static NpyException archive(Path file, String problem) {
    return new NpyException(file, null, problem, true);
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

  /** The problem alone, without the file and member. */
  public String problem() {
    return problem;
  }
}
