package dev.ember.distributed;

/**
 * A collective (or the rendezvous) made no progress for the process group's timeout: the peer it was
 * waiting for ({@link #peerRank()}) sent nothing and took nothing.
 */
public final class CollectiveTimeoutException extends DistributedException {
  /** @param peerRank the rank waited for, or -1 when waiting on several */
  public CollectiveTimeoutException(String operation, int rank, int peerRank, String message) {
    super(operation, rank, peerRank, message, null);
  }
}
