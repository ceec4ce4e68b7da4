package dev.ember.cuda.memory;

import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/** The text table of {@link CachingAllocator#memorySummary}, laid out as {@code torch.cuda.memory_summary}'s. */
final class MemorySummary {
  private static final int WIDTH = 75;

  private record Row(String name, Function<PoolStats, Stat> stat, boolean bytes) {}

  private static final List<Row> ROWS = List.of(
      new Row("Allocated memory", PoolStats::allocatedBytes, true),
      new Row("Active memory", PoolStats::activeBytes, true),
      new Row("Requested memory", PoolStats::requestedBytes, true),
      new Row("GPU reserved memory", PoolStats::reservedBytes, true),
      new Row("Non-releasable memory", PoolStats::inactiveSplitBytes, true),
      new Row("Allocations", PoolStats::allocation, false),
      new Row("Active allocs", PoolStats::active, false),
      new Row("GPU reserved segments", PoolStats::segment, false),
      new Row("Non-releasable allocs", PoolStats::inactiveSplit, false));

  private MemorySummary() {}

  static String format(int device, MemoryStats stats) {
    StringBuilder out = new StringBuilder();
    line(out, "=".repeat(WIDTH));
    line(out, center("Ember CUDA memory summary, device ID " + device));
    line(out, "-".repeat(WIDTH));
    line(out, String.format(Locale.ROOT, "%-37s|%-37s", "           CUDA OOMs: " + stats.numOoms(),
        "       cuMemAlloc retries: " + stats.numAllocRetries()));
    line(out, "=".repeat(WIDTH));
    line(out, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");
    for (Row row : ROWS) {
      line(out, "-".repeat(WIDTH));
      Stat all = row.stat().apply(stats.all());
      row(out, row.name(), all, all, row.bytes());
      row(out, "      from large pool", row.stat().apply(stats.largePool()), all, row.bytes());
      row(out, "      from small pool", row.stat().apply(stats.smallPool()), all, row.bytes());
    }
    line(out, "-".repeat(WIDTH));
    row(out, "Oversize allocations", stats.oversizeAllocations(), stats.oversizeAllocations(), false);
    row(out, "Oversize GPU segments", stats.oversizeSegments(), stats.oversizeSegments(), false);
    line(out, "-".repeat(WIDTH));
    line(out, String.format(Locale.ROOT, " %-21s | %-50s", "Device allocs/frees",
        stats.numDeviceAlloc() + " / " + stats.numDeviceFree()));
    line(out, "=".repeat(WIDTH));
    return out.toString();
  }

  /** One row; each column's unit follows the all-pools value of that column, so the pool rows line up with it. */
  private static void row(StringBuilder out, String name, Stat s, Stat unitOf, boolean bytes) {
    Function<long[], String> f = bytes ? v -> size(v[0], v[1]) : v -> count(v[0], v[1]);
    line(out, String.format(Locale.ROOT, " %-21s | %s | %s | %s | %s ", name,
        f.apply(new long[] {s.current(), unitOf.current()}), f.apply(new long[] {s.peak(), unitOf.peak()}),
        f.apply(new long[] {s.allocated(), unitOf.allocated()}), f.apply(new long[] {s.freed(), unitOf.freed()})));
  }

  /** A size in the largest unit that keeps {@code unitOf} at 768 of it or more (torch's _format_size). */
  static String size(long bytes, long unitOf) {
    String[] units = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    double pref = unitOf;
    long value = bytes;
    while (u + 1 < units.length && pref >= 768 * 1024) {
      u++;
      value /= 1024;
      pref /= 1024;
    }
    return String.format(Locale.ROOT, "%6d %s", value, units[u]);
  }

  /** A count in units, thousands or millions, chosen as {@link #size} chooses (torch's _format_count). */
  static String count(long n, long unitOf) {
    String[] units = {" ", "K", "M"};
    int u = 0;
    double pref = unitOf;
    long value = n;
    while (u + 1 < units.length && pref >= 750 * 1000) {
      u++;
      value /= 1000;
      pref /= 1000;
    }
    return String.format(Locale.ROOT, "%7d %s ", value, units[u]);
  }

  private static String center(String text) {
    int left = (WIDTH - text.length()) / 2;
    return " ".repeat(left) + text + " ".repeat(WIDTH - left - text.length());
  }

  private static void line(StringBuilder out, String text) {
    out.append('|').append(text).append("|\n");
  }
}
