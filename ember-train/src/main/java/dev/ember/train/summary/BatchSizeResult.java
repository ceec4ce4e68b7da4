package dev.ember.train.summary;

import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;

/**
 * What {@link BatchSizeFinder} measured: one row per batch size tried, in increasing order, the
 * memory budget, why the search stopped, and the recommended batch size.
 *
 * @param rows one row per batch size tried (and, last, possibly one that was predicted not to fit)
 * @param budgetBytes the memory budget a step's allocation had to stay within
 * @param stopReason why no larger batch size was tried
 */
public record BatchSizeResult(List<Row> rows, long budgetBytes, String stopReason) {

  /**
   * One batch size.
   *
   * @param batchSize the batch size
   * @param samplesPerSecond training throughput over the timed steps; NaN if none ran
   * @param bytesPerStep the most bytes one timed step allocated (calling thread and Ember's kernel
   *     workers); for a row not run, the prediction from the smaller sizes
   * @param heapPeakBytes the heap's peak use while this size ran (all heap pools' peaks summed); 0 if not run
   * @param fits whether the steps ran and stayed within the budget
   * @param note "" for a measured size; otherwise what happened ("over budget", "OutOfMemoryError", ...)
   */
  public record Row(int batchSize, double samplesPerSecond, long bytesPerStep, long heapPeakBytes, boolean fits,
      String note) {}

  public BatchSizeResult {
    rows = List.copyOf(rows);
  }

  /** The fitting batch size with the highest throughput (the larger one on a tie), if any fits. */
  public OptionalInt recommended() {
    Row best = null;
    for (Row r : rows) {
      if (r.fits() && (best == null || r.samplesPerSecond() >= best.samplesPerSecond())) best = r;
    }
    return best == null ? OptionalInt.empty() : OptionalInt.of(best.batchSize());
  }

  /** The row of {@code batchSize}. */
  public Row row(int batchSize) {
    for (Row r : rows) if (r.batchSize() == batchSize) return r;
    throw new IllegalArgumentException("BatchSizeResult.row: batch size " + batchSize + " was not tried; tried "
        + rows.stream().map(Row::batchSize).toList());
  }

  /** Writes {@link #toString()} to {@code out}. */
  public void print(PrintStream out) {
    out.print(this);
    out.flush();
  }

  /** An aligned table of the rows, the budget, the stop reason and the recommendation. */
  @Override
  public String toString() {
    List<String> lines = new java.util.ArrayList<>();
    lines.add(String.format(Locale.ROOT, "%8s  %12s  %10s  %12s  %-4s  %s", "Batch", "Samples/s", "MB/step",
        "Heap peak MB", "Fits", "Note").stripTrailing());
    OptionalInt rec = recommended();
    for (Row r : rows) {
      String note = r.note();
      if (rec.isPresent() && rec.getAsInt() == r.batchSize()) note = note.isEmpty() ? "<- recommended" : note + "; recommended";
      String sps = Double.isNaN(r.samplesPerSecond()) ? "--" : String.format(Locale.ROOT, "%,.1f", r.samplesPerSecond());
      String peak = r.heapPeakBytes() > 0 ? String.format(Locale.ROOT, "%.2f", r.heapPeakBytes() / 1e6) : "--";
      lines.add(String.format(Locale.ROOT, "%8d  %12s  %10.3f  %12s  %-4s  %s", r.batchSize(), sps, r.bytesPerStep() / 1e6,
          peak, r.fits() ? "yes" : "no", note).stripTrailing());
    }
    String rule = "=".repeat(lines.stream().mapToInt(String::length).max().orElse(0));
    StringBuilder sb = new StringBuilder();
    sb.append(rule).append('\n').append(lines.get(0)).append('\n').append(rule).append('\n');
    for (String l : lines.subList(1, lines.size())) sb.append(l).append('\n');
    sb.append(rule).append('\n');
    sb.append(String.format(Locale.ROOT, "Budget: %.3f MB per step; stopped: %s%n", budgetBytes / 1e6, stopReason));
    sb.append("Recommended batch size: ").append(rec.isPresent() ? Integer.toString(rec.getAsInt()) : "none fits")
        .append('\n');
    return sb.toString();
  }
}
