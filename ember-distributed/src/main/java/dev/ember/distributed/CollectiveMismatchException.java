package dev.ember.distributed;

/**
 * The ranks disagree about the collective they are in: a peer called another collective, or the same
 * one with another number of elements, or is at another call in the sequence of collectives (every
 * rank must call the same collectives, in the same order, with the same sizes). Also raised by the
 * rendezvous when a process reports another world size or a rank already taken.
 */
public final class CollectiveMismatchException extends DistributedException {
  /** @param peerRank the rank that disagreed */
  public CollectiveMismatchException(String operation, int rank, int peerRank, String message) {
    super(operation, rank, peerRank, message, null);
  }
}
