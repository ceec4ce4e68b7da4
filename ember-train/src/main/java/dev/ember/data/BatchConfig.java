package dev.ember.data;

/**
 * How a {@link DataLoader} cuts an epoch into batches.
 *
 * @param batchSize samples per batch (the last batch may be smaller unless {@code dropLast}); at least 1
 * @param shuffle   whether each epoch visits the samples in a fresh random order (from {@code seed} and the epoch)
 * @param dropLast  whether an incomplete last batch is left out
 * @param seed      seeds the shuffling and the per-sample augmentation; same seed, same batches
 */
public record BatchConfig(int batchSize, boolean shuffle, boolean dropLast, long seed) {
  public BatchConfig {
    if (batchSize < 1) {
      throw new IllegalArgumentException("BatchConfig: batch size must be at least 1, got " + batchSize);
    }
  }

  /** Shuffled batches of {@code batchSize}, keeping an incomplete last batch. */
  public static BatchConfig shuffled(int batchSize, long seed) {
    return new BatchConfig(batchSize, true, false, seed);
  }

  /** Batches of {@code batchSize} in index order (for evaluation), keeping an incomplete last batch. */
  public static BatchConfig sequential(int batchSize) {
    return new BatchConfig(batchSize, false, false, 0);
  }
}
