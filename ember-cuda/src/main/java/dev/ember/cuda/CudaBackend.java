package dev.ember.cuda;

import dev.ember.backend.AttentionKernels;
import dev.ember.backend.Backend;
import dev.ember.backend.BinaryOp;
import dev.ember.backend.ConvolutionKernels;
import dev.ember.backend.NormalizationKernels;
import dev.ember.backend.OptimizerKernels;
import dev.ember.backend.PoolingKernels;
import dev.ember.backend.RandomKernels;
import dev.ember.backend.RecurrentKernels;
import dev.ember.backend.ReduceOp;
import dev.ember.backend.ResamplingKernels;
import dev.ember.backend.StridedView;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.View;
import dev.ember.backend.cpu.CpuBackends;
import dev.ember.cuda.kernels.CudaAttention;
import dev.ember.cuda.kernels.CudaConvolution;
import dev.ember.cuda.kernels.CudaIndexChecks;
import dev.ember.cuda.kernels.CudaIndexing;
import dev.ember.cuda.kernels.CudaMatmul;
import dev.ember.cuda.kernels.CudaNormalization;
import dev.ember.cuda.kernels.CudaOptimizer;
import dev.ember.cuda.kernels.CudaPooling;
import dev.ember.cuda.kernels.CudaRandom;
import dev.ember.cuda.kernels.CudaRecurrent;
import dev.ember.cuda.kernels.CudaReduce;
import dev.ember.cuda.kernels.CudaResampling;
import dev.ember.cuda.kernels.Elementwise;
import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.memory.Block;
import dev.ember.cuda.memory.CachingAllocator;
import dev.ember.cuda.memory.CudaAllocators;
import dev.ember.cuda.memory.CudaOutOfMemoryError;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;
import java.lang.foreign.MemorySegment;

/**
 * The {@link Backend} of one CUDA device ({@code cuda:N}): storages are device memory ({@link CudaMemory}) from the
 * device's caching allocator ({@link CudaAllocators}), the elementwise primitives run as NVRTC-compiled kernels
 * ({@link Elementwise}), and {@link #copy} also moves data between the host and the device. Reductions, indexing,
 * matmul (cuBLASLt; bfloat16 and float16 on tensor cores) and the kernel families have their own CUDA kernels in
 * {@code dev.ember.cuda.kernels}, the random fills too ({@link CudaRandom}, Philox4x32-10: a seed gives the same
 * device values on every run, but not the CPU's Mersenne-Twister values); only padding gradients of dtypes other
 * than F32 and F64 still run on the host ({@link HostFallback}). Every entry point first makes the device's primary
 * context current on the calling thread; work is queued on the context's stream and a copy to the host waits for it.
 *
 * <p>GPU parallelism is not threads: {@link #threads()} starts at 1, and {@link #setThreads} only validates and
 * records the number (a kernel's parallelism is its grid).
 */
public final class CudaBackend implements Backend {
  private final CudaContext ctx;
  private final KernelCache cache;
  private final Device device;
  private final CudaDriver driver;
  private final Elementwise elementwise;
  private final CudaReduce reduce;
  private final CudaIndexing indexing;
  private final CudaIndexChecks indexChecks;
  private final CudaMatmul matmul;
  private final CudaNormalization normalization;
  private final CudaAttention attention;
  private final CudaRecurrent recurrent;
  private final CudaConvolution convolution;
  private final CudaPooling pooling;
  private final CudaOptimizer optimizer;
  private final CudaRandom random;
  private final CudaResampling resampling;
  private final HostFallback fallback;
  private final Backend cpu = CpuBackends.instance();
  private final CachingAllocator allocator;
  private volatile int threads = 1;

  /** The backend of the device of {@code ctx}, compiling kernels through its kernel cache. */
  public CudaBackend(CudaContext ctx) {
    this.ctx = ctx;
    this.cache = ctx.kernels();
    this.device = Device.cuda(ctx.ordinal());
    this.driver = ctx.driver();
    this.allocator = CudaAllocators.of(ctx);
    this.gcEvery = Math.max(1L << 30, driver.totalMemory(ctx.ordinal()) / 4);
    this.gc = new GcTrigger(gcEvery);
    this.elementwise = new Elementwise(ctx);
    this.reduce = new CudaReduce(ctx, cache);
    this.indexing = new CudaIndexing(ctx, cache);
    this.indexChecks = new CudaIndexChecks(ctx, cache);
    this.matmul = new CudaMatmul(ctx, cache);
    this.normalization = new CudaNormalization(ctx, cache);
    this.attention = new CudaAttention(ctx, cache);
    this.recurrent = new CudaRecurrent(cache);
    this.convolution = new CudaConvolution(ctx, cache);
    this.pooling = new CudaPooling(ctx, cache);
    this.optimizer = new CudaOptimizer(ctx, cache);
    this.fallback = HostFallback.of(this, cpu);
    this.random = new CudaRandom(ctx, cache);
    this.resampling = new CudaResampling(ctx, cache, fallback.resampling());
  }

  @Override
  public String name() {
    return "cuda";
  }

  @Override
  public Device device() {
    return device;
  }

  /** e.g. "NVIDIA H200, sm_90, 139.8 GiB, CUDA 13.0 driver, convolutions on cuDNN 9.19.0 (...)". */
  @Override
  public String description() {
    CudaDriver d = ctx.driver();
    int v = d.driverVersion();
    return String.format(java.util.Locale.ROOT, "%s, %s, %.1f GiB, CUDA %d.%d driver, convolutions on %s", ctx.name(),
        ctx.arch(), d.totalMemory(ctx.ordinal()) / (double) (1L << 30), v / 1000, v % 1000 / 10,
        convolution.engine());
  }

  /** The context this backend computes in. */
  public CudaContext context() {
    return ctx;
  }

  /** The kernel cache this backend compiles through. */
  public KernelCache kernelCache() {
    return cache;
  }

  @Override
  public Storage allocate(DType dtype, long numel, boolean zero) {
    if (numel < 0 || numel > Integer.MAX_VALUE - 64) {
      throw new IllegalArgumentException("allocate: " + numel + " elements of " + dtype.torchName() + " do not fit in "
          + "one storage on " + device + " (max " + (Integer.MAX_VALUE - 64) + ")");
    }
    ctx.makeCurrent();
    long bytes = numel * dtype.itemSize();
    Block block = allocateCollecting(bytes);
    if (zero && bytes > 0) driver.memsetD8(block.ptr(), 0, bytes, ctx.stream());
    // the free function holds the block, never the storage (see CudaMemory); work is ordered on one stream, so a
    // block given back while kernels that use it are queued is only reused by work queued after them
    CudaMemory.Free free = (address, n) -> allocator.free(block);
    return CudaMemory.storage(dtype, (int) numel, new CudaMemory(device, block.ptr(), bytes, free));
  }

  /**
   * A block from the caching allocator, collecting garbage when device memory runs short. A device tensor's memory
   * goes back when its storage's {@link dev.ember.tensor.MemoryScope} closes or, outside a scope, when the garbage
   * collector finds the storage unreachable; the collector watches the Java heap, not the GPU, so a training loop
   * outside a scope would fill the device with dead tensors before it ran. So: once the allocator's bytes held for
   * tensors have grown by {@link #gcEvery} a collection is requested ({@link GcTrigger}), and an allocation that
   * fails collects, lets the cleaners give the dead tensors' blocks back, and retries (as {@code java.nio} does for
   * direct buffers) before the out-of-memory error reaches the caller.
   */
  private Block allocateCollecting(long bytes) {
    if (gc.shouldCollect(allocator.allocatedBytes() + bytes)) System.gc();
    try {
      return allocator.allocate(bytes, ctx.stream());
    } catch (CudaOutOfMemoryError e) {
      for (int attempt = 0; attempt < 6; attempt++) {
        System.gc();
        try {
          Thread.sleep(10L << attempt); // the Cleaner thread frees the blocks of the storages just found dead
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw e;
        }
        try {
          gc.reset(allocator.allocatedBytes());
          return allocator.allocate(bytes, ctx.stream());
        } catch (CudaOutOfMemoryError again) {
          // try again after a longer wait
        }
      }
      throw e;
    }
  }

  /** Growth of the bytes held for tensors between requested collections: a quarter of the device's memory, at least 1 GiB. */
  private final long gcEvery;
  private final GcTrigger gc;

  /**
   * Waits for the work queued on this GPU (Ember queues everything on one stream), then raises the first failed
   * {@link #checkIndexRange} queued since the last synchronizing point.
   */
  @Override
  public void synchronize() {
    ctx.synchronize();
    indexChecks.raisePending();
  }

  /**
   * Deferred ({@link CudaIndexChecks}): queues a kernel that records the first offending element and returns; the
   * exception is raised at the next point where the host waits for this device anyway (a copy to the host,
   * {@link #synchronize}, {@link #allFinite}), once, as PyTorch's device-side asserts surface asynchronously.
   */
  @Override
  public void checkIndexRange(View index, long lo, long hiExclusive, long allowed, IndexRangeError error) {
    requireHere("checkIndexRange", "index", index);
    indexChecks.check(index, lo, hiExclusive, allowed, error);
  }

  /** The caching allocator's statistics ({@link CachingAllocator#stats()}), by PyTorch's names. */
  @Override
  public java.util.Map<String, Long> memoryStats() {
    return allocator.stats().asMap();
  }

  /** The caching allocator this backend's storages come from (shared by every user of the device). */
  public CachingAllocator allocator() {
    return allocator;
  }

  // ------------------------------------------------------------------------------------------ elementwise

  @Override
  public void unary(UnaryOp op, double param, View x, View out) {
    rejectHalf("unary", x, out);
    ctx.makeCurrent();
    elementwise.unary(op, param, x, out);
  }

  @Override
  public void binary(BinaryOp op, View a, View b, View out) {
    rejectHalf("binary", a, b, out);
    ctx.makeCurrent();
    elementwise.binary(op, a, b, out);
  }

  @Override
  public void fill(View dst, double value) {
    ctx.makeCurrent();
    elementwise.fill(dst, value);
  }

  @Override
  public void where(View cond, View a, View b, View out) {
    ctx.makeCurrent();
    elementwise.where(cond, a, b, out);
  }

  @Override
  public void unaryBackward(UnaryOp op, View g, View ref, View out) {
    rejectHalf("unaryBackward", g, ref, out);
    ctx.makeCurrent();
    elementwise.unaryBackward(op, g, ref, out);
  }

  // ------------------------------------------------------------------------------------------ copies

  /**
   * Fails for a BF16 or F16 operand of a kernel that computes, naming the op and the dtype: on CUDA, 16-bit floats
   * are copied, converted, filled, selected, gathered and multiplied (GEMM), and the op layer widens them to float32
   * for everything else, so only a direct backend call gets here.
   */
  static void rejectHalf(String op, View... views) {
    for (View v : views) {
      if (v != null && v.dtype().isHalf()) {
        throw new IllegalArgumentException(op + ": dtype " + v.dtype().torchName() + " is not supported by this CUDA "
            + "kernel (shape " + Shapes.str(v.shapeRef()) + "); it computes in float32: convert first "
            + "(x.to(DType.F32))");
      }
    }
  }

  /**
   * dst = src converted to dst's dtype, any strides, where each side is on this device or the host. Host to
   * device: the host side becomes one contiguous block of dst's dtype (converted on the host as the CPU backend
   * converts), is copied in one transfer, and scattered into a strided dst by a kernel. Device to host: a strided
   * src is first gathered on the device, copied in one transfer, and converted or scattered on the host. Device to
   * device: one memcpy for dense same-dtype pairs, else the convert kernel.
   */
  @Override
  public void copy(View src, View dst) {
    if (!java.util.Arrays.equals(src.shapeRef(), dst.shapeRef())) {
      throw new IllegalArgumentException("copy: shapes differ: src=" + Shapes.str(src.shapeRef()) + ", dst="
          + Shapes.str(dst.shapeRef()));
    }
    boolean fromDevice = src.storage().onDevice();
    boolean toDevice = dst.storage().onDevice();
    if (fromDevice) requireHere("copy", "src", src);
    if (toDevice) requireHere("copy", "dst", dst);
    if (!fromDevice && !toDevice) {
      cpu.copy(src, dst);
      return;
    }
    if (src.numel() == 0) return;
    ctx.makeCurrent();
    if (fromDevice && toDevice) {
      if (src.dtype() == dst.dtype() && src.isContiguous() && dst.isContiguous()) {
        driver.memcpyDtoD(address(dst), address(src), bytes(dst), ctx.stream());
      } else {
        elementwise.convert(src, dst);
      }
    } else if (toDevice) {
      hostToDevice(src, dst);
    } else {
      deviceToHost(src, dst);
      indexChecks.raisePending(); // the copy waited for the queued work: a failed index check surfaces here
    }
  }

  /**
   * {@link #copy}, asynchronously for a host src and a contiguous dst on this device: the host block (converted to
   * dst's dtype on the host first when needed) is staged in pinned memory and copied on a copy stream
   * ({@link AsyncCopies}); the call returns once src has been read, without waiting for the transfer. Other pairs
   * copy as {@link #copy} does.
   */
  @Override
  public void copyNonBlocking(View src, View dst) {
    if (src.storage().onDevice() || !dst.storage().onDevice() || !dst.isContiguous() || src.numel() == 0
        || !java.util.Arrays.equals(src.shapeRef(), dst.shapeRef())) {
      copy(src, dst);
      return;
    }
    requireHere("copyNonBlocking", "dst", dst);
    View block = src;
    if (!(src.isContiguous() && src.dtype() == dst.dtype())) {
      block = StridedView.uninitialized(dst.dtype(), src.shapeRef());
      cpu.copy(src, block);
    }
    asyncCopies().hostToDevice(hostBlock(block), address(dst));
  }

  /** The non-blocking copies into this device (their pinned staging pool and copy stream), made on first use. */
  public AsyncCopies asyncCopies() {
    AsyncCopies a = asyncCopies;
    if (a == null) {
      synchronized (this) {
        a = asyncCopies;
        if (a == null) asyncCopies = a = new AsyncCopies(ctx);
      }
    }
    return a;
  }

  private volatile AsyncCopies asyncCopies;

  private void hostToDevice(View src, View dst) {
    View block = src;
    if (!(src.isContiguous() && src.dtype() == dst.dtype())) {
      block = StridedView.uninitialized(dst.dtype(), src.shapeRef());
      cpu.copy(src, block);
    }
    MemorySegment from = hostBlock(block);
    if (dst.isContiguous()) {
      driver.memcpyHtoDSync(address(dst), from, from.byteSize()); // reads the Java array in place
      return;
    }
    Storage tmp = allocate(dst.dtype(), dst.numel(), false);
    try {
      driver.memcpyHtoDSync(tmp.memory().address(), from, from.byteSize());
      elementwise.convert(contiguous(tmp, dst.shapeRef()), dst);
    } finally {
      tmp.memory().release();
    }
  }

  private void deviceToHost(View src, View dst) {
    Storage tmp = null;
    try {
      View dense = src;
      if (!src.isContiguous()) {
        tmp = allocate(src.dtype(), src.numel(), false);
        dense = contiguous(tmp, src.shapeRef());
        elementwise.convert(src, dense);
      }
      if (dst.isContiguous() && dst.dtype() == src.dtype()) {
        MemorySegment to = hostBlock(dst);
        driver.memcpyDtoHSync(to, address(dense), to.byteSize()); // writes the Java array in place
      } else {
        StridedView block = StridedView.uninitialized(src.dtype(), src.shapeRef());
        MemorySegment to = hostBlock(block);
        driver.memcpyDtoHSync(to, address(dense), to.byteSize());
        cpu.copy(block, dst);
      }
    } finally {
      if (tmp != null) tmp.memory().release();
    }
  }

  /** A contiguous view of {@code shape} over a whole storage. */
  private static StridedView contiguous(Storage st, int[] shape) {
    return StridedView.of(st, shape.clone(), Shapes.contiguousStrides(shape), 0);
  }

  /** The bytes of contiguous host view v, in place in its storage's array. */
  private static MemorySegment hostBlock(View v) {
    long size = v.dtype().itemSize();
    return HostSegments.of(v.storage()).asSlice(v.offset() * size, v.numel() * size);
  }

  /** The device address of v's first element. */
  private static long address(View v) {
    return v.storage().memory().address() + (long) v.offset() * v.dtype().itemSize();
  }

  private static long bytes(View v) {
    return v.numel() * v.dtype().itemSize();
  }

  private void requireHere(String op, String name, View v) {
    Device d = v.storage().device();
    if (d != device) {
      throw new IllegalArgumentException(op + ": " + name + " is on " + d + ", this backend computes on " + device
          + ": " + name + "=" + Shapes.str(v.shapeRef()));
    }
  }

  // ------------------------------------------------------------------------------------------ other families

  @Override
  public void reduce(ReduceOp op, View x, int[] axes, View out) {
    rejectHalf("reduce", x, out);
    ctx.makeCurrent();
    reduce.reduce(op, x, axes, out);
  }

  @Override
  public void argReduce(boolean max, View x, int axis, View out) {
    rejectHalf("argReduce", x, out);
    ctx.makeCurrent();
    reduce.argReduce(max, x, axis, out);
  }

  @Override
  public void softmax(View x, int axis, boolean log, View out) {
    rejectHalf("softmax", x, out);
    ctx.makeCurrent();
    reduce.softmax(x, axis, log, out);
  }

  @Override
  public void softmaxBackward(View g, View y, boolean log, View out) {
    rejectHalf("softmaxBackward", g, y, out);
    ctx.makeCurrent();
    reduce.softmaxBackward(g, y, log, out);
  }

  @Override
  public void cumsum(View x, int axis, View out) {
    rejectHalf("cumsum", x, out);
    ctx.makeCurrent();
    reduce.cumsum(x, axis, out);
  }

  @Override
  public boolean allFinite(View x) {
    rejectHalf("allFinite", x);
    ctx.makeCurrent();
    boolean finite = reduce.allFinite(x);
    indexChecks.raisePending(); // allFinite read its answer back: a failed index check surfaces here
    return finite;
  }

  /**
   * cuBLASLt: float32 or float64 operands of one dtype, or bfloat16 or float16 ones of one dtype into a float32 out
   * or one of their dtype, on tensor cores (a half out rounded once, as cuBLASLt stores it). A half operand beside
   * a float32 one or of the other half dtype is first widened to float32, exactly, and the product taken in
   * float32, as the CPU takes it; a half out of such a product, or of an empty one (k = 0), is computed in a float32
   * temporary and rounded once into it.
   */
  @Override
  public void matmul(View a, View b, View out, float beta) {
    ctx.makeCurrent();
    boolean halfPair = a.dtype().isHalf() && b.dtype() == a.dtype();
    if (out.dtype().isHalf() && (!halfPair || a.dtype() != out.dtype() || a.shapeRef()[2] == 0)) {
      Storage t = allocate(DType.F32, out.numel(), false);
      try {
        View f = contiguous(t, out.shapeRef());
        if (beta != 0) elementwise.convert(out, f);
        matmul(a, b, f, beta);
        elementwise.convert(f, out);
      } finally {
        t.memory().release();
      }
      return;
    }
    if (a.dtype() == b.dtype() || !(a.dtype().isHalf() || b.dtype().isHalf())) {
      matmul.matmul(a, b, out, beta);
      return;
    }
    Storage wa = a.dtype().isHalf() ? allocate(DType.F32, a.numel(), false) : null;
    Storage wb = b.dtype().isHalf() ? allocate(DType.F32, b.numel(), false) : null;
    try {
      matmul.matmul(widened(a, wa), widened(b, wb), out, beta);
    } finally {
      if (wa != null) wa.memory().release(); // stream-ordered: the product queued before reuses it
      if (wb != null) wb.memory().release();
    }
  }

  /** v itself when {@code into} is null, else v converted into the contiguous float32 storage {@code into}. */
  private View widened(View v, Storage into) {
    if (into == null) return v;
    View w = contiguous(into, v.shapeRef());
    elementwise.convert(v, w);
    return w;
  }

  /** The GEMM reads BF16 and F16 operands itself (tensor cores), so the op layer does not widen them first. */
  @Override
  public boolean matmulReadsHalf() {
    return true;
  }

  /** ... and writes their dtype itself, rounding once on store, so no float32 product is written and read back. */
  @Override
  public boolean matmulWritesHalf() {
    return true;
  }

  @Override
  public void gather(View x, int dim, View index, View out) {
    ctx.makeCurrent();
    indexing.gather(x, dim, index, out);
  }

  @Override
  public void scatter(View out, int dim, View index, View src, boolean accumulate) {
    ctx.makeCurrent();
    indexing.scatter(out, dim, index, src, accumulate);
  }

  @Override
  public void indexSelect(View x, int dim, View index, View out) {
    ctx.makeCurrent();
    indexing.indexSelect(x, dim, index, out);
  }

  @Override
  public void indexAdd(View out, int dim, View index, View src) {
    ctx.makeCurrent();
    indexing.indexAdd(out, dim, index, src);
  }

  @Override
  public NormalizationKernels normalization() {
    return normalization;
  }

  @Override
  public AttentionKernels attention() {
    return attention;
  }

  @Override
  public RecurrentKernels recurrent() {
    return recurrent;
  }

  /** Philox4x32-10 on the device ({@link CudaRandom}), keyed by draws from the generator given. */
  @Override
  public RandomKernels random() {
    return random;
  }

  @Override
  public ConvolutionKernels convolution() {
    return convolution;
  }

  @Override
  public PoolingKernels pooling() {
    return pooling;
  }

  /** On the device ({@link CudaResampling}); padding gradients other than F32 and F64 on the host. */
  @Override
  public ResamplingKernels resampling() {
    return resampling;
  }

  @Override
  public OptimizerKernels optimizer() {
    return optimizer;
  }

  // ------------------------------------------------------------------------------------------ threads

  /** 1, or the number {@link #setThreads} recorded: a GPU's parallelism is its kernels' grids, not host threads. */
  @Override
  public int threads() {
    return threads;
  }

  /**
   * Records {@code n} (validated as for every backend) without effect on the kernels: a GPU's parallelism is its
   * grids, not host threads; {@link #threads()} returns the number recorded.
   */
  @Override
  public void setThreads(int n) {
    if (n < 1) throw new IllegalArgumentException("setThreads: n must be >= 1, got " + n);
    threads = n;
  }

  @Override
  public String toString() {
    return "CudaBackend[" + device + "]";
  }
}
