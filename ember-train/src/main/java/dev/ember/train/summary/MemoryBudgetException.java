package dev.ember.train.summary;

import java.util.List;

/**
 * A memory budget that even checkpointing every segment cannot meet: thrown before training starts, with the
 * budget, the measured peak without checkpointing and the smallest peak checkpointing can reach.
 */
public final class MemoryBudgetException extends IllegalStateException {
  private final long budgetBytes;
  private final long peakBytes;
  private final long minimumBytes;

  MemoryBudgetException(long budgetBytes, long peakBytes, long minimumBytes, List<MemoryPlan.Segment> segments) {
    super(String.format(java.util.Locale.ROOT,
        "memory budget %s cannot be met: a training step peaks at %s without checkpointing and at %s (predicted) at"
            + " best with checkpointing of its %d segments%s; hint: raise the budget to at least %s, or lower the batch"
            + " size",
        MemoryPlan.mib(budgetBytes), MemoryPlan.mib(peakBytes), MemoryPlan.mib(minimumBytes), segments.size(),
        segments.isEmpty() ? " (the model has no segments to checkpoint)" : " (" + names(segments) + ")",
        MemoryPlan.mib(minimumBytes)));
    this.budgetBytes = budgetBytes;
    this.peakBytes = peakBytes;
    this.minimumBytes = minimumBytes;
  }

  private static String names(List<MemoryPlan.Segment> segments) {
    List<String> n = segments.stream().map(MemoryPlan.Segment::name).limit(6).toList();
    return String.join(", ", n) + (segments.size() > 6 ? ", ..." : "");
  }

  /** The budget asked for. */
  public long budgetBytes() {
    return budgetBytes;
  }

  /** The measured peak of a step without checkpointing. */
  public long peakBytes() {
    return peakBytes;
  }

  /** The least predicted peak of any choice of checkpointed segments. */
  public long minimumBytes() {
    return minimumBytes;
  }
}
