package dev.ember.distributed;

import dev.ember.autograd.Grad;
import dev.ember.nn.Module;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;

/**
 * Data-parallel training of a module across the ranks of a {@link ProcessGroup}, as PyTorch's
 * {@code DistributedDataParallel}: every rank holds a replica, runs forward and backward on its own shard of the
 * batch, and after backward every replica's gradients are the mean over the ranks, so the same optimizer step keeps
 * the replicas identical. N ranks at batch B then train as one process at batch N*B with a loss that averages
 * over the batch.
 *
 * <ul>
 *   <li><b>Start.</b> The constructor overwrites every parameter and buffer with rank 0's (a collective: every rank
 *       constructs its wrapper at the same point).
 *   <li><b>Buckets.</b> The trainable parameters are grouped into buckets of at most {@code bucketBytes} (25 MiB by
 *       default; a parameter larger than that is a bucket of its own) in reverse registration order (the order
 *       backward tends to produce their gradients), one dtype per bucket. A hook on gradient accumulation
 *       ({@link Tensor#registerPostAccumulateGradHook}) marks a parameter ready; once every parameter of a bucket
 *       is ready, and the buckets before it have been started, the bucket's gradients are copied into one flat
 *       buffer and its {@link ProcessGroup#allReduceAsync allreduce (MEAN)} starts on the group's communication
 *       thread, overlapping the rest of backward. Buckets start in index order on every rank, so the ranks call
 *       the same collectives in the same order.
 *   <li><b>End of backward.</b> When the last bucket has started, the hook waits for all of them and replaces each
 *       parameter's gradient by the averaged one, so after {@code loss.backward()} the optimizer may step. If some
 *       parameter gets no gradient in a backward (a branch not taken), call {@link #finish()} before the step: it
 *       starts the buckets still waiting (a missing gradient counts as zeros, and the parameter gets the averaged
 *       gradient), waits and writes back. {@link #finish()} does nothing when backward has finished already.
 *   <li><b>Gradient accumulation.</b> A forward run inside {@link #noSync()} arms no reduction: its backward only
 *       accumulates locally. The next forward outside it reduces the accumulated gradients, as PyTorch's
 *       {@code no_sync()}.
 *   <li><b>Buffers.</b> Every forward first overwrites the module's buffers (BatchNorm's running statistics) with
 *       rank 0's, as PyTorch's {@code broadcast_buffers=True}. For BatchNorm statistics of the global batch, convert
 *       the module with {@link SyncBatchNorm#convertSyncBatchNorm} before wrapping it.
 *   <li><b>Cost.</b> {@link #commStats()} says how long the buckets' allreduces took and how much of it the end of
 *       backward waited for (the rest overlapped backward).
 * </ul>
 *
 * <p>The wrapped module is this module's child {@code module} (so state-dict keys start with {@code module.}, as in
 * PyTorch); {@link #module()} returns it for checkpoints written without the prefix. Each parameter must receive
 * its gradient in at most one contribution per backward after its bucket has started (a parameter used twice in a
 * forward is fine as long as both contributions arrive before the bucket is full). The reduction's summation order
 * is the process group's, so two runs with the same world size are bitwise identical.
 *
 * <pre>{@code
 * try (ProcessGroup group = ProcessGroup.fromEnv()) {
 *   Generator.manualSeed(0);
 *   DistributedDataParallel ddp = new DistributedDataParallel(Models.mlp(784, 256, 10), group);
 *   SGD opt = new SGD(ddp.parameters(), 0.1);
 *   for (Batch b : loaderOfThisRanksShard) {                 // see DistributedSampler
 *     opt.zeroGrad();
 *     F.crossEntropy(ddp.forward(b.input()), b.target()).backward();   // gradients are averaged across ranks here
 *     opt.step();
 *   }
 * }
 * }</pre>
 */
public final class DistributedDataParallel extends Module {
  /** The default bucket size, PyTorch's {@code bucket_cap_mb=25}. */
  public static final long DEFAULT_BUCKET_BYTES = 25L << 20;

  private final Module module;
  private final ProcessGroup group;
  private final List<Bucket> buckets = new ArrayList<>();
  private final Map<Tensor, Slot> slots = new IdentityHashMap<>();
  private int noSyncDepth;
  /** Whether the current backward reduces (set by a forward outside {@link #noSync()}, cleared when written back). */
  private boolean armed;
  private int nextLaunch;
  private int launched;
  /** Parameters marked ready since the last forward armed a reduction. */
  private int readyCount;
  /** {@link #commStats()}: reductions completed, allreduce busy time and time waited for it, since the reset. */
  private int statSteps;
  private long statBusyNanos;
  private long statWaitNanos;

  /** Wraps {@code module} with {@link #DEFAULT_BUCKET_BYTES}; see {@link #DistributedDataParallel(Module, ProcessGroup, long)}. */
  public DistributedDataParallel(Module module, ProcessGroup group) {
    this(module, group, DEFAULT_BUCKET_BYTES);
  }

  /**
   * Wraps {@code module} for data-parallel training over {@code group}, overwriting its parameters and buffers with
   * rank 0's, with gradient buckets of at most {@code bucketBytes}.
   *
   * @throws IllegalArgumentException if {@code bucketBytes} is not positive or a trainable parameter is neither
   *     float32 nor float64
   */
  public DistributedDataParallel(Module module, ProcessGroup group, long bucketBytes) {
    this.module = Objects.requireNonNull(module, "DistributedDataParallel: module is null");
    this.group = Objects.requireNonNull(group, "DistributedDataParallel: group is null");
    if (bucketBytes <= 0) {
      throw new IllegalArgumentException("DistributedDataParallel: bucketBytes must be positive, got " + bucketBytes);
    }
    registerModule("module", module);
    var named = new ArrayList<>(module.namedParameters().entrySet());
    for (var e : named) {
      Tensor p = e.getValue();
      if (!p.requiresGrad()) continue;
      if (p.dtype() != DType.F32 && p.dtype() != DType.F64) {
        throw new IllegalArgumentException("DistributedDataParallel: parameter '" + e.getKey() + "' is " + p.dtype()
            + "; gradients are reduced in float32 or float64 only");
      }
    }
    if (group.worldSize() > 1) {
      for (var e : named) broadcast(e.getValue());
    }
    broadcastBuffers();
    Bucket current = null;
    for (int i = named.size() - 1; i >= 0; i--) {
      String name = named.get(i).getKey();
      Tensor p = named.get(i).getValue();
      if (!p.requiresGrad()) continue;
      long bytes = (long) p.numel() * (p.dtype() == DType.F64 ? 8 : 4);
      if (current == null || current.dtype != p.dtype()
          || (current.bytes > 0 && current.bytes + bytes > bucketBytes)) {
        current = new Bucket(buckets.size(), p.dtype());
        buckets.add(current);
      }
      Slot s = new Slot(name, p, current, current.length);
      current.slots.add(s);
      current.length = Math.toIntExact(current.length + p.numel());
      current.bytes += bytes;
      slots.put(p, s);
      p.registerPostAccumulateGradHook(this::accumulated);
    }
  }

  /** The wrapped module. */
  public Module module() {
    return module;
  }

  /** The process group the gradients are averaged over. */
  public ProcessGroup group() {
    return group;
  }

  /** The number of gradient buckets. */
  public int bucketCount() {
    return buckets.size();
  }

  /** The dotted names of bucket {@code i}'s parameters, in the order they lie in its flat buffer. */
  public List<String> bucketParameters(int i) {
    return buckets.get(Objects.checkIndex(i, buckets.size())).slots.stream().map(s -> s.name).toList();
  }

  /**
   * Where the time of the gradient allreduces went, summed over the reductions completed since construction or the
   * last {@link #resetCommStats()}: {@code allreduceNanos}, how long the communication thread was busy with this
   * wrapper's buckets (each bucket from when it could start, i.e. launched and the bucket before it done, to when it
   * was done), and {@code waitNanos}, how long the end of backward (or {@link #finish()}) waited for them. The rest,
   * {@link CommStats#hiddenFraction()}, ran under backward.
   */
  public record CommStats(int reductions, long allreduceNanos, long waitNanos) {
    /** The fraction of the allreduce time that overlapped backward: {@code 1 - wait / busy} (0 without any). */
    public double hiddenFraction() {
      return allreduceNanos == 0 ? 0 : Math.max(0, 1 - (double) waitNanos / allreduceNanos);
    }
  }

  /** The allreduce and wait times since construction or the last {@link #resetCommStats()}. */
  public CommStats commStats() {
    return new CommStats(statSteps, statBusyNanos, statWaitNanos);
  }

  /** Starts {@link #commStats()} from zero. */
  public void resetCommStats() {
    statSteps = 0;
    statBusyNanos = 0;
    statWaitNanos = 0;
  }

  /** How many buckets' allreduces the current backward has started (0 once they are written back). */
  int startedBuckets() {
    return launched;
  }

  /**
   * Broadcasts rank 0's buffers, then runs the wrapped module. Outside {@link #noSync()}, the backward of the
   * result averages the gradients across the ranks.
   */
  @Override
  public Tensor forward(Tensor input) {
    prepareForward();
    return module.call(input);
  }

  private void prepareForward() {
    if (armed && readyCount > 0) {
      throw new IllegalStateException("DistributedDataParallel.forward: the previous backward gave gradients to "
          + readyCount + " of " + slots.size() + " parameters and started " + launched + " of " + buckets.size()
          + " gradient buckets; call finish() before the optimizer step (some parameter got no gradient)");
    }
    broadcastBuffers();
    armed = noSyncDepth == 0 && Grad.enabled() && !buckets.isEmpty() && group.worldSize() > 1;
    nextLaunch = 0;
    launched = 0;
    readyCount = 0;
    for (Bucket b : buckets) b.reset();
  }

  /**
   * As {@link #forward(Tensor)} for a module that takes several inputs: broadcasts rank 0's buffers, arms the
   * gradient averaging and returns {@code body} applied to the wrapped module, e.g.
   * {@code ddp.forward(m -> ((Transformer) m).forward(src, tgt))}.
   */
  public Tensor forward(Function<Module, Tensor> body) {
    Objects.requireNonNull(body, "DistributedDataParallel.forward: body is null");
    prepareForward();
    return body.apply(module);
  }

  /**
   * Suspends gradient averaging for the forwards run until the returned handle is closed (nestable): their
   * backwards accumulate gradients locally, and the first forward after it averages the accumulated sum.
   *
   * <pre>{@code
   * try (var ignored = ddp.noSync()) {
   *   loss(ddp.forward(x1)).backward();   // local accumulation
   * }
   * loss(ddp.forward(x2)).backward();     // averages the gradients of both
   * }</pre>
   */
  public NoSync noSync() {
    noSyncDepth++;
    return new NoSync();
  }

  /** The handle of {@link #noSync()}: closing it (once) ends that suspension. */
  public final class NoSync implements AutoCloseable {
    private boolean closed;

    private NoSync() {}

    @Override
    public void close() {
      if (closed) return;
      closed = true;
      noSyncDepth--;
    }
  }

  /**
   * Completes the gradient averaging of the last backward: starts the buckets that have not started (a parameter
   * without a gradient counts as zeros), waits for every bucket and gives each parameter its averaged gradient.
   * Does nothing if backward has completed it already or the last forward ran inside {@link #noSync()}.
   */
  public void finish() {
    if (!armed) return;
    while (nextLaunch < buckets.size()) launch(buckets.get(nextLaunch++));
    complete();
  }

  private void accumulated(Tensor p) {
    if (!armed) return;
    Slot s = slots.get(p);
    if (s.ready) {
      if (s.bucket.future != null) {
        throw new IllegalStateException("DistributedDataParallel: parameter '" + s.name + "' " + java.util.Arrays.toString(
            p.shape()) + " received another gradient after its bucket " + s.bucket.index + " started its allreduce"
            + " (a parameter used again late in the forward); use a bucket that holds it with its later users");
      }
      return; // a second contribution before the bucket is full: the copy at launch sees the sum
    }
    s.ready = true;
    readyCount++;
    s.bucket.pending--;
    while (nextLaunch < buckets.size() && buckets.get(nextLaunch).pending == 0) launch(buckets.get(nextLaunch++));
    if (launched == buckets.size()) complete();
  }

  private void launch(Bucket b) {
    if (b.dtype == DType.F64) {
      double[] flat = new double[b.length];
      for (Slot s : b.slots) {
        Tensor g = s.param.grad();
        if (g != null) System.arraycopy(g.toDoubleArray(), 0, flat, s.offset, (int) s.param.numel());
      }
      b.f64 = flat;
      b.future = timed(b, group.allReduceAsync(flat, AllReduceOp.MEAN));
    } else {
      float[] flat = new float[b.length];
      for (Slot s : b.slots) {
        Tensor g = s.param.grad();
        if (g != null) System.arraycopy(g.toFloatArray(), 0, flat, s.offset, (int) s.param.numel());
      }
      b.f32 = flat;
      b.future = timed(b, group.allReduceAsync(flat, AllReduceOp.MEAN));
    }
    launched++;
  }

  /** {@code f}, completed once the time it completed is in {@code b.doneNanos} (for {@link #commStats()}). */
  private static CompletableFuture<Void> timed(Bucket b, CompletableFuture<Void> f) {
    b.launchNanos = System.nanoTime();
    return f.thenRun(() -> b.doneNanos = System.nanoTime());
  }

  /** Waits for every bucket and writes the averaged gradients back (new tensors: backward may still hold the old). */
  private void complete() {
    armed = false;
    long waitStart = System.nanoTime();
    for (Bucket b : buckets) {
      try {
        b.future.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new DistributedException("allreduce", group.rank(), -1,
            "DistributedDataParallel: interrupted waiting for bucket " + b.index, e);
      } catch (ExecutionException | CompletionException e) {
        Throwable c = e.getCause();
        while (c instanceof CompletionException && c.getCause() != null) c = c.getCause(); // thenRun's wrapper
        if (c instanceof RuntimeException r) throw r;
        throw new DistributedException("allreduce", group.rank(), -1,
            "DistributedDataParallel: allreduce of bucket " + b.index + " failed", c);
      }
    }
    statWaitNanos += System.nanoTime() - waitStart;
    long previousDone = Long.MIN_VALUE;
    for (Bucket b : buckets) {
      long start = Math.max(b.launchNanos, previousDone); // the communication thread runs the buckets in order
      statBusyNanos += Math.max(0, b.doneNanos - start);
      previousDone = b.doneNanos;
    }
    statSteps++;
    for (Bucket b : buckets) {
      for (Slot s : b.slots) {
        int[] shape = s.param.shape();
        int n = (int) s.param.numel();
        Tensor g = b.dtype == DType.F64
            ? Tensor.of(java.util.Arrays.copyOfRange(b.f64, s.offset, s.offset + n), shape)
            : Tensor.of(java.util.Arrays.copyOfRange(b.f32, s.offset, s.offset + n), shape);
        s.param.setGrad(s.param.device().equals(Device.CPU) ? g : g.to(s.param.device()));
      }
      b.f32 = null;
      b.f64 = null;
      b.future = null;
    }
    launched = 0;
    readyCount = 0;
  }

  private void broadcastBuffers() {
    if (group.worldSize() == 1) return;
    for (Tensor b : module.namedBuffers().values()) broadcast(b);
  }

  /** Overwrites {@code t}'s values with rank 0's (other dtypes than float32/64 travel as float64: exact for them). */
  private void broadcast(Tensor t) {
    try (Grad ignored = Grad.off()) {
      if (t.dtype() == DType.F32 || t.dtype() == DType.F64) {
        group.broadcast(t, 0);
      } else { // counters (num_batches_tracked, exact below 2^53), frozen half-precision parameters
        Tensor d = group.broadcast(t.to(DType.F64), 0);
        t.copy_(d.to(t.dtype()));
      }
    }
  }

  private static final class Bucket {
    final int index;
    final DType dtype;
    final List<Slot> slots = new ArrayList<>();
    int length;
    long bytes;
    int pending;
    CompletableFuture<Void> future;
    long launchNanos;
    volatile long doneNanos;
    float[] f32;
    double[] f64;

    Bucket(int index, DType dtype) {
      this.index = index;
      this.dtype = dtype;
    }

    void reset() {
      pending = slots.size();
      for (Slot s : slots) s.ready = false;
      future = null;
      f32 = null;
      f64 = null;
    }
  }

  private static final class Slot {
    final String name;
    final Tensor param;
    final Bucket bucket;
    final int offset;
    boolean ready;

    Slot(String name, Tensor param, Bucket bucket, int offset) {
      this.name = name;
      this.param = param;
      this.bucket = bucket;
      this.offset = offset;
    }
  }
}
