package dev.ember.data;

import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.lang.ref.Cleaner;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Cuts a data set into batches, epoch by epoch, as PyTorch's {@code DataLoader}.
 *
 * <p>Epoch {@code e} visits the samples in the order of the {@code e}-th permutation drawn from
 * {@code new Generator(config.seed())} (index order without shuffling): the orders of PyTorch's
 * {@code DataLoader(shuffle=True, generator=torch.Generator().manual_seed(seed))}. An
 * optional per-sample {@link Transform} is applied to each input with a generator seeded by
 * ({@code seed}, {@code e}, sample index). A batch is therefore a pure function of the
 * configuration, the epoch and its position, and {@link #iterate(int, int)} can resume an epoch
 * exactly.
 *
 * <p>With {@code numWorkers > 0} batches are built ahead on that many daemon threads (named
 * {@code ember-data-loader-<id>-worker-<k>}), at most {@code 2 x numWorkers} batches ahead, and
 * delivered in order: the batches are bitwise the same as with {@code numWorkers = 0}. The
 * threads stop when the epoch's last batch is taken, when the iterator or the loader is closed, or,
 * for an iterator dropped half way (a {@code break} out of a for-each loop), once it is garbage
 * collected or its threads have been idle for {@value #KEEP_ALIVE_SECONDS} seconds. A failure while
 * loading is re-thrown on the caller as a {@link DataLoaderException} naming the sample index.
 *
 * <p>Samples of a {@link BatchDataset} (a {@link TensorDataset}), or of {@link Subset}s of one,
 * are gathered with one {@link BatchDataset#getBatch} call per batch; other data sets are read
 * sample by sample and stacked.
 *
 * <pre>{@code
 * FashionMnist.Split data = FashionMnist.load();               // finds or downloads the files
 * Transform aug = new Compose(new RandomCrop(28, 2), new RandomHorizontalFlip(0.5));
 * try (DataLoader train = new DataLoader(data.train(), BatchConfig.shuffled(128, 42), 2, aug)) {
 *   for (int epoch = 0; epoch < 10; epoch++) {
 *     for (Batch b : train) step(b.input(), b.target());        // [128, 1, 28, 28], I64 [128]
 *   }
 * }
 * }</pre>
 */
public final class DataLoader implements BatchSource, Iterable<Batch>, AutoCloseable {
  static final int KEEP_ALIVE_SECONDS = 2;
  private static final AtomicInteger IDS = new AtomicInteger();
  private static final Cleaner CLEANER = Cleaner.create();

  private final Dataset<Sample> dataset;
  private final BatchConfig config;
  private final int numWorkers;
  private final Transform transform;
  private final Fast fast;
  private final int numBatches;
  /** The generator after drawing epoch {@code orderEpoch}'s order, so the next epoch's costs one permutation. */
  private Generator orderGen;
  private int orderEpoch;
  private final int id = IDS.incrementAndGet();
  private final AtomicInteger nextEpoch = new AtomicInteger();
  private final Set<ThreadPoolExecutor> pools = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  /** Loads on the calling thread, without a transform. */
  public DataLoader(Dataset<Sample> dataset, BatchConfig config) {
    this(dataset, config, 0, null);
  }

  /** Loads on {@code numWorkers} background threads (0: on the calling thread), without a transform. */
  public DataLoader(Dataset<Sample> dataset, BatchConfig config, int numWorkers) {
    this(dataset, config, numWorkers, null);
  }

  /**
   * Loads on {@code numWorkers} background threads (0: on the calling thread) and passes each
   * sample's input through {@code transform} (null: none).
   */
  public DataLoader(Dataset<Sample> dataset, BatchConfig config, int numWorkers, Transform transform) {
    this.dataset = Objects.requireNonNull(dataset, "DataLoader: dataset is null");
    this.config = Objects.requireNonNull(config, "DataLoader: config is null");
    if (numWorkers < 0) throw new IllegalArgumentException("DataLoader: numWorkers must be >= 0, got " + numWorkers);
    int n = dataset.size();
    if (n == 0) throw new IllegalArgumentException("DataLoader: the data set is empty, so there is nothing to batch: " + dataset);
    int bs = config.batchSize();
    this.numBatches = config.dropLast() ? n / bs : (int) ((n + (long) bs - 1) / bs);
    if (numBatches == 0) {
      throw new IllegalArgumentException("DataLoader: dropLast with batch size " + bs + " and " + n
          + " samples leaves no batch; hint: a smaller batch size or dropLast=false");
    }
    this.numWorkers = numWorkers;
    this.transform = transform;
    this.fast = Fast.resolve(dataset);
  }

  /** The data set batched. */
  public Dataset<Sample> dataset() {
    return dataset;
  }

  /** The batching configuration. */
  public BatchConfig config() {
    return config;
  }

  /** Background threads per epoch (0: batches are built on the calling thread). */
  public int numWorkers() {
    return numWorkers;
  }

  /** The number in this loader's worker thread names. */
  int id() {
    return id;
  }

  @Override
  public int numBatches() {
    return numBatches;
  }

  /** The order in which epoch {@code epoch} visits the data set's indices. */
  public int[] order(int epoch) {
    if (epoch < 0) throw new IllegalArgumentException("DataLoader: epoch must be >= 0, got " + epoch);
    int n = dataset.size();
    if (!config.shuffle()) {
      int[] a = new int[n];
      for (int i = 0; i < n; i++) a[i] = i;
      return a;
    }
    synchronized (this) {
      // epochs usually come in order: continue from the last one rather than replay from the seed
      if (orderGen == null || orderEpoch >= epoch) {
        orderGen = new Generator(config.seed());
        orderEpoch = -1;
      }
      for (; orderEpoch < epoch - 1; orderEpoch++) orderGen.skipPermutation(n);
      orderEpoch = epoch;
      return orderGen.permutation(n);
    }
  }

  @Override
  public BatchIterator iterate(int epoch, int skipBatches) {
    if (closed) throw new IllegalStateException("DataLoader: iterate after close()");
    if (epoch < 0) throw new IllegalArgumentException("DataLoader.iterate: epoch must be >= 0, got " + epoch);
    if (skipBatches < 0 || skipBatches > numBatches) {
      throw new IllegalArgumentException("DataLoader.iterate: skipBatches must be in 0.." + numBatches + ", got " + skipBatches);
    }
    int[] order = order(epoch);
    return numWorkers == 0 ? new Direct(epoch, order, skipBatches, numBatches)
        : new Prefetching(epoch, order, skipBatches, numBatches);
  }

  /**
   * This loader's batches (its batch size, drop-last rule, workers and transform) over another order of its data set:
   * epoch {@code e} visits the indices {@code order.apply(e)}, an array of {@code samples} indices of this data set (a
   * shard of {@link #order(int)}, as a distributed sampler takes). Transforms see the data set's own indices, so a
   * sample is augmented as this loader would augment it.
   *
   * @throws IllegalArgumentException if {@code samples} leaves no batch
   */
  public BatchSource reordered(int samples, java.util.function.IntFunction<int[]> order) {
    Objects.requireNonNull(order, "DataLoader.reordered: order is null");
    int bs = config.batchSize();
    int batches = config.dropLast() ? samples / bs : (int) ((samples + (long) bs - 1) / bs);
    if (samples < 1 || batches == 0) {
      throw new IllegalArgumentException("DataLoader.reordered: " + samples + " samples per epoch at batch size " + bs
          + (config.dropLast() ? " with dropLast" : "") + " leave no batch");
    }
    int n = dataset.size();
    return new BatchSource() {
      @Override
      public int numBatches() {
        return batches;
      }

      @Override
      public BatchIterator iterate(int epoch, int skipBatches) {
        if (closed) throw new IllegalStateException("DataLoader: iterate after close()");
        if (skipBatches < 0 || skipBatches > batches) {
          throw new IllegalArgumentException("DataLoader.iterate: skipBatches must be in 0.." + batches + ", got " + skipBatches);
        }
        int[] o = order.apply(epoch);
        if (o == null || o.length != samples) {
          throw new IllegalStateException("DataLoader.reordered: epoch " + epoch + "'s order has "
              + (o == null ? "no" : Integer.toString(o.length)) + " indices, expected " + samples);
        }
        for (int i : o) {
          if (i < 0 || i >= n) {
            throw new IllegalStateException("DataLoader.reordered: epoch " + epoch + "'s order holds index " + i
                + ", outside the data set's 0.." + (n - 1));
          }
        }
        return numWorkers == 0 ? new Direct(epoch, o, skipBatches, batches) : new Prefetching(epoch, o, skipBatches, batches);
      }

      @Override
      public String toString() {
        return "DataLoader.reordered(" + samples + " samples of " + DataLoader.this + ")";
      }
    };
  }

  /**
   * The batches of the next epoch: the first call gives epoch 0, the next epoch 1, and so on, so
   * that {@code for (Batch b : loader)} inside an epoch loop reshuffles each time.
   */
  @Override
  public BatchIterator iterator() {
    return iterate(nextEpoch.getAndIncrement(), 0);
  }

  /**
   * This loader's batches delivered on {@code device}, as {@code DataLoader(pin_memory=True)} with
   * {@code x.to(device, non_blocking=True)} in the loop: a background thread moves batch i+1 (on CUDA through
   * pinned memory and a copy stream) while the caller computes on batch i. Same batches, order and values as this
   * loader's; see {@link PinnedBatches}. (Ember's host tensors are Java arrays, which cannot be pinned in place: the
   * pinning happens in the device backend's staging buffers, so there is no pinned host batch to hand out.)
   */
  public PinnedBatches pinMemory(Device device) {
    return new PinnedBatches(this, device);
  }

  /** Stops every background thread of this loader; later calls to {@link #iterate} fail. */
  @Override
  public void close() {
    closed = true;
    for (ThreadPoolExecutor pool : pools) new Shutdown(pool, pools).run();
  }

  @Override
  public String toString() {
    return "DataLoader(" + dataset + ", " + config + ", numWorkers=" + numWorkers
        + (transform == null ? "" : ", transform=" + transform) + ")";
  }

  // ------------------------------------------------------------------ building one batch

  /** Batch {@code b} of an epoch whose order is {@code order}. A pure function of its arguments. */
  Batch load(int epoch, int b, int[] order) {
    int from = b * config.batchSize();
    int[] idx = Arrays.copyOfRange(order, from, Math.min(order.length, from + config.batchSize()));
    if (fast != null && transform == null) {
      try {
        return fast.target.getBatch(fast.map(idx));
      } catch (RuntimeException e) {
        for (int i : idx) sample(epoch, b, i); // names the failing sample when one fails alone
        throw new DataLoaderException("DataLoader: batch " + b + " of epoch " + epoch + " failed: " + e.getMessage(),
            epoch, b, -1, e);
      }
    }
    Sample[] samples = new Sample[idx.length];
    for (int k = 0; k < idx.length; k++) samples[k] = sample(epoch, b, idx[k]);
    return new Batch(stack(samples, idx, epoch, b, true), stack(samples, idx, epoch, b, false));
  }

  private Sample sample(int epoch, int b, int index) {
    try {
      Sample s = dataset.get(index);
      if (s == null) throw new IllegalStateException("the data set returned null");
      if (transform == null) return s;
      Generator gen = new Generator(Seeds.mix(Seeds.mix(config.seed() ^ Seeds.AUGMENT, epoch), index));
      Tensor x = transform.apply(s.input(), gen);
      if (x == null) throw new IllegalStateException("the transform returned null");
      return new Sample(x, s.target());
    } catch (RuntimeException e) {
      throw new DataLoaderException("DataLoader: loading sample " + index + " (batch " + b + " of epoch " + epoch
          + ") failed: " + e, epoch, b, index, e);
    }
  }

  /** The inputs (or targets) of {@code samples} stacked along a new first dimension. */
  private static Tensor stack(Sample[] samples, int[] idx, int epoch, int b, boolean inputs) {
    Tensor first = inputs ? samples[0].input() : samples[0].target();
    int[] shape = first.shape();
    long numel = first.numel();
    if (numel * samples.length > Integer.MAX_VALUE - 64) {
      throw new DataLoaderException("DataLoader: batch " + b + " of epoch " + epoch + " would hold "
          + numel * samples.length + " elements, more than one tensor holds", epoch, b, -1, null);
    }
    int[] outShape = new int[shape.length + 1];
    outShape[0] = samples.length;
    System.arraycopy(shape, 0, outShape, 1, shape.length);
    Tensor out = Tensor.empty(first.dtype(), outShape);
    for (int k = 0; k < samples.length; k++) {
      Tensor t = inputs ? samples[k].input() : samples[k].target();
      if (t.dtype() != first.dtype() || !Arrays.equals(t.shapeRef(), first.shapeRef())) {
        throw new DataLoaderException("DataLoader: cannot stack the " + (inputs ? "inputs" : "targets") + " of batch " + b
            + " of epoch " + epoch + ": sample " + idx[k] + " is " + TensorDataset.DTypeShape.of(t) + " but sample "
            + idx[0] + " is " + TensorDataset.DTypeShape.of(first), epoch, b, idx[k], null);
      }
      Tensor c = Images.dense(t);
      TensorData.copy(c, 0, out, k * numel, (int) numel);
    }
    return out;
  }

  /** A {@link BatchDataset} reached through zero or more {@link Subset}s, with the composed index map. */
  private record Fast(BatchDataset target, int[] indexMap) {
    static Fast resolve(Dataset<?> ds) {
      if (ds instanceof BatchDataset b) return new Fast(b, null);
      if (ds instanceof Subset<?> s) {
        Fast inner = resolve(s.dataset());
        if (inner == null) return null;
        int[] idx = s.indices();
        return new Fast(inner.target, inner.indexMap == null ? idx : inner.map(idx));
      }
      return null;
    }

    int[] map(int[] idx) {
      if (indexMap == null) return idx;
      int[] out = new int[idx.length];
      for (int i = 0; i < idx.length; i++) out[i] = indexMap[idx[i]];
      return out;
    }
  }

  // ------------------------------------------------------------------ iterators

  /** Builds each batch on the calling thread when it is asked for. */
  private final class Direct implements BatchIterator {
    private final int epoch;
    private final int[] order;
    private final int numBatches;
    private int next;

    Direct(int epoch, int[] order, int skip, int numBatches) {
      this.epoch = epoch;
      this.order = order;
      this.next = skip;
      this.numBatches = numBatches;
    }

    @Override
    public boolean hasNext() {
      return next < numBatches;
    }

    @Override
    public Batch next() {
      if (!hasNext()) throw new NoSuchElementException("DataLoader: epoch " + epoch + " has no batch after " + next);
      int b = next;
      next = numBatches; // a failed batch ends the epoch, as with workers
      Batch batch = load(epoch, b, order);
      next = b + 1;
      return batch;
    }

    @Override
    public void close() {
      next = numBatches;
    }
  }

  /** Keeps up to {@code 2 x numWorkers} batches in flight on a private pool and hands them out in order. */
  private final class Prefetching implements BatchIterator {
    private final int epoch;
    private final int[] order;
    private final ThreadPoolExecutor pool;
    private final Cleaner.Cleanable cleanable;
    private final ArrayDeque<Future<Batch>> window = new ArrayDeque<>();
    private final int ahead = 2 * numWorkers;
    private final int numBatches;
    private int nextSubmit;
    private int nextDeliver;
    private boolean done;

    Prefetching(int epoch, int[] order, int skip, int numBatches) {
      this.epoch = epoch;
      this.order = order;
      this.numBatches = numBatches;
      this.nextSubmit = skip;
      this.nextDeliver = skip;
      AtomicInteger count = new AtomicInteger();
      String prefix = "ember-data-loader-" + id + "-worker-";
      this.pool = new ThreadPoolExecutor(numWorkers, numWorkers, KEEP_ALIVE_SECONDS, TimeUnit.SECONDS,
          new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, prefix + count.getAndIncrement());
            t.setDaemon(true);
            return t;
          });
      pool.allowCoreThreadTimeOut(true); // threads of an abandoned iterator exit once idle
      pools.add(pool);
      // must not capture this iterator, or it would never become unreachable
      this.cleanable = CLEANER.register(this, new Shutdown(pool, pools));
      if (skip == numBatches || closed) { // closed: the loader's close() may have missed this new pool
        finish();
      } else {
        fill();
      }
    }

    private void fill() {
      while (nextSubmit < numBatches && window.size() < ahead) {
        int b = nextSubmit++;
        int e = epoch;
        int[] o = order;
        window.add(pool.submit(() -> load(e, b, o)));
      }
    }

    @Override
    public boolean hasNext() {
      return !done && nextDeliver < numBatches;
    }

    @Override
    public Batch next() {
      if (!hasNext()) throw new NoSuchElementException("DataLoader: epoch " + epoch + " has no batch after " + nextDeliver);
      if (closed) {
        finish();
        throw new IllegalStateException("DataLoader: the loader was closed while iterating epoch " + epoch);
      }
      Future<Batch> f = window.poll();
      int b = nextDeliver++;
      Batch batch;
      try {
        batch = f.get();
      } catch (ExecutionException e) {
        finish();
        Throwable c = e.getCause();
        if (c instanceof DataLoaderException d) {
          throw new DataLoaderException(d.getMessage(), d.epoch(), d.batch(), d.sampleIndex(), d.getCause());
        }
        throw new DataLoaderException("DataLoader: batch " + b + " of epoch " + epoch + " failed on a worker: " + c,
            epoch, b, -1, c);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        finish();
        throw new DataLoaderException("DataLoader: interrupted while waiting for batch " + b + " of epoch " + epoch,
            epoch, b, -1, e);
      } catch (CancellationException e) {
        finish();
        throw new IllegalStateException("DataLoader: the loader was closed while iterating epoch " + epoch, e);
      }
      if (nextDeliver == numBatches) {
        finish();
      } else {
        fill();
      }
      return batch;
    }

    @Override
    public void close() {
      finish();
    }

    private void finish() {
      done = true;
      for (Future<Batch> f : window) f.cancel(true);
      window.clear();
      cleanable.clean(); // shuts the pool down, once
    }
  }

  /** The cleanup of a {@link Prefetching} iterator, run by close() or by the Cleaner. */
  private record Shutdown(ThreadPoolExecutor pool, Set<ThreadPoolExecutor> pools) implements Runnable {
    @Override
    public void run() {
      // tasks that never started would leave a consumer waiting on their futures forever: cancel them
      for (Runnable r : pool.shutdownNow()) {
        if (r instanceof Future<?> f) f.cancel(false);
      }
      pools.remove(pool);
    }
  }
}
