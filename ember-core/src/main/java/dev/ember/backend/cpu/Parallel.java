package dev.ember.backend.cpu;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
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
  private static volatile ExecutorService pool;
  private static final ThreadLocal<Boolean> IN_WORKER = ThreadLocal.withInitial(() -> false);

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

  /** Sets the pool size; results do not change, only speed. */
  public static synchronized void setThreads(int n) {
    if (n < 1) throw new IllegalArgumentException("Parallel.setThreads: thread count must be >= 1, got " + n);
    if (n == threads) return;
    threads = n;
    ExecutorService old = pool;
    pool = null;
    if (old != null) old.shutdown();
  }

  private static ExecutorService pool() {
    ExecutorService p = pool;
    if (p == null) {
      synchronized (Parallel.class) {
        p = pool;
        if (p == null) {
          AtomicInteger id = new AtomicInteger();
          p = Executors.newFixedThreadPool(Math.max(1, threads - 1), r -> {
            Thread t = new Thread(() -> {
              IN_WORKER.set(true);
              r.run();
            }, "ember-worker-" + id.incrementAndGet());
            t.setDaemon(true);
            return t;
          });
          pool = p;
        }
      }
    }
    return p;
  }

  /**
   * Runs {@code body.accept(t)} for every task {@code t} in {@code [0, tasks)}, spread over the pool;
   * returns when all are done. Tasks are claimed dynamically; each must be independent of the others.
   * Runs inline when there is one task, one thread, or when called from a worker (no nesting).
   */
  public static void forEach(int tasks, IntConsumer body) {
    int nt = threads;
    if (tasks <= 0) return;
    if (tasks == 1 || nt == 1 || IN_WORKER.get()) {
      for (int t = 0; t < tasks; t++) body.accept(t);
      return;
    }
    int helpers = Math.min(nt, tasks) - 1;
    AtomicInteger next = new AtomicInteger();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CountDownLatch done = new CountDownLatch(helpers);
    Runnable worker = () -> {
      try {
        drain(tasks, body, next, failure);
      } finally {
        done.countDown();
      }
    };
    ExecutorService p = pool();
    for (int i = 0; i < helpers; i++) p.execute(worker);
    boolean wasWorker = IN_WORKER.get();
    IN_WORKER.set(true);
    try {
      drain(tasks, body, next, failure);
    } finally {
      IN_WORKER.set(wasWorker);
    }
    try {
      done.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Parallel.forEach: interrupted while waiting for workers", e);
    }
    Throwable f = failure.get();
    if (f instanceof RuntimeException re) throw re;
    if (f instanceof Error er) throw er;
    if (f != null) throw new IllegalStateException(f);
  }

  private static void drain(int tasks, IntConsumer body, AtomicInteger next, AtomicReference<Throwable> failure) {
    int t;
    while ((t = next.getAndIncrement()) < tasks) {
      if (failure.get() != null) return;
      try {
        body.accept(t);
      } catch (Throwable e) {
        failure.compareAndSet(null, e);
        return;
      }
    }
  }

  /** Number of fixed-size chunks of {@code chunk} elements covering {@code n} (thread-count independent). */
  public static int chunks(long n, int chunk) {
    return (int) ((n + chunk - 1) / chunk);
  }
}
