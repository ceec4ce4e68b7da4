package dev.ember.backend.cpu;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntConsumer;

/**
 * The one worker pool of the CPU backend.
 *
 * <p>Determinism contract: callers split work into tasks whose boundaries depend only on the
 * problem size (never on {@link #threads()}), each task writes its own outputs or its own partial
 * result slot, and partials are combined by the caller in task order. Then a result is bitwise the
 * same on 1 or N threads; only which thread runs a task changes.
 *
 * <p>Size: {@code EMBER_NUM_THREADS} (environment) or {@code -Dember.threads}, else the number of
 * available processors. {@link #setThreads(int)} changes it at run time (tests use it to compare 1
 * and 2 threads).
 */
public final class Parallel {
  private static volatile int threads = initialThreads();
  private static volatile Pool pool;
  private static final ThreadLocal<Boolean> IN_WORKER = ThreadLocal.withInitial(() -> false);

  /**
   * How long an idle worker spins before it parks, and how long the caller spins before it parks
   * while waiting for the last task. Ops come back to back in training, so a worker that has just
   * finished is usually needed again within microseconds; parking and unparking costs 10-50 us on
   * a VM, more than a whole 64K-element op.
   */
  private static final long SPIN_NANOS = 50_000;

  private Parallel() {}

  private static int initialThreads() {
    String v = System.getProperty("ember.threads");
    if (v == null) v = System.getenv("EMBER_NUM_THREADS");
    if (v != null && !v.isBlank()) {
      try {
        int n = Integer.parseInt(v.trim());
        if (n >= 1) return n;
      } catch (NumberFormatException ignored) {
        // fall through to the default and say so
      }
      System.err.println("ember: EMBER_NUM_THREADS must be a positive integer, got '" + v
          + "'; using " + Runtime.getRuntime().availableProcessors());
    }
    return Runtime.getRuntime().availableProcessors();
  }

  /** Number of threads work is spread over (the caller's thread counts as one). */
  public static int threads() {
    return threads;
  }

  /**
   * Task {@code t}'s mirror within the share that {@link #forEach forEach(tasks, ...)} gives its participant (each
   * owns a contiguous range [lo, hi) of the tasks): lo + hi - 1 - t. A pass whose task t runs task
   * {@code mirroredInShare(t, tasks)} of an earlier forEach over the same tasks goes through each thread's share of it
   * last to first, on that thread: it starts on the data that thread touched last, in its own core's caches, where a
   * reversal of the whole range would hand each thread the other threads' rows. One thread: the range reversed.
   */
  public static int mirroredInShare(int t, int tasks) {
    if (t < 0 || t >= tasks) {
      throw new IllegalArgumentException("Parallel.mirroredInShare: task " + t + " outside [0, " + tasks + ")");
    }
    int parts = Math.min(threads, tasks);
    for (int p = 0; ; p++) {
      int lo = shareStart(tasks, p, parts);
      int hi = shareStart(tasks, p + 1, parts);
      if (t < hi) return lo + hi - 1 - t;
    }
  }

  /** Where participant {@code p}'s share of {@code tasks} split into {@code parts} contiguous shares begins. */
  private static int shareStart(int tasks, int p, int parts) {
    return (int) ((long) tasks * p / parts);
  }

  /** Sets the pool size; results do not change, only speed. */
  public static synchronized void setThreads(int n) {
    if (n < 1) throw new IllegalArgumentException("Parallel.setThreads: thread count must be >= 1, got " + n);
    if (n == threads) return;
    threads = n;
    Pool old = pool;
    pool = null;
    if (old != null) old.shutdown();
  }

  private static Pool pool() {
    Pool p = pool;
    if (p == null) {
      synchronized (Parallel.class) {
        p = pool;
        if (p == null) pool = p = new Pool(threads - 1);
      }
    }
    return p;
  }

  /**
   * Whether a {@link #forEach} called from this thread now would run all its tasks on this thread:
   * one thread configured, or inside a task of another forEach (no nesting). A caller that splits
   * work into tasks only to spread it over threads can then keep it whole (a GEMM per attention
   * head inside a forEach over heads).
   */
  public static boolean runsInline() {
    return threads == 1 || IN_WORKER.get();
  }

  /**
   * Runs {@code body.accept(t)} for every task {@code t} in {@code [0, tasks)}, spread over the pool;
   * returns when all are done. Each must be independent of the others.
   *
   * <p>The schedule keeps tasks on the same thread from one call to the next: the tasks are split
   * into one contiguous range per thread (the caller's first, then each worker's), every thread
   * works through its own range from the front, and a thread that has finished its range takes
   * tasks from the back of the others'. Two element-wise ops over the same tensor then touch each
   * chunk from the same core, so the second finds the first's output in that core's cache. Taking
   * tasks in any order from a shared counter (as this pool did) hands about half the chunks to the
   * core that did not write them. On the 2-vCPU development host that read turns, for seconds at a
   * time, slower than DRAM (the vCPUs placed on different L3s, by the look of it): a 1M-element
   * {@code x * 1.5 + 0.5} ran ~5x slower (~550 against ~110 us) in those stretches. OpenMP's static
   * schedule, which PyTorch's parallel_for uses, keeps the same affinity.
   * Runs inline when there is one task or one thread, when called from a worker (no nesting), and
   * when another thread is using the pool (results are the same either way: only speed differs).
   */
  public static void forEach(int tasks, IntConsumer body) {
    if (tasks <= 0) return;
    if (tasks == 1 || runsInline()) {
      for (int t = 0; t < tasks; t++) body.accept(t);
      return;
    }
    Pool p = pool();
    if (!p.lock.tryLock()) {
      for (int t = 0; t < tasks; t++) body.accept(t);
      return;
    }
    Job job = new Job(tasks, body, Thread.currentThread(), p.workers.length + 1);
    IN_WORKER.set(true);
    try {
      p.submit(job);
      job.drain(0);
      job.awaitDone();
    } finally {
      p.current = null; // do not keep the body (and the arrays it captured) reachable
      IN_WORKER.set(false);
      p.lock.unlock();
    }
    Throwable f = job.failure;
    if (f instanceof RuntimeException re) throw re;
    if (f instanceof Error er) throw er;
    if (f != null) throw new IllegalStateException(f);
  }

  /**
   * One forEach call. Participant {@code p} (0 the caller, {@code i + 1} worker {@code i}) owns the
   * contiguous range {@code [tasks * p / parts, tasks * (p + 1) / parts)}; each range is one
   * {@code long} of {@link #ranges} holding {@code front << 32 | end}, claimed from the front by its
   * owner and from the back by the others, by compare-and-set. {@code done} counts finished tasks.
   */
  private static final class Job {
    private static final AtomicLong SEQ = new AtomicLong();
    /** Longs between two ranges' slots, so that two threads' claims do not share a cache line. */
    private static final int PAD = 8;
    final long seq = SEQ.incrementAndGet();
    final int tasks;
    final int parts;
    final IntConsumer body;
    final Thread caller;
    final AtomicLongArray ranges;
    final AtomicInteger done = new AtomicInteger();
    volatile Throwable failure;

    Job(int tasks, IntConsumer body, Thread caller, int threads) {
      this.tasks = tasks;
      this.parts = Math.min(threads, tasks);
      this.body = body;
      this.caller = caller;
      this.ranges = new AtomicLongArray(parts * PAD);
      for (int p = 0; p < parts; p++) {
        long lo = shareStart(tasks, p, parts), hi = shareStart(tasks, p + 1, parts);
        ranges.set(p * PAD, lo << 32 | hi);
      }
    }

    /** The next task of range {@code p}: its front one for its owner, else its back one; -1 if none. */
    private int claim(int p, boolean front) {
      int slot = p * PAD;
      while (true) {
        long r = ranges.get(slot);
        int lo = (int) (r >>> 32), hi = (int) r;
        if (lo >= hi) return -1;
        long next = front ? (long) (lo + 1) << 32 | hi : (long) lo << 32 | (hi - 1);
        if (ranges.compareAndSet(slot, r, next)) return front ? lo : hi - 1;
      }
    }

    /** Runs participant {@code self}'s range, then whatever is left of the others'. */
    void drain(int self) {
      if (self < parts) {
        for (int t; (t = claim(self, true)) >= 0; ) run(t);
      }
      for (int k = 1; k <= parts; k++) {
        int victim = (self + k) % parts;
        for (int t; (t = claim(victim, false)) >= 0; ) run(t);
      }
    }

    private void run(int t) {
      try {
        if (failure == null) body.accept(t);
      } catch (Throwable e) {
        synchronized (this) {
          if (failure == null) failure = e;
        }
      }
      if (done.incrementAndGet() == tasks) LockSupport.unpark(caller);
    }

    void awaitDone() {
      long spinUntil = System.nanoTime() + SPIN_NANOS;
      while (done.get() < tasks) {
        if (System.nanoTime() < spinUntil) {
          Thread.onSpinWait();
        } else {
          LockSupport.park(this);
        }
      }
    }
  }

  /** Daemon workers that wait for the next {@link Job}: spinning for a while, then parked. */
  private static final class Pool {
    final ReentrantLock lock = new ReentrantLock();
    final Thread[] workers;
    volatile Job current;
    volatile boolean stopped;

    Pool(int n) {
      workers = new Thread[n];
      for (int i = 0; i < n; i++) {
        int index = i + 1;
        Thread t = new Thread(() -> work(index), "ember-worker-" + index);
        t.setDaemon(true);
        workers[i] = t;
        t.start();
      }
    }

    void submit(Job job) {
      current = job;
      for (Thread w : workers) LockSupport.unpark(w);
    }

    void shutdown() {
      stopped = true;
      for (Thread w : workers) LockSupport.unpark(w);
    }

    /** Worker {@code index - 1}'s loop; {@code index} is its participant number in each {@link Job}. */
    private void work(int index) {
      IN_WORKER.set(true);
      long seen = 0;
      while (true) {
        Job j;
        long spinUntil = System.nanoTime() + SPIN_NANOS;
        while ((j = current) == null || j.seq == seen) {
          if (stopped) return;
          if (System.nanoTime() < spinUntil) {
            Thread.onSpinWait();
          } else {
            LockSupport.park(this);
          }
        }
        seen = j.seq;
        j.drain(index);
      }
    }
  }

  /** Number of fixed-size chunks of {@code chunk} elements covering {@code n} (thread-count independent). */
  public static int chunks(long n, int chunk) {
    return (int) ((n + chunk - 1) / chunk);
  }
}
