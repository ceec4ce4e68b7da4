package dev.ember.data;

import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import java.lang.ref.Cleaner;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The batches of another {@link BatchSource} delivered on a device, moved there ahead of time, as PyTorch's
 * {@code DataLoader(pin_memory=True)} with {@code x.to(device, non_blocking=True)} in the loop: while the training
 * thread computes on batch i, one daemon thread per iterator (named {@code ember-pin-memory-<id>}) takes batch i+1
 * from the source and copies its input and target with {@link Tensor#to(Device, boolean) to(device, true)} (on
 * CUDA: staged in pinned memory and copied on a copy stream, the compute stream ordered after it). At most two
 * batches wait ahead.
 *
 * <p>The batches, their order and values are the source's: the copy is the blocking copy's. A failure on the
 * background thread (loading, or the copy) is re-thrown on the thread that asks for the batch, as a
 * {@link DataLoaderException} naming the epoch and batch with the original cause. Closing the iterator (as the
 * Trainer does when it stops early) stops the thread, waits for it, and closes the source's iterator; an iterator
 * run to its end or dropped unclosed (once garbage collected) stops its thread too. {@link #close} closes every
 * iterator still open.
 */
public final class PinnedBatches implements BatchSource, AutoCloseable {
  private static final AtomicInteger IDS = new AtomicInteger();
  private static final Cleaner CLEANER = Cleaner.create();
  /** The end of an epoch on the queue. */
  private static final Object END = new Object();

  private final BatchSource source;
  private final Device device;
  private final Set<Mover> live = ConcurrentHashMap.newKeySet();

  /** {@code source}'s batches on {@code device}. */
  public PinnedBatches(BatchSource source, Device device) {
    this.source = Objects.requireNonNull(source, "PinnedBatches: source is null");
    this.device = Objects.requireNonNull(device, "PinnedBatches: device is null");
  }

  /** The source whose batches are moved. */
  public BatchSource source() {
    return source;
  }

  /** The device the batches are delivered on. */
  public Device device() {
    return device;
  }

  @Override
  public int numBatches() {
    return source.numBatches();
  }

  @Override
  public BatchIterator iterate(int epoch, int skipBatches) {
    return new Ahead(source.iterate(epoch, skipBatches), epoch, skipBatches);
  }

  /** Stops the threads of every iterator still open (their iterators then fail on {@code next}). */
  @Override
  public void close() {
    for (Mover m : live) m.stop();
  }

  @Override
  public String toString() {
    return "PinnedBatches(" + source + " -> " + device + ")";
  }

  /** A failure of batch {@code batch} on the background thread. */
  private record Failure(int batch, Throwable cause) {}

  /**
   * The background thread's work. It holds the queue and the source's iterator, never the {@link Ahead} iterator,
   * so an iterator dropped unclosed can be collected and its cleaner stop the thread.
   */
  private final class Mover implements Runnable {
    final BlockingQueue<Object> queue = new ArrayBlockingQueue<>(1);
    final BatchIterator inner;
    final int epoch;
    final int first;
    final Thread thread;
    volatile boolean stopped;

    Mover(BatchIterator inner, int epoch, int first) {
      this.inner = inner;
      this.epoch = epoch;
      this.first = first;
      this.thread = new Thread(this, "ember-pin-memory-" + IDS.incrementAndGet());
      thread.setDaemon(true);
    }

    @Override
    public void run() {
      int b = first;
      try {
        while (!stopped && inner.hasNext()) {
          Batch host = inner.next();
          Batch moved = new Batch(host.input().to(device, true), host.target().to(device, true));
          if (!put(moved)) return;
          b++;
        }
        put(END);
      } catch (Throwable t) {
        if (!stopped) put(new Failure(b, t));
      } finally {
        inner.close();
        live.remove(this);
      }
    }

    /** Waits for room on the queue; false when stopped meanwhile. */
    private boolean put(Object item) {
      try {
        while (!stopped) {
          if (queue.offer(item, 100, TimeUnit.MILLISECONDS)) return true;
        }
      } catch (InterruptedException e) {
        // stopped
      }
      return false;
    }

    /** Stops the thread and waits for it (it closes the source's iterator as it ends). */
    void stop() {
      stopped = true;
      if (Thread.currentThread() == thread) return;
      thread.interrupt();
      boolean interrupted = false;
      while (true) {
        try {
          thread.join();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) Thread.currentThread().interrupt();
    }
  }

  /** The training thread's side: takes the moved batches in order. */
  private final class Ahead implements BatchIterator {
    private final Mover mover;
    private final Cleaner.Cleanable cleanable;
    private final int epoch;
    private Object pending;
    private int nextBatch;
    private boolean done;

    Ahead(BatchIterator inner, int epoch, int first) {
      this.epoch = epoch;
      this.nextBatch = first;
      this.mover = new Mover(inner, epoch, first);
      live.add(mover);
      this.cleanable = CLEANER.register(this, mover::stop);
      mover.thread.start();
    }

    @Override
    public boolean hasNext() {
      if (done) return false;
      if (pending == null) pending = take();
      if (pending == END) {
        finish();
        return false;
      }
      return true;
    }

    @Override
    public Batch next() {
      if (!hasNext()) throw new NoSuchElementException("PinnedBatches: epoch " + epoch + " has no batch after " + nextBatch);
      Object item = pending;
      pending = null;
      if (item instanceof Failure f) {
        finish();
        Throwable c = f.cause();
        if (c instanceof DataLoaderException d) {
          throw new DataLoaderException(d.getMessage(), d.epoch(), d.batch(), d.sampleIndex(), d.getCause());
        }
        throw new DataLoaderException("PinnedBatches: batch " + f.batch() + " of epoch " + epoch + " failed on its way"
            + " to " + device + ": " + c, epoch, f.batch(), -1, c);
      }
      nextBatch++;
      return (Batch) item;
    }

    private Object take() {
      try {
        while (true) {
          Object item = mover.queue.poll(100, TimeUnit.MILLISECONDS);
          if (item != null) return item;
          if (mover.stopped && mover.queue.isEmpty()) {
            return new Failure(nextBatch, new IllegalStateException("PinnedBatches: the iterator was closed"));
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        finish();
        throw new DataLoaderException("PinnedBatches: interrupted while waiting for batch " + nextBatch + " of epoch "
            + epoch, epoch, nextBatch, -1, e);
      }
    }

    @Override
    public void close() {
      finish();
    }

    private void finish() {
      done = true;
      pending = null;
      cleanable.clean(); // stops and joins the thread, once
    }
  }
}
