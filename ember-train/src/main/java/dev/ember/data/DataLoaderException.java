package dev.ember.data;

/**
 * Loading, transforming or collating a sample failed. Thrown on the thread that asked for the
 * batch, also when the failure happened on a worker thread; the original failure is the cause.
 */
public class DataLoaderException extends RuntimeException {
  private final int epoch;
  private final int batch;
  private final int sampleIndex;

  /** @param sampleIndex the data set index of the failing sample, or -1 when the batch as a whole failed */
  public DataLoaderException(String message, int epoch, int batch, int sampleIndex, Throwable cause) {
    super(message, cause);
    this.epoch = epoch;
    this.batch = batch;
    this.sampleIndex = sampleIndex;
  }

  /** The epoch being loaded. */
  public int epoch() {
    return epoch;
  }

  /** The batch's position in the epoch. */
  public int batch() {
    return batch;
  }

  /** The data set index of the failing sample, or -1 when the batch as a whole failed. */
  public int sampleIndex() {
    return sampleIndex;
  }
}
