package dev.ember.cuda.kernels;

import dev.ember.backend.Backend.IndexRangeError;
import java.util.ArrayList;
import java.util.List;

/**
 * The host's side of the deferred index checks ({@link CudaIndexChecks}), apart from the driver: the checks queued
 * since the last synchronizing point, in order, each owning one device slot (two 64-bit words: the first offending
 * position, all ones when none, and its value). {@link #drain} turns the slots read back into at most one exception
 * and forgets every pending check, so a failed check is raised exactly once: the first failed one, in the order the
 * checks were queued, with the later failures of the same batch attached as suppressed exceptions (none is lost).
 */
public final class PendingIndexChecks {
  /** A slot's position word while its check found nothing. */
  public static final long NONE = -1L;

  private final int capacity;
  private final List<IndexRangeError> pending = new ArrayList<>();

  /** Room for {@code capacity} checks between two synchronizing points. */
  public PendingIndexChecks(int capacity) {
    if (capacity < 1) throw new IllegalArgumentException("capacity must be positive, got " + capacity);
    this.capacity = capacity;
  }

  public int capacity() {
    return capacity;
  }

  /** How many checks are waiting to be read back. */
  public int size() {
    return pending.size();
  }

  /** Whether no slot is free: the caller must {@link #drain} (read the slots back) before the next {@link #add}. */
  public boolean full() {
    return pending.size() == capacity;
  }

  /**
   * Queues a check that will raise {@code error} if its slot reports an offending element.
   *
   * @return the index of its slot (words {@code 2 * slot} and {@code 2 * slot + 1})
   * @throws IllegalStateException when {@link #full}
   */
  public int add(IndexRangeError error) {
    if (full()) throw new IllegalStateException("all " + capacity + " index check slots are pending: drain first");
    pending.add(error);
    return pending.size() - 1;
  }

  /**
   * Forgets every pending check and returns the exception of the first whose slot in {@code words} (two per pending
   * check, in slot order) names an offending position, with later failures suppressed into it; null when none
   * failed. The pending list is cleared before any exception is built, so building one (which may itself read
   * device data and so reach a synchronizing point) finds nothing pending.
   */
  public RuntimeException drain(long[] words) {
    List<IndexRangeError> checks = List.copyOf(pending);
    pending.clear();
    if (words.length < 2 * checks.size()) {
      throw new IllegalArgumentException(checks.size() + " pending checks need " + 2 * checks.size()
          + " words, got " + words.length);
    }
    RuntimeException first = null;
    for (int i = 0; i < checks.size(); i++) {
      long position = words[2 * i];
      if (position == NONE) continue;
      RuntimeException e = checks.get(i).at(position, words[2 * i + 1]);
      if (first == null) {
        first = e;
      } else if (e != first) {
        first.addSuppressed(e);
      }
    }
    return first;
  }
}
