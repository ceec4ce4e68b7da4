package dev.ember.distributed;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * The torchrun-style rendezvous that builds a {@link Wire}. Rank 0 listens at the master address; every
 * other rank opens a listening socket of its own (on the interface through which it reaches the master,
 * port chosen by the system), connects to the master and registers (magic, rank, world size, its
 * listening address). Once all {@code world - 1} have registered, rank 0 sends everyone the table of
 * addresses; each rank then connects to the next rank's listener and accepts the previous rank's
 * connection, which closes the ring. The master connections stay open as control connections.
 *
 * <p>Every step has the deadline {@code timeout} from the start: a rank that does not show up gives a
 * {@link CollectiveTimeoutException}, a rank that reports another world size or a rank already taken a
 * {@link CollectiveMismatchException} on rank 0 and on the ranks already registered.
 */
final class Rendezvous {
  static final int MAGIC = 0x454D4244; // "EMBD"
  private static final String OP = "rendezvous";

  private Rendezvous() {}

  static Wire connect(int rank, int world, InetSocketAddress master, long timeoutNanos) {
    long deadline = System.nanoTime() + timeoutNanos;
    List<AutoCloseable> opened = new ArrayList<>();
    try {
      SocketChannel[] control = new SocketChannel[world];
      ServerSocketChannel ring;
      InetSocketAddress[] table;
      if (rank == 0) {
        InetAddress host = resolve(master);
        ServerSocketChannel listener = ServerSocketChannel.open();
        opened.add(listener);
        listener.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        try {
          listener.bind(new InetSocketAddress(host, master.getPort()), world);
        } catch (IOException e) {
          throw new DistributedException(OP, rank, -1, "rendezvous: rank 0 cannot listen at " + host.getHostAddress()
              + ":" + master.getPort() + " (" + e.getMessage() + "); hint: MASTER_PORT must be a free port on the"
              + " master's machine", e);
        }
        ring = ServerSocketChannel.open();
        opened.add(ring);
        ring.bind(new InetSocketAddress(host, 0), 2);
        table = new InetSocketAddress[world];
        table[0] = new InetSocketAddress(host, ((InetSocketAddress) ring.getLocalAddress()).getPort());
        register(world, listener, control, table, opened, deadline, timeoutNanos);
        ByteBuffer reply = buffer(1 << 16);
        reply.putInt(MAGIC).putInt(0);
        for (InetSocketAddress a : table) putString(reply.putInt(a.getPort()), a.getAddress().getHostAddress());
        reply.flip();
        for (int r = 1; r < world; r++) writeFully(control[r], reply.duplicate(), deadline, rank, r, timeoutNanos);
        listener.close();
      } else {
        SocketChannel toMaster = connectRetrying(master, deadline, rank, timeoutNanos);
        opened.add(toMaster);
        control[0] = toMaster;
        InetAddress self = ((InetSocketAddress) toMaster.getLocalAddress()).getAddress();
        ring = ServerSocketChannel.open();
        opened.add(ring);
        ring.bind(new InetSocketAddress(self, 0), 2);
        ByteBuffer hello = buffer(1024);
        hello.putInt(MAGIC).putInt(rank).putInt(world).putInt(((InetSocketAddress) ring.getLocalAddress()).getPort());
        putString(hello, self.getHostAddress());
        writeFully(toMaster, hello.flip(), deadline, rank, 0, timeoutNanos);
        int magic = readInt(toMaster, deadline, rank, 0, timeoutNanos);
        int status = readInt(toMaster, deadline, rank, 0, timeoutNanos);
        if (magic != MAGIC) {
          throw new DistributedException(OP, rank, 0, "rendezvous: rank " + rank + ": " + master
              + " is not an Ember rank 0 (bad magic " + Integer.toHexString(magic) + ")", null);
        }
        if (status != 0) {
          throw new CollectiveMismatchException(OP, rank, 0, readString(toMaster, deadline, rank, 0, timeoutNanos));
        }
        table = new InetSocketAddress[world];
        for (int r = 0; r < world; r++) {
          int port = readInt(toMaster, deadline, rank, 0, timeoutNanos);
          String host = readString(toMaster, deadline, rank, 0, timeoutNanos);
          table[r] = new InetSocketAddress(InetAddress.getByName(host), port);
        }
      }
      int next = (rank + 1) % world;
      int prev = (rank + world - 1) % world;
      SocketChannel out = connectRetrying(table[next], deadline, rank, timeoutNanos);
      opened.add(out);
      ByteBuffer hello = buffer(12);
      writeFully(out, hello.putInt(MAGIC).putInt(rank).putInt(world).flip(), deadline, rank, next, timeoutNanos);
      SocketChannel in = null;
      while (in == null) {
        SocketChannel c = accept(ring, deadline, rank, "rank " + prev + " to connect to this rank's ring port", prev,
            timeoutNanos);
        try {
          int magic = readInt(c, deadline, rank, prev, timeoutNanos);
          int who = readInt(c, deadline, rank, prev, timeoutNanos);
          int w = readInt(c, deadline, rank, prev, timeoutNanos);
          if (magic == MAGIC && who == prev && w == world) in = c;
        } catch (DistributedException e) {
          // not our previous rank (a stray connection): keep waiting
        }
        if (in == null) closeQuietly(c);
      }
      opened.add(in);
      ring.close();
      for (SocketChannel c : new SocketChannel[] {out, in}) {
        c.setOption(StandardSocketOptions.TCP_NODELAY, true);
      }
      return new Wire(rank, world, timeoutNanos, out, in, control);
    } catch (IOException e) {
      for (AutoCloseable c : opened) closeQuietly(c);
      throw new DistributedException(OP, rank, -1, "rendezvous: rank " + rank + " of " + world + " failed: " + e, e);
    } catch (RuntimeException e) {
      for (AutoCloseable c : opened) closeQuietly(c);
      throw e;
    }
  }

  /** Rank 0: accepts the other ranks' registrations until every rank 1..world-1 has one. */
  private static void register(int world, ServerSocketChannel listener, SocketChannel[] control, InetSocketAddress[] table,
      List<AutoCloseable> opened, long deadline, long timeoutNanos) throws IOException {
    TreeSet<Integer> missing = new TreeSet<>();
    for (int r = 1; r < world; r++) missing.add(r);
    while (!missing.isEmpty()) {
      SocketChannel c = accept(listener, deadline, 0, "ranks " + missing + " to register at "
          + listener.getLocalAddress(), -1, timeoutNanos);
      int who;
      int w;
      int port;
      String host;
      try {
        if (readInt(c, deadline, 0, -1, timeoutNanos) != MAGIC) {
          closeQuietly(c); // not an Ember rank
          continue;
        }
        who = readInt(c, deadline, 0, -1, timeoutNanos);
        w = readInt(c, deadline, 0, who, timeoutNanos);
        port = readInt(c, deadline, 0, who, timeoutNanos);
        host = readString(c, deadline, 0, who, timeoutNanos);
      } catch (DistributedException e) {
        closeQuietly(c); // a connection that died while registering: its process retries or times out
        continue;
      }
      String problem = null;
      if (w != world) {
        problem = "rendezvous: rank " + who + " says the world size is " + w + " but rank 0 says " + world;
      } else if (who < 1 || who >= world) {
        problem = "rendezvous: rank " + who + " is out of range for world size " + world + " (valid: 1.." + (world - 1) + ")";
      } else if (control[who] != null) {
        problem = "rendezvous: rank " + who + " registered twice; hint: every process needs its own RANK";
      }
      if (problem != null) {
        fail(problem, c, control, deadline, timeoutNanos);
        throw new CollectiveMismatchException(OP, 0, who, problem);
      }
      opened.add(c);
      control[who] = c;
      table[who] = new InetSocketAddress(InetAddress.getByName(host), port);
      missing.remove(who);
    }
  }

  /** Tells the offending connection and every rank registered so far why the rendezvous failed. */
  private static void fail(String problem, SocketChannel offender, SocketChannel[] control, long deadline, long timeoutNanos) {
    ByteBuffer msg = buffer(4096);
    putString(msg.putInt(MAGIC).putInt(1), problem).flip();
    List<SocketChannel> tell = new ArrayList<>();
    tell.add(offender);
    for (SocketChannel c : control) if (c != null) tell.add(c);
    for (SocketChannel c : tell) {
      try {
        writeFully(c, msg.duplicate(), Math.min(deadline, System.nanoTime() + 1_000_000_000L), 0, -1, timeoutNanos);
      } catch (RuntimeException ignored) {
        // best effort
      }
      closeQuietly(c);
    }
  }

  private static InetAddress resolve(InetSocketAddress a) throws IOException {
    return a.getAddress() != null ? a.getAddress() : InetAddress.getByName(a.getHostString());
  }

  static ByteBuffer buffer(int capacity) {
    return ByteBuffer.allocate(capacity).order(ByteOrder.LITTLE_ENDIAN);
  }

  private static ByteBuffer putString(ByteBuffer b, String s) {
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    return b.putInt(bytes.length).put(bytes);
  }

  private static int readInt(SocketChannel c, long deadline, int rank, int peer, long timeoutNanos) {
    ByteBuffer b = buffer(4);
    readFully(c, b, deadline, rank, peer, timeoutNanos);
    return b.getInt(0);
  }

  private static String readString(SocketChannel c, long deadline, int rank, int peer, long timeoutNanos) {
    int n = readInt(c, deadline, rank, peer, timeoutNanos);
    if (n < 0 || n > 1 << 16) {
      throw new DistributedException(OP, rank, peer, "rendezvous: rank " + rank + ": malformed message from "
          + (peer < 0 ? "a peer" : "rank " + peer) + " (string of " + n + " bytes)", null);
    }
    ByteBuffer b = buffer(n);
    readFully(c, b, deadline, rank, peer, timeoutNanos);
    return new String(b.array(), 0, n, StandardCharsets.UTF_8);
  }

  private static void readFully(SocketChannel c, ByteBuffer b, long deadline, int rank, int peer, long timeoutNanos) {
    io(c, b, true, deadline, rank, peer, timeoutNanos);
  }

  private static void writeFully(SocketChannel c, ByteBuffer b, long deadline, int rank, int peer, long timeoutNanos) {
    io(c, b, false, deadline, rank, peer, timeoutNanos);
  }

  private static void io(SocketChannel c, ByteBuffer b, boolean read, long deadline, int rank, int peer, long timeoutNanos) {
    String who = peer < 0 ? "a peer" : "rank " + peer;
    try (Selector sel = Selector.open()) {
      c.configureBlocking(false);
      SelectionKey key = c.register(sel, read ? SelectionKey.OP_READ : SelectionKey.OP_WRITE);
      while (b.hasRemaining()) {
        int n = read ? c.read(b) : c.write(b);
        if (n < 0) {
          throw new PeerLostException(OP, rank, peer, "rendezvous: rank " + rank + ": " + who
              + " closed its connection (end of stream)", null);
        }
        if (n > 0 || !b.hasRemaining()) continue;
        long left = deadline - System.nanoTime();
        if (left <= 0) throw timedOut(rank, peer, (read ? "for " + who + " to send" : "for " + who + " to receive"), timeoutNanos);
        sel.select(Math.max(1, left / 1_000_000));
      }
      key.cancel();
      sel.selectNow();
    } catch (IOException e) {
      throw new PeerLostException(OP, rank, peer, "rendezvous: rank " + rank + ": connection to " + who + " failed: "
          + e.getMessage(), e);
    }
  }

  private static SocketChannel accept(ServerSocketChannel s, long deadline, int rank, String waitingFor, int peer,
      long timeoutNanos) throws IOException {
    s.configureBlocking(false);
    try (Selector sel = Selector.open()) {
      SelectionKey key = s.register(sel, SelectionKey.OP_ACCEPT);
      while (true) {
        SocketChannel c = s.accept();
        if (c != null) {
          key.cancel();
          sel.selectNow();
          c.configureBlocking(false);
          return c;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) throw timedOut(rank, peer, "for " + waitingFor, timeoutNanos);
        sel.select(Math.max(1, left / 1_000_000));
      }
    }
  }

  /** Connects, retrying while nobody listens yet (the peer may start later), until the deadline. */
  private static SocketChannel connectRetrying(InetSocketAddress a, long deadline, int rank, long timeoutNanos)
      throws IOException {
    InetSocketAddress target = a.isUnresolved() ? new InetSocketAddress(a.getHostString(), a.getPort()) : a;
    String lastError = "";
    while (true) {
      SocketChannel c = SocketChannel.open();
      try {
        c.configureBlocking(false);
        boolean done = c.connect(target);
        try (Selector sel = Selector.open()) {
          c.register(sel, SelectionKey.OP_CONNECT);
          while (!done) {
            long left = deadline - System.nanoTime();
            if (left <= 0) break;
            sel.select(Math.max(1, left / 1_000_000));
            done = c.finishConnect();
          }
        }
        if (done) return c;
      } catch (ConnectException e) {
        lastError = " (" + e.getMessage() + ")";
      }
      closeQuietly(c);
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw timedOut(rank, -1, "to connect to " + target + lastError + "; hint: is rank 0 running and MASTER_ADDR/"
            + "MASTER_PORT right", timeoutNanos);
      }
      try {
        Thread.sleep(Math.min(50, Math.max(1, left / 1_000_000)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new DistributedException(OP, rank, -1, "rendezvous: rank " + rank + " interrupted", e);
      }
    }
  }

  private static CollectiveTimeoutException timedOut(int rank, int peer, String what, long timeoutNanos) {
    return new CollectiveTimeoutException(OP, rank, peer, "rendezvous: rank " + rank + " timed out after "
        + timeoutNanos / 1_000_000 + " ms waiting " + what);
  }

  static void closeQuietly(AutoCloseable c) {
    if (c == null) return;
    try {
      c.close();
    } catch (Exception ignored) {
      // closing anyway
    }
  }
}
