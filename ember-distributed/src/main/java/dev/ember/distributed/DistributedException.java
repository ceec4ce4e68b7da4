package dev.ember.distributed;

/**
 * A collective or the rendezvous failed. Names the operation ({@code "allreduce"}, {@code "broadcast"},
 * {@code "allgather"}, {@code "barrier"}, {@code "rendezvous"}), this process's rank and, where one is to
 * blame, the peer's rank. Subclasses say why: {@link PeerLostException} (a peer's connection closed or
 * reset), {@link CollectiveTimeoutException} (no progress within the timeout) and
 * {@link CollectiveMismatchException} (the peers called different collectives or sizes).
 */
public class DistributedException extends RuntimeException {
  private final String operation;
  private final int rank;
  private final int peerRank;

  /** @param peerRank the rank of the peer to blame, or -1 when none is */
  public DistributedException(String operation, int rank, int peerRank, String message, Throwable cause) {
    super(message, cause);
    this.operation = operation;
    this.rank = rank;
    this.peerRank = peerRank;
  }

  /** The collective (or {@code "rendezvous"}) that failed. */
  public String operation() {
    return operation;
  }

  /** The rank of the process that raised this exception (-1 before the rendezvous assigned it). */
  public int rank() {
    return rank;
  }

  /** The rank of the peer that failed, was waited for, or disagreed; -1 when no single peer is to blame. */
  public int peerRank() {
    return peerRank;
  }
}
