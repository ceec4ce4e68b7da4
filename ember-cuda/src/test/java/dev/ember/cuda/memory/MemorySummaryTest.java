package dev.ember.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link CachingAllocator#memorySummary}: torch.cuda.memory_summary's table, with its units and widths. */
class MemorySummaryTest {
  static final long MiB = 1L << 20;

  @Test
  void tableShowsEachCounterPerPoolInAlignedColumns() {
    CachingAllocator alloc = new CachingAllocator(3, new FakeRawMemory(1L << 40), new FakeStreamEvents());
    Block a = alloc.allocate(1000, 1);
    Block b = alloc.allocate(5 * MiB, 1);
    alloc.free(b);
    String summary = alloc.memorySummary();
    List<String> lines = summary.lines().toList();
    for (String line : lines) {
      assertEquals(77, line.length(), "every line is 75 wide between bars: '" + line + "'");
    }
    assertTrue(lines.get(1).contains("Ember CUDA memory summary, device ID 3"), lines.get(1));
    assertTrue(lines.get(3).contains("CUDA OOMs: 0"), lines.get(3));
    assertTrue(lines.get(3).contains("cuMemAlloc retries: 0"), lines.get(3));
    // Units follow the all-pools value of each column: 1024 B now, a 5 MiB peak shown in KiB.
    assertTrue(lines.contains(
        "| Allocated memory      |   1024 B   |   5121 KiB |   5121 KiB |   5120 KiB |"), summary);
    assertTrue(lines.contains(
        "|       from large pool |      0 B   |   5120 KiB |   5120 KiB |   5120 KiB |"), summary);
    assertTrue(lines.contains(
        "|       from small pool |   1024 B   |      1 KiB |      1 KiB |      0 KiB |"), summary);
    assertTrue(lines.contains(
        "| GPU reserved memory   |  22528 KiB |  22528 KiB |  22528 KiB |      0 B   |"), summary);
    assertTrue(lines.contains(
        "| Allocations           |       1    |       2    |       2    |       1    |"), summary);
    assertTrue(lines.contains(
        "| GPU reserved segments |       2    |       2    |       2    |       0    |"), summary);
    assertTrue(lines.contains(
        "| Oversize allocations  |       0    |       0    |       0    |       0    |"), summary);
    assertTrue(lines.contains(
        "| Device allocs/frees   | 2 / 0                                             |"), summary);
    alloc.free(a);
  }

  @Test
  void unitsAndCountsScaleAsTorchDoes() {
    // A unit is taken while the column's reference value is 768 or more of it (so 75 GiB shows in MiB).
    assertEquals("785408 B  ", MemorySummary.size(767 * 1024, 767 * 1024));
    assertEquals("   768 KiB", MemorySummary.size(768 * 1024, 768 * 1024));
    assertEquals(" 76800 MiB", MemorySummary.size(75L << 30, 75L << 30));
    assertEquals("   800 GiB", MemorySummary.size(800L << 30, 800L << 30));
    assertEquals("     0 GiB", MemorySummary.size(1 << 20, 800L << 30));
    assertEquals("   512 B  ", MemorySummary.size(512, 512));
    assertEquals(" 749999   ", MemorySummary.count(749_999, 749_999));
    assertEquals("   1500 K ", MemorySummary.count(1_500_000, 1_500_000));
    assertEquals("      0 K ", MemorySummary.count(10, 1_500_000));
  }
}
