package dev.ember.distributed;

/**
 * A peer's connection was closed or reset in the middle of a collective: the peer process died (or
 * closed its group early). {@link #peerRank()} is the dead rank: the neighbour whose connection broke,
 * or the rank that rank 0 saw die when it reports one.
 */
public final class PeerLostException extends DistributedException {
  /** @param peerRank the rank whose connection was lost */
  public PeerLostException(String operation, int rank, int peerRank, String message, Throwable cause) {
    super(operation, rank, peerRank, message, cause);
  }
}
