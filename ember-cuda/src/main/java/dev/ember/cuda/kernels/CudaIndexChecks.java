package dev.ember.cuda.kernels;

import dev.ember.backend.Backend.IndexRangeError;
import dev.ember.backend.View;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.tensor.DType;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * {@link dev.ember.backend.Backend#checkIndexRange} on a CUDA device, deferred: {@link #check} queues a kernel that
 * records the first out-of-range element of the index in a device slot (index_check.cu) and returns without
 * waiting; {@link #raisePending} reads the slots back and throws the first failed check's exception. The backend
 * calls it where the host waits for the device anyway (a copy to the host, {@code synchronize}, {@code allFinite}),
 * so a bad index surfaces there, after the op that queued it has returned, as PyTorch's device-side asserts do.
 * Each failed check is raised once ({@link PendingIndexChecks}). With {@link #CAPACITY} checks pending and no
 * synchronizing point in between, the next check reads the slots back first (one wait per that many checks).
 */
public final class CudaIndexChecks {
  /** Checks that may be pending at once. */
  public static final int CAPACITY = 256;

  static final String SOURCE = Sources.load("eg_common.cuh") + Sources.load("index_check.cu");

  private final CudaContext ctx;
  private final KernelCache cache;
  private final PendingIndexChecks pending = new PendingIndexChecks(CAPACITY);
  private long slots; // CAPACITY * 16 bytes of device memory, allocated at the first check

  public CudaIndexChecks(CudaContext ctx, KernelCache cache) {
    this.ctx = ctx;
    this.cache = cache;
  }

  /** Every kernel name of index_check.cu, for the compile check. */
  static java.util.List<String> kernelNames() {
    return java.util.List.of("index_check_range_i64", "index_check_range_i32", "index_check_value_i64",
        "index_check_value_i32");
  }

  /** Queues the check of {@code index} (int64 or int32, on this device, any layout); see the class comment. */
  public synchronized void check(View index, long lo, long hiExclusive, long allowed, IndexRangeError error) {
    if (index.dtype() != DType.I64 && index.dtype() != DType.I32) {
      throw new IllegalArgumentException("checkIndexRange: index must be int64 or int32, got "
          + index.dtype().torchName() + ": index=" + Arrays.toString(index.shapeRef()));
    }
    long ip = Geometry.base("checkIndexRange", "index", index);
    long n = index.numel();
    if (n == 0) return;
    if (pending.full()) raisePending();
    ctx.makeCurrent();
    if (slots == 0) slots = ctx.driver().memAlloc(16L * CAPACITY);
    long slot = slots + 16L * pending.add(error);
    ctx.driver().memsetD8(slot, 0xff, 16, ctx.stream()); // position: none yet
    String it = Geometry.tag(index.dtype());
    MemorySegment geo = Geometry.pack("checkIndexRange", index);
    KernelArgs a = KernelArgs.begin().ptr(ip);
    a.bytes(geo, Geometry.ALIGN);
    a.i64(n).i64(lo).i64(hiExclusive).i64(allowed).ptr(slot);
    cache.launch1d(fn("index_check_range_" + it), n, a);
    KernelArgs v = KernelArgs.begin().ptr(ip);
    v.bytes(Geometry.pack("checkIndexRange", index), Geometry.ALIGN);
    v.ptr(slot);
    cache.launch1d(fn("index_check_value_" + it), 1, v);
  }

  /** Whether checks are waiting to be read back. */
  public synchronized boolean hasPending() {
    return pending.size() > 0;
  }

  /**
   * Reads the pending checks' slots back (waiting for the work queued before them) and throws the first failed
   * check's exception; every pending check is forgotten either way. Nothing to do (no wait) when none is pending.
   */
  public synchronized void raisePending() {
    int count = pending.size();
    if (count == 0) return;
    long[] words = new long[2 * count];
    try {
      ctx.makeCurrent();
      ctx.driver().memcpyDtoHSync(MemorySegment.ofArray(words), slots, 16L * count);
    } catch (RuntimeException e) {
      long[] none = new long[2 * count];
      Arrays.fill(none, PendingIndexChecks.NONE);
      pending.drain(none); // the device failed: forget the checks rather than read them again
      throw e;
    }
    RuntimeException failed = pending.drain(words);
    if (failed != null) throw failed;
  }

  private long fn(String kernel) {
    return cache.function("ember_index_check", SOURCE, kernel);
  }
}
