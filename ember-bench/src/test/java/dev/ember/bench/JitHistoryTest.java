package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The JIT-history repro: its cases run in the order given, each printing its medians, and a bad name is refused. */
class JitHistoryTest {
  @Test
  void runsEachCaseInOrderAndPrintsItsMedians() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    JitHistory.run(List.of("b1pruned", "b1"), 0.6, new PrintStream(bytes, true, StandardCharsets.UTF_8));
    String[] lines = bytes.toString(StandardCharsets.UTF_8).strip().split("\n");
    assertEquals(6, lines.length, String.join("\n", lines));
    assertTrue(lines[0].startsWith("b1pruned  median of the last"), lines[0]);
    assertTrue(lines[3].startsWith("b1        median of the last"), lines[3]);
    assertTrue(lines[1].startsWith("  wall us/call per 0.5 s: ") && lines[2].startsWith("  cpu  us/call per 0.5 s: "));
  }

  @Test
  void refusesAnUnknownCaseBeforeRunningAny() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> JitHistory.run(List.of("b1", "b64"), 0.6, new PrintStream(new ByteArrayOutputStream())));
    assertEquals("JitHistory: unknown case b64 (one of [b1, b1pruned, b128])", e.getMessage());
  }
}
