package dev.ember.tensor;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * A stretch of code whose tensors give their memory back when it ends: every buffer allocated on
 * this thread while the scope is open (op outputs, autograd's saved tensors and gradients,
 * temporaries) comes from the thread's buffer pool and returns to it at {@link #close()}, so the
 * next step of a training loop reuses the same arrays instead of leaving hundreds of megabytes a
 * step to the garbage collector (whose young generation then grows, and with it the process's
 * resident memory). It is PyTorch's caching allocator with the lifetime made explicit, since the
 * JVM does not say when the last reference to a tensor goes:
 *
 * <pre>{@code
 * for (Tensor[] batch : batches) {
 *   try (MemoryScope step = MemoryScope.open()) {
 *     optimizer.zeroGrad();
 *     Tensor loss = lossFn.forward(model.call(batch[0]), batch[1]);
 *     loss.backward();
 *     optimizer.step();
 *     total += loss.item();          // a number survives the scope; the tensor does not
 *   }
 * }
 * }</pre>
 *
 * <p>What outlives a scope: tensors created before it opened or on other threads, gradients that
 * backward stores on a tensor created outside the scope (a parameter's {@code grad}, until
 * {@code zeroGrad()} inside a scope hands it back, see {@link #recycle}), optimizer state, and
 * tensors passed to {@link #keep} (handed to the enclosing scope) or {@link #escape} (left to the
 * garbage collector). Any other tensor of the scope is released at close: using it
 * afterwards throws an {@link IllegalStateException} saying so, never reads reused memory.
 * {@code Trainer.fit} opens one scope per optimizer step. Scopes nest and belong to the thread that
 * opened them; they must be closed innermost first (try-with-resources does that).
 *
 * <p>The pool keeps arrays by type and exact length, zero-fills them on reuse (as a fresh Java array
 * is), and drops the lengths that the last two outermost scopes did not ask for, so a change of
 * shapes (the last, smaller batch of an epoch) does not pin the old arrays for good.
 */
public final class MemoryScope implements AutoCloseable {
  private static final ThreadLocal<MemoryScope> CURRENT = new ThreadLocal<>();
  private static final ThreadLocal<Pool> POOLS = ThreadLocal.withInitial(Pool::new);

  private final MemoryScope parent;
  private final Thread owner;
  private final Pool pool;
  private Storage[] owned = new Storage[16];
  private int count;
  private boolean closed;

  private MemoryScope(MemoryScope parent, Pool pool) {
    this.parent = parent;
    this.owner = Thread.currentThread();
    this.pool = pool;
  }

  /** Opens a scope on this thread, inside the current one if any. */
  public static MemoryScope open() {
    MemoryScope s = new MemoryScope(CURRENT.get(), POOLS.get());
    if (s.parent == null) s.pool.beginOutermost();
    CURRENT.set(s);
    return s;
  }

  /** The innermost open scope of this thread, or null. */
  static MemoryScope current() {
    return CURRENT.get();
  }

  /** Whether a scope is open on this thread. */
  public static boolean active() {
    return CURRENT.get() != null;
  }

  /** A pooled buffer, zero-filled only when {@code zero} (else it may hold a released tensor's values). */
  Storage allocate(DType dtype, int n, boolean zero) {
    Storage st = Storage.pooled(dtype, n, pool.take(dtype, n, zero), this);
    adopt(st);
    return st;
  }

  /**
   * Hands {@code t}'s buffer (shared by all its views) to the enclosing scope, or to the garbage
   * collector when this scope is the outermost, so that it survives this scope's close. Returns t.
   */
  public Tensor keep(Tensor t) {
    checkOpen("keep");
    Storage st = t.storage();
    if (st.scope == this) {
      st.scope = parent;
      if (parent != null) parent.adopt(st);
    }
    return t;
  }

  /**
   * Takes {@code t}'s buffer out of whatever scope owns it: it is then collected like any Java
   * object once unreachable (optimizer state, a parameter's gradient). Returns t.
   */
  public static Tensor escape(Tensor t) {
    if (t != null) t.storage().scope = null;
    return t;
  }

  /**
   * Gives {@code t}'s buffer back to this thread's pool now, when a scope is open here and the buffer
   * came from a pool and belongs to no open scope (a parameter's gradient that {@code zeroGrad()} drops:
   * without this, every step would leave a model's worth of gradient arrays to the collector). Every
   * tensor on that buffer throws from then on. A {@linkplain Deferred deferred} gradient that was never
   * read hands back the buffers it would have been computed from. Does nothing otherwise.
   */
  public static void recycle(Tensor t) {
    if (t == null) return;
    MemoryScope s = CURRENT.get();
    Storage st = t.storage();
    if (s == null || st.isReleased() || st.scope != null) return;
    if (st.isDeferred() || st.fromPool()) s.pool.give(st); // give drops a deferred buffer's inputs
  }

  /**
   * Gives {@code t}'s buffer back to the pool now if this scope owns it (autograd's backward pass,
   * for a gradient no pending input and no leaf holds any more); does nothing otherwise.
   */
  public void releaseNow(Tensor t) {
    if (owns(t)) pool.give(t.storage());
  }

  /** Whether this scope (open) owns {@code t}'s buffer. */
  public boolean owns(Tensor t) {
    return !closed && t.storage().scope == this;
  }

  /** Makes this scope the owner of {@code st} (a deferred buffer, whose array comes later). */
  void own(Storage st) {
    st.scope = this;
    adopt(st);
  }

  /** An array of n elements from this thread's pool, contents unspecified (for a deferred buffer's values). */
  Object takeArray(DType dtype, int n) {
    return pool.take(dtype, n, false);
  }

  private void adopt(Storage st) {
    if (count == owned.length) owned = Arrays.copyOf(owned, count * 2);
    owned[count++] = st;
  }

  /** Releases the buffers this scope still owns into the pool. Idempotent; throws if an inner scope is still open. */
  @Override
  public void close() {
    if (closed) return;
    if (Thread.currentThread() != owner) {
      throw new IllegalStateException("MemoryScope.close: a scope belongs to the thread that opened it (" + owner.getName()
          + "), closed from " + Thread.currentThread().getName());
    }
    if (CURRENT.get() != this) {
      throw new IllegalStateException("MemoryScope.close: an inner scope is still open; close scopes innermost first");
    }
    closed = true;
    CURRENT.set(parent);
    for (int i = 0; i < count; i++) {
      Storage st = owned[i];
      owned[i] = null;
      if (st.scope == this) pool.give(st);
    }
    count = 0;
    if (parent == null) pool.endOutermost();
  }

  private void checkOpen(String op) {
    if (closed) throw new IllegalStateException("MemoryScope." + op + ": the scope is closed");
  }

  /** Bytes now held by this thread's pool for reuse. */
  public static long pooledBytes() {
    return POOLS.get().freeBytes;
  }

  /** Drops every array this thread's pool holds (they become garbage). */
  public static void trimPool() {
    POOLS.get().clear();
  }

  /** Free arrays by type and length; one per thread, so no locking. */
  private static final class Pool {
    private final Map<Long, Bin> bins = new HashMap<>();
    private long freeBytes;
    private long outermost;

    /** The free arrays of one type and length. */
    private static final class Bin {
      final ArrayDeque<Object> arrays = new ArrayDeque<>();
      final long bytes;
      long lastUse;

      Bin(DType dtype, int n) {
        bytes = (long) n * dtype.itemSize();
      }
    }

    private static long key(DType dtype, int n) {
      return ((long) dtype.ordinal() << 32) | n;
    }

    Object take(DType dtype, int n, boolean zero) {
      Bin bin = bins.get(key(dtype, n));
      Object a = null;
      if (bin != null) {
        bin.lastUse = outermost;
        a = bin.arrays.pollLast();
      }
      ScopeMemory.taken((long) n * dtype.itemSize());
      if (a == null) return Storage.newArray(dtype, n);
      freeBytes -= bin.bytes;
      if (zero) Storage.zero(a);
      return a;
    }

    /** Takes {@code st}'s array (releasing st: every later access throws) into the free lists. */
    void give(Storage st) {
      if (st.onDevice()) { // the device's allocator caches it, not this pool
        st.releaseDeviceMemory();
        return;
      }
      if (st.isDeferred()) { // never read: there is no array, only the inputs to hand back
        st.dropDeferred();
        return;
      }
      DType dtype = st.dtype();
      int n = st.size();
      boolean counted = st.fromPool(); // a deferred buffer resolved outside any scope got a fresh array
      Bin bin = bins.computeIfAbsent(key(dtype, n), k -> new Bin(dtype, n));
      bin.lastUse = Math.max(bin.lastUse, outermost);
      bin.arrays.addLast(st.release());
      freeBytes += bin.bytes;
      if (counted) ScopeMemory.given(bin.bytes);
    }

    void beginOutermost() {
      outermost++;
    }

    /** Drops the lengths not asked for by this outermost scope nor the one before. */
    void endOutermost() {
      for (Iterator<Bin> it = bins.values().iterator(); it.hasNext(); ) {
        Bin bin = it.next();
        if (bin.lastUse < outermost - 1) {
          freeBytes -= bin.bytes * bin.arrays.size();
          it.remove();
        }
      }
    }

    void clear() {
      bins.clear();
      freeBytes = 0;
    }
  }
}
