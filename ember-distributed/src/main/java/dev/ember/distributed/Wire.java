package dev.ember.distributed;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;

/**
 * The sockets of one process in a group of {@code world >= 2}: a ring (a connection to the next rank,
 * written only, and one from the previous rank, read only) and the control connections left over from
 * the rendezvous (rank 0 holds one to every other rank, the others one to rank 0). Everything is
 * non-blocking and driven by one {@link Selector}, so that a send and a receive progress together
 * (no deadlock when both exceed the socket buffers), a timeout is a {@code select} that returns empty,
 * and a peer's death is seen while waiting on anyone.
 *
 * <p>Every message on the ring is a 16-byte header (collective code, call number, payload bytes, zero) and
 * its payload; the receiver checks the header against what it expects, so ranks that disagree about
 * the collective fail with {@link CollectiveMismatchException} instead of reading garbage.
 *
 * <p>Control messages are 8 bytes (type, rank): {@code BYE} says a rank closed its group on purpose;
 * {@code DEAD} is sent by rank 0 to everyone when a rank's control connection ends without {@code BYE}
 * (its process died), so that every rank, not only the dead one's neighbours, names it. A death fails the
 * collective in flight once it stalls for a second (a rank that exits right after its last collective, before the
 * others have finished theirs, has already sent them all they need), and every later collective at its start.
 */
final class Wire implements AutoCloseable {
  static final int HEADER = 16;
  static final int BYE = 1;
  static final int DEAD = 2;
  static final int ALLREDUCE = 1;
  static final int BROADCAST = 2;
  static final int ALLGATHER = 3;
  static final int BARRIER = 4;
  /**
   * How long a rank that lost a ring neighbour waits for rank 0 to say which rank died, and how long a collective
   * may stall once a rank is known to have died before it fails naming that rank.
   */
  private static final long GRACE_NANOS = 1_000_000_000L;

  final int rank;
  final int world;
  final long timeoutNanos;
  private final SocketChannel next;
  private final SocketChannel prev;
  private final Selector selector;
  private final SelectionKey nextKey;
  private final SelectionKey prevKey;
  /** Control connections: at index r the one to rank r (rank 0: every other rank; others: only index 0). */
  private final SocketChannel[] control;
  private final ByteBuffer[] controlIn;
  private final boolean[] left;
  /** The first rank known to have died (-1: none), and how it was learnt. */
  private int deadRank = -1;
  private String deadHow;
  /** Set by {@link #abort()}: the collective in flight gives up at its next wake-up. */
  private volatile boolean aborted;

  Wire(int rank, int world, long timeoutNanos, SocketChannel next, SocketChannel prev, SocketChannel[] control)
      throws IOException {
    this.rank = rank;
    this.world = world;
    this.timeoutNanos = timeoutNanos;
    this.next = next;
    this.prev = prev;
    this.control = control;
    this.controlIn = new ByteBuffer[world];
    this.left = new boolean[world];
    this.selector = Selector.open();
    next.configureBlocking(false);
    prev.configureBlocking(false);
    this.nextKey = next.register(selector, 0);
    this.prevKey = prev.register(selector, 0);
    for (int r = 0; r < world; r++) {
      if (control[r] == null) continue;
      control[r].configureBlocking(false);
      control[r].register(selector, SelectionKey.OP_READ, r);
      controlIn[r] = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
    }
  }

  int nextRank() {
    return (rank + 1) % world;
  }

  int prevRank() {
    return (rank + world - 1) % world;
  }

  /** Writes the header of a ring message into {@code out} (cleared first); the payload follows. */
  static void header(ByteBuffer out, int code, int call, int payloadBytes) {
    out.clear();
    out.putInt(code).putInt(call).putInt(payloadBytes).putInt(0); // the 4th int aligns the payload to 8 bytes
  }

  /** The messages a ring step sends, one at a time, into a reused buffer. */
  interface Outbox {
    /** Writes the next message (header and payload) into {@code out}, flipped for sending; false when none is left. */
    boolean fill(ByteBuffer out);
  }

  /** The messages a ring step receives, one at a time. */
  interface Inbox {
    /** The payload bytes of the next message expected, or -1 when none is left. */
    int next();

    /** Takes a received message; {@code in} is positioned at its payload. */
    void take(ByteBuffer in);
  }

  /**
   * Sends {@code out}'s remaining bytes to the next rank while receiving a message of
   * {@code recvBytes} payload bytes from the previous rank into {@code in} (cleared, filled, flipped
   * to the payload); either may be null. Fails when nothing moves for the timeout.
   */
  void exchange(String op, int code, int call, ByteBuffer out, ByteBuffer in, int recvBytes) {
    boolean[] sent = {out == null};
    boolean[] received = {in == null};
    stream(op, code, call, out, o -> !sent[0] && (sent[0] = true), in, new Inbox() {
      @Override
      public int next() {
        return received[0] ? -1 : recvBytes;
      }

      @Override
      public void take(ByteBuffer b) {
        received[0] = true; // the payload stays in `in` for the caller
      }
    });
  }

  /**
   * Streams a ring step: sends the messages of {@code outbox} to the next rank through {@code out} while
   * receiving those {@code inbox} expects from the previous rank through {@code in}, refilling and draining the
   * buffers as the sockets allow, so that neither direction waits for the other. Fails when nothing moves for the
   * timeout, when a neighbour's connection breaks, or when a header is not the one expected.
   */
  void stream(String op, int code, int call, ByteBuffer out, Outbox outbox, ByteBuffer in, Inbox inbox) {
    boolean sending = outbox.fill(out);
    int expect = inbox.next();
    if (expect >= 0) in.clear().limit(HEADER + expect);
    boolean checked = false;
    long lastProgress = System.nanoTime();
    long deadline = lastProgress + timeoutNanos;
    try {
      while (true) {
        boolean moved = false;
        while (sending) {
          try {
            moved |= next.write(out) > 0;
          } catch (IOException e) {
            throw lost(op, nextRank(), "sending to rank " + nextRank() + " failed (" + e.getMessage() + ")", e);
          }
          if (out.hasRemaining()) break;
          sending = outbox.fill(out);
        }
        while (expect >= 0) {
          int n;
          try {
            n = prev.read(in);
          } catch (IOException e) {
            throw lost(op, prevRank(), "receiving from rank " + prevRank() + " failed (" + e.getMessage() + ")", e);
          }
          if (n < 0) throw lost(op, prevRank(), "rank " + prevRank() + " closed its connection (end of stream)", null);
          moved |= n > 0;
          if (!checked && in.position() >= HEADER) {
            check(op, code, call, in, expect);
            checked = true;
          }
          if (in.hasRemaining()) break;
          in.flip().position(HEADER);
          inbox.take(in);
          expect = inbox.next();
          checked = false;
          if (expect >= 0) in.clear().limit(HEADER + expect);
        }
        if (!sending && expect < 0) return;
        if (Thread.currentThread().isInterrupted()) {
          throw new DistributedException(op, rank, -1, op + ": rank " + rank + " was interrupted in the middle of"
              + " the collective; the group's streams are out of step now", null);
        }
        if (aborted) {
          throw new DistributedException(op, rank, -1, op + ": rank " + rank + " closed its process group in the"
              + " middle of the collective", null);
        }
        long now = System.nanoTime();
        if (moved) {
          deadline = now + timeoutNanos;
          lastProgress = now;
        }
        // a dead rank stalls the ring sooner or later; until then, what it sent before dying still counts
        if (deadRank >= 0 && now - lastProgress >= GRACE_NANOS) throw dead(op);
        if (now >= deadline) throw timeout(op, !sending, expect < 0, in, expect);
        nextKey.interestOps(sending ? SelectionKey.OP_WRITE : 0);
        prevKey.interestOps(expect >= 0 ? SelectionKey.OP_READ : 0);
        long wake = deadRank >= 0 ? Math.min(deadline, lastProgress + GRACE_NANOS) : deadline;
        selector.select(Math.max(1, (wake - now) / 1_000_000));
        pollControl();
      }
    } catch (IOException e) {
      throw new DistributedException(op, rank, -1, op + ": rank " + rank + ": selector failed: " + e.getMessage(), e);
    }
  }

  private void check(String op, int code, int call, ByteBuffer in, int recvBytes) {
    int gotCode = in.getInt(0);
    int gotCall = in.getInt(4);
    int gotBytes = in.getInt(8);
    if (gotCode != code || gotCall != call || gotBytes != recvBytes) {
      throw new CollectiveMismatchException(op, rank, prevRank(), op + ": rank " + rank + " expected "
          + describe(code, call, recvBytes) + " from rank " + prevRank() + " but got " + describe(gotCode, gotCall, gotBytes)
          + "; hint: every rank must call the same collectives in the same order with the same sizes");
    }
  }

  /** The collective a ring message's code stands for. */
  static String name(int code) {
    return switch (code) {
      case ALLREDUCE -> "allreduce";
      case BROADCAST -> "broadcast";
      case ALLGATHER -> "allgather";
      case BARRIER -> "barrier";
      default -> "unknown collective " + code;
    };
  }

  static String describe(int code, int call, int bytes) {
    return name(code) + " (call #" + call + ", " + bytes + " payload bytes)";
  }

  private CollectiveTimeoutException timeout(String op, boolean outDone, boolean inDone, ByteBuffer in, int recvBytes) {
    long secs = timeoutNanos / 1_000_000_000L;
    String wait;
    int peer;
    if (!inDone) {
      peer = prevRank();
      int got = Math.max(0, in.position() - HEADER);
      wait = "waiting for rank " + peer + " to send (" + got + " of " + recvBytes + " bytes received)"
          + (outDone ? "" : " and for rank " + nextRank() + " to receive");
    } else {
      peer = nextRank();
      wait = "waiting for rank " + peer + " to receive";
    }
    return new CollectiveTimeoutException(op, rank, peer, op + ": rank " + rank + " made no progress for "
        + (secs > 0 ? secs + " s" : timeoutNanos / 1_000_000 + " ms") + " " + wait
        + "; hint: a rank that skips a collective or is stuck stalls the others; raise the timeout for long pauses");
  }

  /**
   * The connection to ring neighbour {@code peer} broke: if rank 0 reports (or, on rank 0, a control
   * connection shows) which rank died within a short grace period, name that one, else the neighbour.
   */
  private PeerLostException lost(String op, int peer, String what, IOException cause) {
    long end = System.nanoTime() + Math.min(GRACE_NANOS, timeoutNanos);
    try {
      nextKey.interestOps(0);
      prevKey.interestOps(0);
      for (long now = System.nanoTime(); now < end && deadRank < 0; now = System.nanoTime()) {
        selector.select(Math.max(1, (end - now) / 1_000_000));
        pollControl();
      }
    } catch (IOException | RuntimeException ignored) {
      // blame the neighbour
    }
    if (deadRank >= 0) {
      PeerLostException reported = dead(op);
      if (deadRank != peer) reported.addSuppressed(new IOException(what, cause));
      return reported;
    }
    return new PeerLostException(op, rank, peer, op + ": rank " + rank + ": " + what
        + "; rank " + peer + " probably died", cause);
  }

  /**
   * Reads what a control connection has and records a death it shows (an end without goodbye) or reports
   * ({@code DEAD} from rank 0); rank 0 passes a death on to everyone.
   */
  private void readControl(int peer) {
    ByteBuffer buf = controlIn[peer];
    while (true) {
      int n;
      try {
        n = control[peer].read(buf);
      } catch (IOException e) {
        n = -1;
      }
      if (n < 0) {
        SelectionKey key = control[peer].keyFor(selector);
        if (key != null) key.cancel();
        if (left[peer]) return;
        left[peer] = true; // nothing more comes from it
        if (rank == 0) tellEveryone(DEAD, peer);
        died(peer, "its connection to " + (rank == 0 ? "rank 0" : "this rank") + " closed without a goodbye");
        return;
      }
      if (buf.hasRemaining()) return;
      int type = buf.getInt(0);
      int who = buf.getInt(4);
      buf.clear();
      if (type == BYE) {
        left[peer] = true;
      } else if (type == DEAD) {
        died(who, "reported by rank 0, which lost its connection to it");
      }
    }
  }

  private void died(int who, String how) {
    if (deadRank < 0) {
      deadRank = who;
      deadHow = how;
    }
  }

  /** The failure naming the rank that died, once one is known. */
  private PeerLostException dead(String op) {
    return new PeerLostException(op, rank, deadRank, op + ": rank " + rank + ": rank " + deadRank + " died (" + deadHow
        + ")", null);
  }

  /** Fails at the start of a collective when a rank is known to have died (it cannot take part). */
  void checkAlive(String op) {
    try {
      selector.selectNow();
      pollControl();
    } catch (IOException ignored) {
      // the collective itself will fail
    }
    if (deadRank >= 0) throw dead(op);
  }

  private void pollControl() {
    for (SelectionKey k : selector.selectedKeys()) {
      if (k.attachment() instanceof Integer peer && k.isValid() && k.isReadable()) readControl(peer);
    }
    selector.selectedKeys().clear();
  }

  /** Sends a control message to every control connection (best effort: 8 bytes fit any socket buffer). */
  private void tellEveryone(int type, int who) {
    ByteBuffer msg = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
    for (int r = 0; r < world; r++) {
      if (control[r] == null || r == who || left[r]) continue;
      msg.clear();
      msg.putInt(type).putInt(who).flip();
      try {
        control[r].write(msg);
      } catch (IOException ignored) {
        // that rank is gone too: it finds out on its own
      }
    }
  }

  /** Makes the collective in flight, if any, fail now rather than wait out the timeout (called by close). */
  void abort() {
    aborted = true;
    selector.wakeup();
  }

  @Override
  public void close() {
    tellEveryone(BYE, rank);
    try {
      selector.close();
    } catch (IOException ignored) {
      // closing anyway
    }
    for (SocketChannel c : control) Rendezvous.closeQuietly(c);
    Rendezvous.closeQuietly(next);
    Rendezvous.closeQuietly(prev);
  }
}
