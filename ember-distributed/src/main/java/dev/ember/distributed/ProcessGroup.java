package dev.ember.distributed;

import dev.ember.autograd.Grad;
import dev.ember.nn.Module;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.train.DataParallel;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * A group of {@code worldSize} processes (ranks {@code 0..worldSize-1}) and the collectives between them,
 * over TCP, as {@code torch.distributed}'s process group: {@link #allReduce}, {@link #broadcast},
 * {@link #allGather} and {@link #barrier} on float32 and float64 arrays and tensors. Every rank must call the
 * same collectives in the same order with the same sizes (a header on every message checks this and raises
 * {@link CollectiveMismatchException}). One collective runs at a time per group, in the order of the calls;
 * {@link #allReduceAsync} overlaps one with the caller's computation.
 *
 * <p><b>Creating one.</b> {@link #fromEnv()} reads {@code MASTER_ADDR}, {@code MASTER_PORT}, {@code RANK} and
 * {@code WORLD_SIZE} as {@code torchrun} sets them, so any launcher (Kubernetes, Slurm, a shell loop) can start
 * the processes; {@link #connect(int, int, InetSocketAddress)} takes them as arguments. Rank 0 listens at the
 * master address, the other ranks register their own listening addresses there and get everyone's; then each
 * connects to the next rank, forming a ring (one connection per neighbour). A group of world size 1 opens no
 * socket and its collectives return their input.
 *
 * <p><b>Algorithms and the summation order.</b> The result of {@link #allReduce} is the same bits on every
 * rank, and a run is bitwise reproducible for a given world size and buffer length. For a buffer of {@code n}
 * elements of {@code b} bytes with {@code n * b <= 64 KiB} or {@code n < worldSize} (latency-bound), the sum
 * runs along a chain in rank order, {@code ((x0 + x1) + x2) + ... + x(W-1)}, and the last rank sends the result
 * round the ring. Larger buffers use the ring reduce-scatter + allgather (each rank sends and receives
 * {@code 2 (W-1)/W n} elements): the buffer is cut into {@code W} chunks, chunk {@code c} covering elements
 * {@code [c*q + min(c, r), (c+1)*q + min(c+1, r))} with {@code q = n / W}, {@code r = n % W}; an element of
 * chunk {@code c} is summed starting at rank {@code c} and going round the ring,
 * {@code ((x(c) + x(c+1)) + x(c+2)) + ... + x(c-1)} (rank indices mod {@code W}). {@link AllReduceOp#MEAN}
 * then divides each sum by {@code W} (one rounding; none when {@code W} is a power of two). Both orders depend only on
 * {@code n} and {@code W}, never on timing.
 *
 * <p><b>Failures.</b> A collective that makes no progress (no byte sent or received) for the {@link #timeout()}
 * raises {@link CollectiveTimeoutException} naming the rank it waited for; a peer whose connection closes or
 * resets raises {@link PeerLostException} naming it (rank 0 watches every rank's connection and reports a
 * dead rank to all, so also ranks that are not its neighbours name it). After a failure the group is broken:
 * later collectives throw {@link IllegalStateException}; close it and rendezvous again.
 *
 * <p><b>Training.</b> A group is the {@link DataParallel} a {@code Trainer} trains across:
 * {@code Trainer.builder().distributed(group)} wraps the model in a {@link DistributedDataParallel} ({@link #replicate})
 * and shards the training loader's epochs ({@link #shard}, {@link DistributedSampler}'s split).
 *
 * <pre>{@code
 * try (ProcessGroup group = ProcessGroup.fromEnv()) {          // MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
 *   float[] grad = localGradient();
 *   group.allReduce(grad, AllReduceOp.MEAN);                    // every rank now holds the mean
 *   group.barrier();
 * }
 * }</pre>
 */
public final class ProcessGroup implements AutoCloseable, DataParallel {
  /** The timeout when none is given: collectives may wait this long for a slow rank (a checkpoint, an evaluation). */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);
  /** Environment variable with the timeout in seconds for {@link #fromEnv()} (optional). */
  public static final String TIMEOUT_ENV = "EMBER_DIST_TIMEOUT_SECONDS";
  /** Payload bytes per ring message: bounds the buffers and pipelines broadcast. */
  static final int SEGMENT_BYTES = 1 << 18;
  /** Buffers up to this many bytes are reduced along the chain (rank order), larger ones round the ring. */
  static final int CHAIN_MAX_BYTES = 1 << 16;
  /** A ring step's receive mode: copy what arrives (above 1: add, then divide by that count). */
  private static final int COPY = 0;
  /** A ring step's receive mode: add what arrives to what is there. */
  private static final int ADD = 1;
  /**
   * Elements taken from a received message at a time when adding: the staging copy stays in the L1 cache, where a
   * segment-sized one went through memory.
   */
  private static final int BLOCK = 1024;

  private final int rank;
  private final int worldSize;
  private final Duration timeout;
  private final Wire wire;
  private ByteBuffer out;
  private ByteBuffer in;
  private int calls;
  private DistributedException failure;
  /** Set first thing by close(), without the lock a collective in flight holds. */
  private final AtomicBoolean closed = new AtomicBoolean();
  /** The communication thread, from the first asynchronous collective on (null before). */
  private volatile ExecutorService comm;
  private final Object commLock = new Object();

  private ProcessGroup(int rank, int worldSize, Duration timeout, Wire wire) {
    this.rank = rank;
    this.worldSize = worldSize;
    this.timeout = timeout;
    this.wire = wire;
  }

  /** Joins the group described by the environment ({@code MASTER_ADDR}, {@code MASTER_PORT}, {@code RANK}, {@code WORLD_SIZE}). */
  public static ProcessGroup fromEnv() {
    return fromEnv(System.getenv());
  }

  /**
   * Joins the group described by {@code env}: {@code RANK} and {@code WORLD_SIZE} always, {@code MASTER_ADDR}
   * and {@code MASTER_PORT} when the world size is above 1, and optionally {@value #TIMEOUT_ENV} (seconds;
   * default {@link #DEFAULT_TIMEOUT}).
   *
   * @throws IllegalStateException if a variable is missing or malformed, saying which
   */
  public static ProcessGroup fromEnv(Map<String, String> env) {
    int world = intVar(env, "WORLD_SIZE");
    int rank = intVar(env, "RANK");
    Duration timeout = DEFAULT_TIMEOUT;
    if (env.get(TIMEOUT_ENV) != null) timeout = Duration.ofMillis((long) (doubleVar(env, TIMEOUT_ENV) * 1000));
    if (world == 1) return connect(rank, 1, null, timeout);
    String host = env.get("MASTER_ADDR");
    if (host == null || host.isBlank()) throw missing("MASTER_ADDR");
    int port = intVar(env, "MASTER_PORT");
    if (port < 1 || port > 65535) {
      throw new IllegalStateException("ProcessGroup.fromEnv: MASTER_PORT must be in 1..65535, got " + port);
    }
    return connect(rank, world, new InetSocketAddress(host.strip(), port), timeout);
  }

  /** Joins a group with the {@link #DEFAULT_TIMEOUT}; see {@link #connect(int, int, InetSocketAddress, Duration)}. */
  public static ProcessGroup connect(int rank, int worldSize, InetSocketAddress master) {
    return connect(rank, worldSize, master, DEFAULT_TIMEOUT);
  }

  /**
   * Joins a group as {@code rank} of {@code worldSize}: rank 0 listens at {@code master}, the others connect
   * to it (retrying until it listens). Blocks until all ranks have joined, at most {@code timeout} (which is
   * also every collective's timeout). {@code master} may be null for world size 1.
   *
   * @throws CollectiveTimeoutException if not all ranks join within the timeout
   * @throws CollectiveMismatchException if a rank reports another world size or a rank taken already
   */
  public static ProcessGroup connect(int rank, int worldSize, InetSocketAddress master, Duration timeout) {
    if (worldSize < 1) throw new IllegalArgumentException("ProcessGroup: worldSize must be >= 1, got " + worldSize);
    if (rank < 0 || rank >= worldSize) {
      throw new IllegalArgumentException("ProcessGroup: rank " + rank + " out of range for world size " + worldSize
          + " (valid: 0.." + (worldSize - 1) + ")");
    }
    Objects.requireNonNull(timeout, "ProcessGroup: timeout is null");
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("ProcessGroup: timeout must be positive, got " + timeout);
    }
    if (worldSize == 1) return new ProcessGroup(0, 1, timeout, null);
    Objects.requireNonNull(master, "ProcessGroup: master address is null (needed for world size " + worldSize + ")");
    Wire wire = Rendezvous.connect(rank, worldSize, master, timeout.toNanos());
    return new ProcessGroup(rank, worldSize, timeout, wire);
  }

  /**
   * Wraps {@code model} in a {@link DistributedDataParallel} over this group (a collective: every rank gets rank 0's
   * parameters and buffers), for {@code Trainer.builder().distributed(group)}: a forward with {@code sync} false runs
   * inside {@link DistributedDataParallel#noSync()}.
   */
  @Override
  public DataParallel.Replica replicate(Module model) {
    DistributedDataParallel ddp = new DistributedDataParallel(model, this);
    return new DataParallel.Replica() {
      @Override
      public Tensor forward(Function<Module, Tensor> body, boolean sync) {
        if (sync) return ddp.forward(body);
        try (var ignored = ddp.noSync()) {
          return ddp.forward(body);
        }
      }

      @Override
      public void finish() {
        ddp.finish();
      }
    };
  }

  /**
   * This rank's share of an epoch's visiting order: {@link DistributedSampler#select} of a sampler over
   * {@code epochOrder.length} items (padding the order by its head, without dropping a tail).
   */
  @Override
  public int[] shard(int[] epochOrder) {
    Objects.requireNonNull(epochOrder, "ProcessGroup.shard: epochOrder is null");
    return new DistributedSampler(epochOrder.length, this, false, 0, false).select(epochOrder);
  }

  /** This process's rank, in {@code 0..worldSize()-1}. */
  @Override
  public int rank() {
    return rank;
  }

  /** The number of processes in the group. */
  @Override
  public int worldSize() {
    return worldSize;
  }

  /** How long a collective may go without progress before it fails. */
  public Duration timeout() {
    return timeout;
  }

  // ------------------------------------------------------------------ allreduce

  /** Replaces {@code data} on every rank by the element-wise SUM or MEAN over the ranks (order: see the class doc). */
  public void allReduce(float[] data, AllReduceOp op) {
    Floats d = new Floats(Objects.requireNonNull(data, "allreduce: data is null"));
    Objects.requireNonNull(op, "allreduce: op is null");
    call(() -> allReduce(d, op));
  }

  /** As {@link #allReduce(float[], AllReduceOp)} for float64. */
  public void allReduce(double[] data, AllReduceOp op) {
    Doubles d = new Doubles(Objects.requireNonNull(data, "allreduce: data is null"));
    Objects.requireNonNull(op, "allreduce: op is null");
    call(() -> allReduce(d, op));
  }

  /**
   * Starts {@link #allReduce(float[], AllReduceOp)} on the group's communication thread (a daemon, started on
   * the first asynchronous call) and returns at once: the future completes when {@code data} holds the result,
   * or fails with the collective's exception. Collectives run one at a time in the order they are called, so
   * this overlaps communication with the caller's computation (gradient buckets during backward); do not touch
   * {@code data} before the future completes. Once a group has a communication thread, its blocking
   * collectives run there too, after those queued before them.
   */
  public CompletableFuture<Void> allReduceAsync(float[] data, AllReduceOp op) {
    Floats d = new Floats(Objects.requireNonNull(data, "allreduce: data is null"));
    Objects.requireNonNull(op, "allreduce: op is null");
    return submit(() -> allReduce(d, op));
  }

  /** As {@link #allReduceAsync(float[], AllReduceOp)} for float64. */
  public CompletableFuture<Void> allReduceAsync(double[] data, AllReduceOp op) {
    Doubles d = new Doubles(Objects.requireNonNull(data, "allreduce: data is null"));
    Objects.requireNonNull(op, "allreduce: op is null");
    return submit(() -> allReduce(d, op));
  }

  /** Reduces a float32 or float64 tensor in place (its values, without autograd) and returns it. */
  public Tensor allReduce(Tensor t, AllReduceOp op) {
    Objects.requireNonNull(op, "allreduce: op is null");
    boolean f64 = float64(t, "allreduce");
    call(() -> tensorAllReduce(t, op, f64));
    return t;
  }

  private void tensorAllReduce(Tensor t, AllReduceOp op, boolean f64) {
    if (f64) {
      double[] a = t.toDoubleArray();
      allReduce(new Doubles(a), op);
      store(t, Tensor.of(a, t.shape()));
    } else {
      float[] a = t.toFloatArray();
      allReduce(new Floats(a), op);
      store(t, Tensor.of(a, t.shape()));
    }
  }

  private void allReduce(Buf d, AllReduceOp op) {
    Objects.requireNonNull(op, "allreduce: op is null");
    int call = begin("allreduce");
    if (worldSize == 1) return;
    try {
      int n = d.length();
      if ((long) n * d.bytes() <= CHAIN_MAX_BYTES || n < worldSize) {
        chain(d, call, n);
        if (op == AllReduceOp.MEAN) d.divide(worldSize);
      } else {
        ring(d, call, n, op == AllReduceOp.MEAN ? worldSize : 1);
      }
    } catch (DistributedException e) {
      failure = e;
      throw e;
    }
  }

  /** Sums along the ranks in order 0, 1, .., W-1; the last rank sends the result on round the ring. */
  private void chain(Buf d, int call, int n) {
    int last = worldSize - 1;
    if (rank == 0) {
      transfer(Wire.ALLREDUCE, call, d, 0, n, 0, 0, COPY);
    } else {
      transfer(Wire.ALLREDUCE, call, d, 0, 0, 0, n, ADD); // (x0 + .. + x(rank-1)) + x(rank)
      if (rank < last) transfer(Wire.ALLREDUCE, call, d, 0, n, 0, 0, COPY);
    }
    if (rank == last) {
      transfer(Wire.ALLREDUCE, call, d, 0, n, 0, 0, COPY);
    } else {
      transfer(Wire.ALLREDUCE, call, d, 0, 0, 0, n, COPY);
      if (rank != last - 1) transfer(Wire.ALLREDUCE, call, d, 0, n, 0, 0, COPY);
    }
  }

  /**
   * Ring reduce-scatter (W-1 steps, adding) then ring allgather (W-1 steps, copying) over W chunks. With a
   * {@code divisor} above 1 (MEAN) the last reduce-scatter step divides the chunk it completes as it adds, so the
   * allgather spreads the means and no pass over the whole buffer follows: each element is still its sum divided
   * once, on the rank that owns it, the same bits as dividing everywhere afterwards.
   */
  private void ring(Buf d, int call, int n, int divisor) {
    int w = worldSize;
    for (int s = 0; s < w - 1; s++) {
      int send = Math.floorMod(rank - s, w);
      int recv = Math.floorMod(rank - s - 1, w);
      transfer(Wire.ALLREDUCE, call, d, chunkStart(n, send), chunkLength(n, send), chunkStart(n, recv),
          chunkLength(n, recv), s == w - 2 && divisor > 1 ? divisor : ADD);
    }
    for (int s = 0; s < w - 1; s++) {
      int send = Math.floorMod(rank + 1 - s, w);
      int recv = Math.floorMod(rank - s, w);
      transfer(Wire.ALLREDUCE, call, d, chunkStart(n, send), chunkLength(n, send), chunkStart(n, recv),
          chunkLength(n, recv), COPY);
    }
  }

  private int chunkStart(int n, int c) {
    return c * (n / worldSize) + Math.min(c, n % worldSize);
  }

  private int chunkLength(int n, int c) {
    return n / worldSize + (c < n % worldSize ? 1 : 0);
  }

  // ------------------------------------------------------------------ broadcast

  /** Replaces {@code data} on every rank by rank {@code root}'s (pipelined round the ring from the root). */
  public void broadcast(float[] data, int root) {
    Floats d = new Floats(Objects.requireNonNull(data, "broadcast: data is null"));
    call(() -> broadcast(d, root));
  }

  /** As {@link #broadcast(float[], int)} for float64. */
  public void broadcast(double[] data, int root) {
    Doubles d = new Doubles(Objects.requireNonNull(data, "broadcast: data is null"));
    call(() -> broadcast(d, root));
  }

  /** Overwrites a float32 or float64 tensor's values with rank {@code root}'s and returns it. */
  public Tensor broadcast(Tensor t, int root) {
    boolean f64 = float64(t, "broadcast");
    call(() -> tensorBroadcast(t, root, f64));
    return t;
  }

  private void tensorBroadcast(Tensor t, int root, boolean f64) {
    if (f64) {
      double[] a = t.toDoubleArray();
      broadcast(new Doubles(a), root);
      store(t, Tensor.of(a, t.shape()));
    } else {
      float[] a = t.toFloatArray();
      broadcast(new Floats(a), root);
      store(t, Tensor.of(a, t.shape()));
    }
  }

  private void broadcast(Buf d, int root) {
    if (root < 0 || root >= worldSize) {
      throw new IllegalArgumentException("broadcast: root " + root + " out of range for world size " + worldSize
          + " (valid: 0.." + (worldSize - 1) + ")");
    }
    int call = begin("broadcast");
    if (worldSize == 1) return;
    try {
      int n = d.length();
      int seg = SEGMENT_BYTES / d.bytes();
      int segments = (n + seg - 1) / seg;
      int position = Math.floorMod(rank - root, worldSize); // 0: the root, W-1: the end of the line
      boolean forwards = position < worldSize - 1;
      buffers();
      for (int k = 0; k < segments; k++) {
        int from = k * seg;
        int len = Math.min(seg, n - from);
        if (position == 0) {
          Wire.header(out, Wire.BROADCAST, call, len * d.bytes());
          d.put(out, from, len);
          wire.exchange("broadcast", Wire.BROADCAST, call, out.flip(), null, 0);
        } else {
          // receive segment k while the previous one (held in `out`) still goes on to the next rank
          ByteBuffer pending = k > 0 && forwards ? out : null;
          wire.exchange("broadcast", Wire.BROADCAST, call, pending, in, len * d.bytes());
          d.get(in, from, len);
          ByteBuffer t = out;
          out = in;
          in = t;
          out.rewind(); // the message as received, header included, is forwarded unchanged
        }
      }
      if (position > 0 && forwards && segments > 0) wire.exchange("broadcast", Wire.BROADCAST, call, out, null, 0);
    } catch (DistributedException e) {
      failure = e;
      throw e;
    }
  }

  // ------------------------------------------------------------------ allgather and barrier

  /** Every rank's {@code data} (all of the same length), concatenated in rank order. */
  public float[] allGather(float[] data) {
    Objects.requireNonNull(data, "allgather: data is null");
    float[] all = new float[Math.multiplyExact(data.length, worldSize)];
    System.arraycopy(data, 0, all, rank * data.length, data.length);
    call(() -> allGather(new Floats(all), data.length, Wire.ALLGATHER));
    return all;
  }

  /** As {@link #allGather(float[])} for float64. */
  @Override
  public double[] allGather(double[] data) {
    Objects.requireNonNull(data, "allgather: data is null");
    double[] all = new double[Math.multiplyExact(data.length, worldSize)];
    System.arraycopy(data, 0, all, rank * data.length, data.length);
    call(() -> allGather(new Doubles(all), data.length, Wire.ALLGATHER));
    return all;
  }

  /** Every rank's tensor (all of one shape and dtype, float32 or float64) stacked: shape {@code [worldSize, ...]}. */
  public Tensor allGather(Tensor t) {
    int[] shape = new int[t.shape().length + 1];
    shape[0] = worldSize;
    System.arraycopy(t.shape(), 0, shape, 1, t.shape().length);
    return float64(t, "allgather") ? Tensor.of(allGather(t.toDoubleArray()), shape)
        : Tensor.of(allGather(t.toFloatArray()), shape);
  }

  /** Returns once every rank has called it. */
  public void barrier() {
    float[] all = new float[worldSize];
    all[rank] = rank;
    call(() -> allGather(new Floats(all), 1, Wire.BARRIER));
  }

  private void allGather(Buf all, int block, int code) {
    String name = Wire.name(code);
    int call = begin(name);
    if (worldSize == 1) return;
    try {
      for (int s = 0; s < worldSize - 1; s++) {
        int send = Math.floorMod(rank - s, worldSize);
        int recv = Math.floorMod(rank - s - 1, worldSize);
        transfer(code, call, all, send * block, block, recv * block, block, COPY);
      }
    } catch (DistributedException e) {
      failure = e;
      throw e;
    }
  }

  // ------------------------------------------------------------------ plumbing

  /**
   * One ring step: sends {@code sendLen} elements from {@code sendFrom} to the next rank while receiving
   * {@code recvLen} from the previous rank into {@code recvFrom} ({@link #COPY}: copied; {@link #ADD}: added to what
   * is there, received value first; a count above 1: added, then divided by it), in messages of at most {@link #SEGMENT_BYTES}, streamed: each direction goes on as far as the
   * sockets allow, never waiting for the other.
   */
  private void transfer(int code, int call, Buf d, int sendFrom, int sendLen, int recvFrom, int recvLen, int mode) {
    buffers();
    int bytes = d.bytes();
    int seg = SEGMENT_BYTES / bytes;
    int[] sent = {0};
    int[] got = {0};
    wire.stream(Wire.name(code), code, call, out, o -> {
      int n = Math.min(seg, sendLen - sent[0]);
      if (n <= 0) return false;
      Wire.header(o, code, call, n * bytes);
      d.put(o, sendFrom + sent[0], n);
      o.flip();
      sent[0] += n;
      return true;
    }, in, new Wire.Inbox() {
      @Override
      public int next() {
        int n = Math.min(seg, recvLen - got[0]);
        return n <= 0 ? -1 : n * bytes;
      }

      @Override
      public void take(ByteBuffer b) {
        int n = Math.min(seg, recvLen - got[0]);
        if (mode == COPY) d.get(b, recvFrom + got[0], n);
        else d.add(b, recvFrom + got[0], n, mode);
        got[0] += n;
      }
    });
  }

  private void buffers() {
    if (out == null) {
      out = ByteBuffer.allocateDirect(Wire.HEADER + SEGMENT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      in = ByteBuffer.allocateDirect(Wire.HEADER + SEGMENT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    }
  }

  /** Checks the group is usable and numbers the call (every rank numbers its calls alike). */
  private int begin(String op) {
    if (closed.get()) throw new IllegalStateException(op + ": the process group of rank " + rank + " is closed");
    if (failure != null) {
      throw new IllegalStateException(op + ": the process group of rank " + rank + " failed in an earlier "
          + failure.operation() + " (" + failure.getMessage() + "); hint: close it and join a new group", failure);
    }
    int call = ++calls;
    if (wire != null) {
      try {
        wire.checkAlive(op); // a rank known dead cannot take part
      } catch (DistributedException e) {
        failure = e;
        throw e;
      }
    }
    return call;
  }

  private static boolean float64(Tensor t, String op) {
    Objects.requireNonNull(t, op + ": tensor is null");
    if (t.dtype() == DType.F64) return true;
    if (t.dtype() == DType.F32) return false;
    throw new IllegalArgumentException(op + ": only float32 and float64 tensors are supported, got " + t.dtype()
        + ": t=" + java.util.Arrays.toString(t.shape()) + "; hint: convert with t.to(DType.F32)");
  }

  private static void store(Tensor t, Tensor values) {
    try (Grad ignored = Grad.off()) {
      t.copy_(values.reshape(t.shape())); // Tensor.of(data) of a 0-d tensor's shape is [1]
    }
  }

  private static int intVar(Map<String, String> env, String name) {
    String v = env.get(name);
    if (v == null || v.isBlank()) throw missing(name);
    try {
      return Integer.parseInt(v.strip());
    } catch (NumberFormatException e) {
      throw new IllegalStateException("ProcessGroup.fromEnv: " + name + " must be an integer, got '" + v + "'", e);
    }
  }

  private static double doubleVar(Map<String, String> env, String name) {
    String v = env.get(name);
    try {
      double d = Double.parseDouble(v.strip());
      if (d > 0 && d < 1e9) return d;
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalStateException("ProcessGroup.fromEnv: " + name + " must be a positive number of seconds, got '" + v + "'");
  }

  private static IllegalStateException missing(String name) {
    return new IllegalStateException("ProcessGroup.fromEnv: environment variable " + name + " is not set; hint: start"
        + " each worker with MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE as torchrun does");
  }

  /**
   * Says goodbye to the peers (so that they do not take this rank for dead) and closes every connection. A
   * collective still running on the communication thread fails at once with a {@link DistributedException}, and
   * those queued behind it with {@link IllegalStateException}.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) return; // collectives not yet begun fail with IllegalStateException
    ExecutorService ex = comm;
    if (ex != null) ex.shutdown();
    if (wire != null) wire.abort(); // a collective in flight (on the communication thread) fails now
    synchronized (this) { // after the collective in flight, if any
      if (wire != null) wire.close();
    }
  }

  // ------------------------------------------------------------------ the communication thread

  /** Runs a collective here, or on the communication thread (after those queued) once there is one. */
  private void call(Runnable collective) {
    ExecutorService ex = comm;
    if (ex == null) {
      synchronized (this) {
        collective.run();
      }
      return;
    }
    try {
      submit(collective).join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException r) throw r;
      if (e.getCause() instanceof Error err) throw err;
      throw e;
    }
  }

  private CompletableFuture<Void> submit(Runnable collective) {
    ExecutorService ex;
    synchronized (commLock) { // not the group's lock, which the collective in flight holds: queuing never waits
      if (closed.get()) throw new IllegalStateException("ProcessGroup: the process group of rank " + rank + " is closed");
      if (comm == null) {
        comm = Executors.newSingleThreadExecutor(r -> {
          Thread t = new Thread(r, "ember-distributed-rank-" + rank);
          t.setDaemon(true);
          return t;
        });
      }
      ex = comm;
    }
    return CompletableFuture.runAsync(() -> {
      synchronized (this) {
        collective.run();
      }
    }, ex);
  }

  @Override
  public String toString() {
    return "ProcessGroup(rank " + rank + " of " + worldSize + ", timeout " + timeout + ")";
  }

  // ------------------------------------------------------------------ element types

  /** A float32 or float64 array seen as elements to pack into, add from and copy from little-endian bytes. */
  private abstract static class Buf {
    abstract int length();

    abstract int bytes();

    /** Appends elements {@code [from, from + n)} to {@code b}. */
    abstract void put(ByteBuffer b, int from, int n);

    /**
     * Element {@code from + i} becomes {@code received[i] + element}: the partial sum arriving comes first; with
     * {@code divisor > 1} that sum is then divided by it (two roundings, as adding then dividing apart).
     */
    abstract void add(ByteBuffer b, int from, int n, int divisor);

    abstract void get(ByteBuffer b, int from, int n);

    abstract void divide(int w);
  }

  private static final class Floats extends Buf {
    private final float[] a;
    private float[] scratch;

    Floats(float[] a) {
      this.a = a;
    }

    @Override
    int length() {
      return a.length;
    }

    @Override
    int bytes() {
      return Float.BYTES;
    }

    @Override
    void put(ByteBuffer b, int from, int n) {
      b.asFloatBuffer().put(a, from, n);
      b.position(b.position() + n * Float.BYTES);
    }

    @Override
    void add(ByteBuffer b, int from, int n, int divisor) {
      float[] s = scratch == null ? scratch = new float[BLOCK] : scratch;
      java.nio.FloatBuffer in = b.asFloatBuffer();
      float f = divisor;
      for (int k = 0; k < n; k += BLOCK) {
        int m = Math.min(BLOCK, n - k);
        in.get(s, 0, m);
        int o = from + k;
        if (divisor > 1) {
          for (int i = 0; i < m; i++) a[o + i] = (s[i] + a[o + i]) / f;
        } else {
          for (int i = 0; i < m; i++) a[o + i] = s[i] + a[o + i];
        }
      }
    }

    @Override
    void get(ByteBuffer b, int from, int n) {
      b.asFloatBuffer().get(a, from, n);
    }

    @Override
    void divide(int w) {
      float f = w;
      for (int i = 0; i < a.length; i++) a[i] = a[i] / f;
    }
  }

  private static final class Doubles extends Buf {
    private final double[] a;
    private double[] scratch;

    Doubles(double[] a) {
      this.a = a;
    }

    @Override
    int length() {
      return a.length;
    }

    @Override
    int bytes() {
      return Double.BYTES;
    }

    @Override
    void put(ByteBuffer b, int from, int n) {
      b.asDoubleBuffer().put(a, from, n);
      b.position(b.position() + n * Double.BYTES);
    }

    @Override
    void add(ByteBuffer b, int from, int n, int divisor) {
      double[] s = scratch == null ? scratch = new double[BLOCK] : scratch;
      java.nio.DoubleBuffer in = b.asDoubleBuffer();
      double f = divisor;
      for (int k = 0; k < n; k += BLOCK) {
        int m = Math.min(BLOCK, n - k);
        in.get(s, 0, m);
        int o = from + k;
        if (divisor > 1) {
          for (int i = 0; i < m; i++) a[o + i] = (s[i] + a[o + i]) / f;
        } else {
          for (int i = 0; i < m; i++) a[o + i] = s[i] + a[o + i];
        }
      }
    }

    @Override
    void get(ByteBuffer b, int from, int n) {
      b.asDoubleBuffer().get(a, from, n);
    }

    @Override
    void divide(int w) {
      double f = w;
      for (int i = 0; i < a.length; i++) a[i] = a[i] / f;
    }
  }
}
