package dev.ember.data;

import java.util.Iterator;

/**
 * The batches of one epoch, in order. Closing it stops any background workers and drops
 * prefetched batches; an iterator run to its end closes itself.
 */
public interface BatchIterator extends Iterator<Batch>, AutoCloseable {
  @Override
  void close();
}
