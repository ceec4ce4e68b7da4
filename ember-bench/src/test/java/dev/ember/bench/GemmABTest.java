package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.cpu.vector.VectorGemm;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The two-build GEMM A/B: shapes, its records, and the errors for bad shapes and builds. */
class GemmABTest {
  private static File core() throws Exception {
    return new File(VectorGemm.class.getProtectionDomain().getCodeSource().getLocation().toURI());
  }

  @Test
  void timesEachShapeOnBothBuildsAndPrintsOneRecordPerShape() throws Throwable {
    List<GemmAB.Shape> shapes = List.of(GemmAB.Shape.parse("40x30x20"), GemmAB.Shape.parse("30x40x50:tn"),
        GemmAB.Shape.parse("20x30x40:nt"));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    List<GemmAB.Result> results = GemmAB.run(core(), core(), shapes, 0.05,
        new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(log, true, StandardCharsets.UTF_8));
    String[] lines = out.toString(StandardCharsets.UTF_8).strip().split("\n");
    assertEquals(3, lines.length);
    for (int i = 0; i < 3; i++) {
      GemmAB.Result r = results.get(i);
      assertTrue(r.sameBits(), "one build on both sides must give the same bits: " + r);
      assertTrue(r.rounds() >= 1 && r.oldGflops() > 0 && r.newGflops() > 0, r.toString());
      Map<?, ?> rec = (Map<?, ?>) Report.parseJson(lines[i]);
      assertEquals("gemm-ab", rec.get("category"));
      assertEquals(shapes.get(i).text(), rec.get("case"));
      assertEquals(true, rec.get("same_bits"));
      assertEquals((long) r.rounds(), rec.get("rounds"));
      assertEquals(r.newGflops() / r.oldGflops(), (Double) rec.get("ratio"), 1e-3);
      assertTrue(r.oldCpuGflops() > 0 && r.newCpuGflops() > 0, r.toString());
      assertEquals(r.newCpuGflops() / r.oldCpuGflops(), (Double) rec.get("ratio_cpu"), 1e-3);
      assertEquals(r.oldCpuGflops(), (Double) rec.get("old_cpu"), 0.01);
    }
    assertTrue(log.toString(StandardCharsets.UTF_8).contains("30x40x50:tn"));
  }

  @Test
  void parsesTheThreeLayouts() {
    assertEquals(new GemmAB.Shape("2048x32x2048:tn", 2048, 32, 2048, true, false),
        GemmAB.Shape.parse("2048x32x2048:tn"));
    assertEquals(new GemmAB.Shape("32x2048x2048:nt", 32, 2048, 2048, false, true),
        GemmAB.Shape.parse("32x2048x2048:nt"));
    assertEquals(new GemmAB.Shape("3x4x5", 3, 4, 5, false, false), GemmAB.Shape.parse("3x4x5"));
  }

  @Test
  void rejectsBadShapesNamingThem() {
    for (String bad : new String[] {"12x3", "3x4x5x6", "3x4x5:tt", "3x4x5:nn:tn", "0x4x5", "3xbx5"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GemmAB.Shape.parse(bad));
      assertTrue(e.getMessage().startsWith("GemmAB: bad shape '" + bad + "'"), e.getMessage());
    }
    assertEquals("GemmAB: bad shape '3xbx5': dimension 'b' is not a positive integer",
        assertThrows(IllegalArgumentException.class, () -> GemmAB.Shape.parse("3xbx5")).getMessage());
  }

  @Test
  void rejectsABuildThatIsMissingOrHasNoGemm(@TempDir Path dir) throws Exception {
    File missing = dir.resolve("nope").toFile();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> GemmAB.run(missing, core(), List.of(), 0, System.out, System.err));
    assertEquals("GemmAB: " + missing + " does not exist (an ember-core target/classes or jar)", e.getMessage());
    File empty = Files.createDirectory(dir.resolve("empty")).toFile();
    e = assertThrows(IllegalArgumentException.class,
        () -> GemmAB.run(core(), empty, List.of(), 0, System.out, System.err));
    assertEquals("GemmAB: " + empty + " holds no dev.ember.backend.cpu.vector.VectorGemm", e.getMessage());
  }
}
