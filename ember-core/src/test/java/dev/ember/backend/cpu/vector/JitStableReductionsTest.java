package dev.ember.backend.cpu.vector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.testing.SourceTree;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * No floating-point {@code reduceLanes(ADD)} or {@code reduceLanes(MUL)} in main code: the Java fallback adds the
 * lanes in lane order, C2's intrinsic in another order, so a kernel's last bits would change when C2 compiles it
 * (VectorAttention's row sums did, and CI caught a fused forward that differed from the same forward run earlier).
 * Kernels add a vector's lanes in lane order instead. An integer reduction is exact, so a line that converts to
 * {@code IntVector}, {@code LongVector} or {@code ShortVector} before reducing is allowed. The walk reads every
 * module's {@code src/main/java} from the repository root ({@link SourceTree}).
 */
class JitStableReductionsTest {
  private static final Pattern FLOAT_REDUCTION = Pattern.compile("reduceLanes\\(\\s*(VectorOperators\\.)?(ADD|MUL)\\b");
  private static final Pattern INTEGER_VECTOR = Pattern.compile("\\((Int|Long|Short|Byte)Vector\\)");

  /** "path:line: text" for each floating-point additive or multiplicative lane reduction under root's modules. */
  static List<String> offenders(Path root) throws IOException {
    List<String> found = new ArrayList<>();
    for (Path f : SourceTree.mainSources(root)) {
      List<String> lines = Files.readAllLines(f);
      for (int i = 0; i < lines.size(); i++) {
        String code = lines.get(i).replaceAll("//.*", "").strip();
        if (code.startsWith("*") || code.startsWith("/*")) continue; // a doc comment's line
        if (FLOAT_REDUCTION.matcher(code).find() && !INTEGER_VECTOR.matcher(code).find()) {
          found.add(root.relativize(f) + ":" + (i + 1) + ": " + lines.get(i).strip());
        }
      }
    }
    return found;
  }

  @Test
  void mainCodeHasNoFloatingPointLaneSums() throws IOException {
    Path root = SourceTree.root();
    assertTrue(Files.isRegularFile(root.resolve("ember-core/src/main/java/dev/ember/backend/cpu/vector/VectorAttention.java")));
    assertEquals(List.of(), offenders(root), "floating-point reduceLanes(ADD/MUL): add the lanes in lane order");
  }

  @Test
  void theScanCatchesAFloatSumAndAllowsIntegerSumsAndComments(@TempDir Path tmp) throws IOException {
    Path f = tmp.resolve("m/src/main/java/x/K.java");
    Files.createDirectories(f.getParent());
    Files.writeString(f, String.join("\n",
        "float a = v.reduceLanes(ADD);",
        "int b = ((IntVector) c.convert(F2I, 0)).reduceLanes(VectorOperators.ADD);",
        "// reduceLanes(ADD) rounds differently once compiled",
        " * never reduceLanes(ADD), whose rounding changes",
        "double c = d.reduceLanes(VectorOperators.MUL);",
        "float m = v.reduceLanes(MAX);"));
    Path test = tmp.resolve("m/src/test/java/x/KTest.java");
    Files.createDirectories(test.getParent());
    Files.writeString(test, "float a = v.reduceLanes(ADD);");
    assertEquals(List.of("m/src/main/java/x/K.java:1: float a = v.reduceLanes(ADD);",
        "m/src/main/java/x/K.java:5: double c = d.reduceLanes(VectorOperators.MUL);"), offenders(tmp));
  }
}
