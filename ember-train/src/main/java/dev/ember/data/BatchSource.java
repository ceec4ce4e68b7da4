package dev.ember.data;

/**
 * Where a training loop takes its batches from, epoch by epoch. The batches of an epoch (their
 * samples and order) depend only on the source's configuration and the epoch number, so a run
 * interrupted after {@code k} batches of epoch {@code e} continues exactly with
 * {@code iterate(e, k)}.
 */
public interface BatchSource {
  /** Batches in one epoch. */
  int numBatches();

  /** The batches of epoch {@code epoch} (counting from 0), starting after the first {@code skipBatches}, which are not loaded. */
  BatchIterator iterate(int epoch, int skipBatches);
}
