package dev.ember.backend;

import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Storage;

/**
 * The primitives a device implements, on {@link View}s (a tensor is one, passed as it is). Views passed in are
 * already validated by the op layer (shapes broadcast, axes normalised, dtypes promoted), so implementations trust
 * their input. Outputs are preallocated by the caller and may be strided views (in-place ops write through them).
 * A CUDA or other backend implements the same interface and passes the same conformance suite
 * ({@code BackendConformanceTest}).
 */
public interface Backend {
  /** e.g. {@code "cpu-vector"}, {@code "cpu-scalar"}, {@code "cuda"}. */
  String name();

  /**
   * What computes behind {@link #name()}, for run reports: the CPU's name, a GPU's model, memory and the libraries its
   * kernels run through. The default is {@link #name()}.
   */
  default String description() {
    return name();
  }

  /** The device whose memory this backend allocates and computes on. */
  default Device device() {
    return Device.CPU;
  }

  /**
   * A new buffer of {@code numel} elements of {@code dtype} on this backend's device, zero-filled when {@code zero}
   * (else its contents are unspecified). The CPU's are heap arrays (pooled inside a
   * {@link dev.ember.tensor.MemoryScope}); another device's wrap its own memory ({@link Storage#onDevice}).
   */
  default Storage allocate(DType dtype, long numel, boolean zero) {
    return zero ? Storage.allocate(dtype, numel) : Storage.allocateUninitialized(dtype, numel);
  }

  /** out = op(x) elementwise, same shape; {@code param} is the op's scalar parameter if it has one. */
  void unary(UnaryOp op, double param, View x, View out);

  /** out = a op b; a and b are already expanded (stride 0) to out's shape. Comparisons and logical ops write BOOL. */
  void binary(BinaryOp op, View a, View b, View out);

  /**
   * The elementwise epilogue of a product z (a GEMM's output): {@code a = act(z)} (skipped when {@code act} is null,
   * a is then z), then {@code out = a + residual} (skipped when {@code residual} is null). All views have z's shape
   * and floating dtype; a may be z and out may be a (written in place). Every element has the bits {@link #unary}
   * and {@link #binary} ADD give it, in that order; a backend that can runs both on one block of elements at a time,
   * while it is in cache. This default runs them one after the other on the whole tensor.
   */
  default void epilogue(UnaryOp act, double param, View z, View a, View residual, View out) {
    if (act != null) unary(act, param, z, a);
    if (residual != null) binary(BinaryOp.ADD, act != null ? a : z, residual, out);
  }

  /**
   * dst = src converted to dst's dtype, same shape. A device backend's copy also moves data between the host and
   * its device: one of src and dst may be a CPU view.
   */
  void copy(View src, View dst);

  /**
   * {@link #copy} that need not wait for the data to arrive, as PyTorch's {@code x.to(device, non_blocking=True)}:
   * a host {@code src} may be changed or dropped once this returns (the backend has taken what it needs), and
   * every operation queued on {@code dst}'s device afterwards sees the copied values; the host does not wait for
   * the transfer. Same values as {@link #copy}. This default is {@link #copy} (the CPU, and any copy to the host or
   * between layouts a backend does not overlap: those wait as blocking copies do).
   */
  default void copyNonBlocking(View src, View dst) {
    copy(src, dst);
  }

  /** Every element of dst = value, converted to dst's dtype. */
  void fill(View dst, double value);

  /** out = cond ? a : b with all three expanded to out's shape. */
  void where(View cond, View a, View b, View out);

  /**
   * The backward of an elementwise op in one pass, element for element the value of its composite:
   * <ul>
   *   <li>RELU, ref = x: {@code out = g * (x > 0 ? 1 : 0)}, as {@code g.mul(x.gt(0).to(g.dtype()))} (NaN or
   *       infinite g still gives NaN where x &lt;= 0);
   *   <li>TANH, ref = tanh(x): {@code out = g * (1 - ref * ref)}, as {@code g.mul(ref.mul(ref).neg().add(1))};
   *   <li>SIGMOID, ref = sigmoid(x): {@code out = g * (ref * (1 - ref))}, as
   *       {@code g.mul(ref.mul(ref.neg().add(1)))}.
   * </ul>
   * g, ref and out share one floating dtype; g and ref are already expanded to out's shape.
   *
   * @throws IllegalArgumentException for any other op
   */
  void unaryBackward(UnaryOp op, View g, View ref, View out);

  /**
   * out = the {@code program}'s output, its tensor inputs in {@code inputs} (in order, each F32 or F64 of out's
   * dtype: a FULL one of out's shape, a ROW one of out's last dim, a COLUMN one of one element per row of out, see
   * {@link ElementwiseProgram}). Every element has the bits the program's ops give run one by one as eager ops
   * (each rounding to the dtype). This default does exactly that, step by step through {@link #unary} and
   * {@link #binary} into temporary buffers; the CPU backend runs contiguous float32 programs in one pass instead,
   * reading each input once and writing out once.
   */
  default void fusedElementwise(ElementwiseProgram program, View[] inputs, View out) {
    int[] shape = out.shapeRef();
    int rank = shape.length;
    int[] contiguous = dev.ember.tensor.Shapes.contiguousStrides(shape);
    View[] values = new View[program.valueCount()];
    for (int i = 0; i < program.inputs().size(); i++) {
      ElementwiseProgram.Input in = program.inputs().get(i);
      int[] strides = new int[rank];
      View v;
      switch (in.kind()) {
        case FULL -> v = inputs[program.tensorSlot(i)];
        case ROW -> {
          View t = inputs[program.tensorSlot(i)];
          if (rank > 0) strides[rank - 1] = t.numel() == 1 ? 0 : t.stridesRef()[t.rank() - 1];
          v = StridedView.of(t.storage(), shape.clone(), strides, t.offset());
        }
        case COLUMN -> {
          View t = inputs[program.tensorSlot(i)];
          int[] own = dev.ember.tensor.Shapes.contiguousStrides(shape);
          int cols = rank == 0 ? 1 : shape[rank - 1];
          for (int d = 0; d < rank - 1; d++) strides[d] = own[d] / Math.max(cols, 1);
          v = StridedView.of(t.isContiguous() ? t.storage() : copyOf(t).storage(), shape.clone(), strides,
              t.isContiguous() ? t.offset() : 0);
        }
        case CONSTANT -> {
          dev.ember.tensor.Storage one = allocate(out.dtype(), 1, false);
          View scalar = StridedView.of(one, new int[0], new int[0], 0);
          fill(scalar, in.value());
          v = StridedView.of(one, shape.clone(), strides, 0);
        }
        default -> throw new IllegalStateException(in.kind().toString());
      }
      values[i] = v;
    }
    int first = program.inputs().size();
    for (int s = 0; s < program.steps().size(); s++) {
      View target = s == program.steps().size() - 1 ? out
          : StridedView.of(allocate(out.dtype(), out.numel(), false), shape.clone(), contiguous.clone(), 0);
      switch (program.steps().get(s)) {
        case ElementwiseProgram.UnaryStep u -> unary(u.op(), u.param(), values[u.x()], target);
        case ElementwiseProgram.BinaryStep b -> binary(b.op(), values[b.a()], values[b.b()], target);
      }
      values[first + s] = target;
    }
  }

  /** A contiguous copy of {@code t} on this backend, for {@link #fusedElementwise}'s default. */
  private View copyOf(View t) {
    View c = StridedView.of(allocate(t.dtype(), t.numel(), false), t.shapeRef().clone(),
        dev.ember.tensor.Shapes.contiguousStrides(t.shapeRef()), 0);
    copy(t, c);
    return c;
  }

  /**
   * Reduces {@code x} over {@code axes} (sorted, distinct) into {@code out}, whose shape is x's with
   * the reduced axes set to 1. The order of accumulation is fixed (independent of thread count).
   */
  void reduce(ReduceOp op, View x, int[] axes, View out);

  /** Index (I64) of the first max (or min) along {@code axis}; NaN counts as the largest. out has size 1 at axis. */
  void argReduce(boolean max, View x, int axis, View out);

  /** Numerically stable softmax or log-softmax along {@code axis}. */
  void softmax(View x, int axis, boolean log, View out);

  /**
   * The backward of softmax ({@code log} false) or log_softmax along the last axis, from the upstream
   * gradient g and the forward's output y, in one pass over each row instead of three or four tensor
   * ops: {@code y * (g - sum(g * y))} or {@code g - exp(y) * sum(g)}, each row's sum taken as
   * {@code sum(-1, keepdim)} takes it, so the bits are the composite's. g, y and out are contiguous, of
   * one floating dtype and one shape.
   *
   * @throws IllegalArgumentException if they are not
   */
  void softmaxBackward(View g, View y, boolean log, View out);

  /** out = the running sum of x along {@code axis}, same shape, accumulated in order from index 0. */
  void cumsum(View x, int axis, View out);

  /**
   * out[b] (+)= a[b] @ b[b] (accumulate: add to out, e.g. a pre-filled bias) for rank-3 operands
   * [B, m, k] x [B, k, n] -> [B, m, n]; a and b may be transposed views.
   */
  default void matmul(View a, View b, View out, boolean accumulate) {
    matmul(a, b, out, accumulate ? 1f : 0f);
  }

  /**
   * out[b] = a[b] @ b[b] + beta * out[b] (beta 0: out is only written), operands as in the boolean form. a and b
   * share out's dtype, except on a backend that {@linkplain #matmulReadsHalf reads half operands}.
   */
  void matmul(View a, View b, View out, float beta);

  /**
   * Whether {@link #matmul} accepts BF16/F16 operands (either or both, each of either half dtype) with a float32
   * out, reading their bits and widening them itself (the CPU widens them while it packs them, so a BF16 weight
   * is read at half the bytes); the result must have the bits of the float32 product of the widened operands.
   * When false the op layer widens half operands to float32 before calling matmul.
   */
  default boolean matmulReadsHalf() {
    return false;
  }

  /**
   * Whether {@link #matmul} also writes an out of the operands' half dtype when both are that one BF16/F16 dtype
   * (a backend that {@linkplain #matmulReadsHalf reads them}): the product (plus beta times out, widened) is
   * accumulated in float32 and rounded once, on store, which is what a float32 out rounded afterwards holds. The op
   * layer then asks for the rounded product directly instead of a float32 one and a conversion pass (cuBLASLt
   * writes bfloat16 as it stores the tile); when false it always passes a float32 out.
   */
  default boolean matmulWritesHalf() {
    return false;
  }

  /**
   * out = x w^T + beta * out (beta 0: out is only written) for 2-d x [m, k], w [n, k] and out [m, n] of one float
   * dtype: a linear layer's product, with the bits {@link #matmul} gives {@code x @ w^T}. A backend may schedule it
   * for a weight much larger than the batch (the CPU reads the weight's rows where they are instead of packing
   * its transpose: a training step's forward at batch 32); this default is that matmul.
   */
  default void matmulWeightRows(View x, View w, View out, float beta) {
    matmul(StridedView.batchOfOne(x), StridedView.batchOfOne(StridedView.transpose(w, 0, 1)),
        StridedView.batchOfOne(out), beta);
  }

  /**
   * a @ b for 2-d float32 a [m, k] and b [k, n] (either may be a transposed view), handed to {@code sink} in
   * blocks of whole rows that cover [0, m) once each, in any order and possibly on several threads at once.
   * Every element has the bits {@link #matmul} with beta 0 gives it. A backend that can keeps only a block
   * at a time; this default computes the whole product and hands it over as one block. A sink must not
   * call matmulRows itself.
   */
  default void matmulRows(View a, View b, RowSink sink) {
    int m = a.shapeRef()[0];
    int n = b.shapeRef()[1];
    StridedView out = StridedView.allocate(DType.F32, m, n);
    matmul(StridedView.batchOfOne(a), StridedView.batchOfOne(b), StridedView.batchOfOne(out), 0f);
    if (m > 0) sink.rows(0, m, out.storage().floats(), out.offset());
  }

  /**
   * SGD's update of a contiguous float32 weight w [m, n] by a @ b (2-d float32 a [m, k], b [k, n], either possibly a
   * transposed view) computed without storing the product: {@code w = w - lr (sign (a @ b) + wd w)}, each product
   * and sum rounded to float32 as the optimizer's sgd kernel rounds them, so that w gets the bits
   * {@link #matmulRows} handing the product to that kernel gives it. Returns false, having done nothing, where the
   * backend cannot (this default): the caller then updates from matmulRows' blocks.
   */
  default boolean matmulRowsSgd(View a, View b, View w, float lr, float wd, float sign) {
    return false;
  }

  /** out[..i..] = x[..index[..i..]..] along dim (index I64, same rank as x). */
  void gather(View x, int dim, View index, View out);

  /** out[..index[..i..]..] (+)= src[..i..] along dim; out is modified in place. */
  void scatter(View out, int dim, View index, View src, boolean accumulate);

  /** out = x selected at positions {@code index} (1-d I64) along dim. */
  void indexSelect(View x, int dim, View index, View out);

  /** out[.., index[i], ..] += src[.., i, ..] along dim (the backward of indexSelect). */
  void indexAdd(View out, int dim, View index, View src);

  /**
   * out = zeros, then {@code indexAdd(out, 0, index, src)}: an embedding's backward. out arrives with any contents and
   * is overwritten; each element gets the bits of that fill and that indexAdd. This default runs the two.
   */
  default void indexAddIntoZeros(View out, View index, View src) {
    fill(out, 0.0);
    indexAdd(out, 0, index, src);
  }

  /** The normalization kernels: batch, layer, group and RMS norm statistics, affine passes and backwards. */
  NormalizationKernels normalization();

  /** The tiled (memory-efficient) attention kernels, forward and backward. */
  AttentionKernels attention();

  /** The fused recurrent cells' element loops (the LSTM cell's state update and backward). */
  RecurrentKernels recurrent();

  /** The random fills (uniform, normal, truncated normal, Bernoulli) that init and dropout draw. */
  RandomKernels random();

  /** The convolution kernels: forward, input and weight gradients, depthwise, transposed. */
  ConvolutionKernels convolution();

  /** The pooling kernels: max and average pooling (plain, padded, dilated, adaptive) and their gradients. */
  PoolingKernels pooling();

  /** The resampling kernels: nearest and bilinear interpolation, padding, and their gradients. */
  ResamplingKernels resampling();

  /**
   * Number of threads this backend spreads work over, the caller's thread counted as one (as
   * {@code torch.get_num_threads()}). The CPU's starts at {@code EMBER_NUM_THREADS}, {@code -Dember.threads} or
   * the number of available processors.
   */
  int threads();

  /**
   * Sets the number of threads work is spread over (as {@code torch.set_num_threads(n)}); results stay bitwise
   * the same, only speed changes.
   *
   * @throws IllegalArgumentException if {@code n < 1}
   */
  void setThreads(int n);

  /**
   * Whether every element of {@code x} is finite (neither NaN nor infinite), reading each once. x is contiguous
   * and of a floating dtype.
   */
  boolean allFinite(View x);

  /** The fused optimizer updates and the reductions the optimizers need. */
  OptimizerKernels optimizer();

  /** Builds the exception for the first element of an index view that {@link #checkIndexRange} found out of range. */
  @FunctionalInterface
  interface IndexRangeError {
    /**
     * @param position the element's flat row-major position in the checked view
     * @param value its value
     */
    RuntimeException at(long position, long value);
  }

  /**
   * Checks that every element of the integer (I64 or I32) view {@code index} lies in {@code [lo, hiExclusive)} or
   * equals {@code allowed} (an ignore_index; pass a value inside the range, e.g. {@code lo}, when there is none), and
   * raises {@code error.at(position, value)} for the first element in row-major order that does not.
   *
   * <p>This default reads the view on the host and throws before returning (the CPU). A device backend may instead
   * queue the check as a kernel and raise the exception at the next point where the host waits for the device anyway
   * (a copy to the host, {@link #synchronize()}), as PyTorch's device-side asserts are asynchronous: the op that
   * queued the bad index then has returned, and work queued after it may have run on clamped or undefined data. Such
   * a backend raises each failed check exactly once, and the first failed check first.
   */
  default void checkIndexRange(View index, long lo, long hiExclusive, long allowed, IndexRangeError error) {
    int[] shape = index.shapeRef();
    int[] strides = index.stridesRef();
    int rank = shape.length;
    long n = index.numel();
    int[] at = new int[rank];
    Storage s = index.storage();
    int off = index.offset();
    for (long i = 0; i < n; i++) {
      long v = s.getLong(off);
      if ((v < lo || v >= hiExclusive) && v != allowed) throw error.at(i, v);
      for (int d = rank - 1; d >= 0; d--) { // next element in row-major order
        off += strides[d];
        if (++at[d] < shape[d]) break;
        off -= strides[d] * shape[d];
        at[d] = 0;
      }
    }
  }

  /**
   * Waits until every operation queued on this backend's device has finished (as {@code torch.cuda.synchronize()}),
   * surfacing any error a queued kernel met. The CPU computes each call before returning: a no-op there.
   */
  default void synchronize() {}

  /**
   * The device memory statistics of this backend's allocator, by PyTorch's names
   * ({@code "allocated_bytes.all.current"}, {@code "allocated_bytes.all.peak"}, {@code "reserved_bytes.all.peak"},
   * ...), or an empty map where the backend keeps none (the CPU: its buffers are Java heap).
   */
  default java.util.Map<String, Long> memoryStats() {
    return java.util.Map.of();
  }

  /**
   * {@link #int8LinearDequantize(byte[], int, float, byte[], int[], float[], float[], float[], int, int, int)} with B
   * a weight that is multiplied many times ([n, k] = [b.rows(), b.cols()]): a backend may prepare it once and keep
   * the prepared form in {@code b} (the CPU packs it into its GEMM's panels). Same bits as the byte[] form.
   */
  default void int8LinearDequantize(byte[] a, int aZero, float aScale, Int8Matrix b, int[] bRowSum, float[] bScale,
      float[] bias, float[] out, int m) {
    int8LinearDequantize(a, aZero, aScale, b.data(), bRowSum, bScale, bias, out, m, b.rows(), b.cols());
  }

  /**
   * {@link #int8LinearRequantize(byte[], int, float, byte[], int[], float[], float[], float, int, int, int, byte[], int,
   * int, int)} with B a weight that is multiplied many times ([n, k] = [b.rows(), b.cols()]), as a static quantized
   * layer's: a backend may prepare it once and keep the prepared form in {@code b} (the CPU packs it into its GEMM's
   * panels). Same bits as the byte[] form.
   */
  default void int8LinearRequantize(byte[] a, int aZero, float aScale, Int8Matrix b, int[] bRowSum, float[] bScale,
      float[] bias, float outScale, int outZero, int outMin, int outMax, byte[] out, int m) {
    int8LinearRequantize(a, aZero, aScale, b.data(), bRowSum, bScale, bias, outScale, outZero, outMin, outMax, out, m,
        b.rows(), b.cols());
  }

  /**
   * The int8 product of a static quantized convolution, oriented for few output channels: the weight W [n, k] =
   * [w.rows(), w.cols()] (rows are output channels: scale {@code wScale[j]}, row sums {@code wRowSum[j]}) times the
   * im2col columns X [k, m] (k-major: row p holds patch element p of every output pixel; one zero point and scale),
   * summed exactly in int32 and requantized per row: {@code v = (acc[j, i] - xZero * wRowSum[j]) * (xScale *
   * wScale[j])}, plus {@code bias[j]} when bias is not null, {@code clamp(rint(v * (1f / outScale)) + outZero, outMin,
   * outMax)} - the same bits as {@link #int8LinearRequantize} of X^T and W. The result is written in NCHW directly:
   * column {@code i = b * plane + p} of row j goes to {@code out[outOff + b * imageStride + j * plane + p]}. This
   * default computes one element at a time; a backend with an int8 kernel overrides it and gives the same bits.
   */
  default void int8ConvRequantize(Int8Matrix w, int[] wRowSum, float[] wScale, float[] bias, byte[] x, int xZero,
      float xScale, float outScale, int outZero, int outMin, int outMax, byte[] out, int m, int plane, int outOff,
      int imageStride) {
    int n = w.rows();
    int k = w.cols();
    if (k > INT8_MAX_K || (long) m * k > x.length || plane < 1) {
      throw new IllegalArgumentException("int8ConvRequantize: operands do not match (n=" + n + ", k=" + k + ", m=" + m
          + ", plane=" + plane + ", k <= " + INT8_MAX_K + "): x=" + x.length + " bytes");
    }
    if (outMin > outMax || outMin < -128 || outMax > 255) {
      throw new IllegalArgumentException("int8ConvRequantize: output range must be an 8-bit range, got [" + outMin
          + ", " + outMax + "]");
    }
    byte[] wd = w.data();
    float inv = 1.0f / outScale;
    for (int j = 0; j < n; j++) {
      for (int i = 0; i < m; i++) {
        int acc = 0;
        for (int p = 0; p < k; p++) acc += x[p * m + i] * wd[j * k + p];
        float v = (acc - (long) xZero * wRowSum[j]) * (xScale * wScale[j]);
        if (bias != null) v += bias[j];
        double q = Math.rint(v * inv) + outZero;
        out[outOff + (i / plane) * imageStride + j * plane + i % plane] =
            (byte) (q <= outMin ? outMin : q >= outMax ? outMax : (int) q);
      }
    }
  }

  /**
   * Quantizes host floats to 8 bits as {@code torch.quantize_per_tensor} on the CPU (dynamic quantization's
   * activations, {@link dev.ember.quant.Quantization#quantizeRange}): {@code out[outOff + i] = clamp(rint(x[off + i]
   * * (1f / scale)) + zeroPoint, qmin, qmax)} for {@code i < n}, the product in float32 and rint half to even; quint8
   * values are stored as their low 8 bits. This default goes one element at a time; a backend with a vector kernel
   * overrides it and gives the same bits.
   *
   * @throws IllegalArgumentException naming the element when a value is NaN (it has no quantized value)
   */
  default void quantizeInt8(float[] x, int off, int n, float scale, int zeroPoint, int qmin, int qmax, byte[] out,
      int outOff) {
    float inv = 1.0f / scale;
    for (int i = 0; i < n; i++) {
      float t = x[off + i] * inv;
      if (t != t) {
        throw new IllegalArgumentException("quantize: NaN has no quantized value (element " + (off + i) + ", scale="
            + scale + ", zero_point=" + zeroPoint + ")");
      }
      double r = Math.rint(t) + zeroPoint;   // float -> double is exact; rint rounds half to even as nearbyint
      out[outOff + i] = (byte) (r <= qmin ? qmin : r >= qmax ? qmax : (int) r);
    }
  }

  /**
   * {@code {min, max}} of the host floats {@code x[off, off + n)} by {@link Math#min} and {@link Math#max} (NaN when
   * any element is NaN; {@code {+inf, -inf}} when n is 0): the range a dynamic quantizer observes per batch.
   */
  default float[] minMax(float[] x, int off, int n) {
    float lo = Float.POSITIVE_INFINITY;
    float hi = Float.NEGATIVE_INFINITY;
    for (int i = off; i < off + n; i++) {
      lo = Math.min(lo, x[i]);
      hi = Math.max(hi, x[i]);
    }
    return new float[] {lo, hi};
  }

  /** The longest inner dimension an int8 product sums exactly in int32: |a b| &lt;= 2^14 per term, 2^16 terms. */
  int INT8_MAX_K = 1 << 16;

  /**
   * The int8 linear of quantized inference on host arrays: A [m, k] (one zero point and scale) times B^T, B [n, k]
   * (symmetric per output channel: scale {@code bScale[j]}, row sums {@code bRowSum[j]}), summed exactly in int32 and
   * dequantized in the output loop: {@code out[i, j] = (acc[i, j] - aZero * bRowSum[j]) * (aScale * bScale[j]) +
   * bias[j]} ({@code bias} may be null; k at most {@link #INT8_MAX_K}). This default computes one element at a time;
   * a backend with an int8 kernel overrides it and gives the same bits (the sums are exact).
   */
  default void int8LinearDequantize(byte[] a, int aZero, float aScale, byte[] b, int[] bRowSum, float[] bScale,
      float[] bias, float[] out, int m, int n, int k) {
    if (k > INT8_MAX_K) {
      throw new IllegalArgumentException("int8LinearDequantize: k " + k + " exceeds " + INT8_MAX_K
          + " (int32 accumulation)");
    }
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        int acc = 0;
        for (int p = 0; p < k; p++) acc += a[i * k + p] * b[j * k + p];
        float v = (acc - (long) aZero * bRowSum[j]) * (aScale * bScale[j]);
        out[i * n + j] = bias == null ? v : v + bias[j];
      }
    }
  }

  /**
   * The int8 linear of static quantized inference, with int8 output: the float32 value of
   * {@link #int8LinearDequantize} (bias included) requantized in the output loop as {@code quantize_per_tensor}
   * does, {@code out[i, j] = clamp(rint(v * (1f / outScale)) + outZero, outMin, outMax)}, stored as bytes (a quint8
   * value as its low 8 bits). This default computes one element at a time; a backend with an int8 kernel overrides
   * it and gives the same bits.
   */
  default void int8LinearRequantize(byte[] a, int aZero, float aScale, byte[] b, int[] bRowSum, float[] bScale,
      float[] bias, float outScale, int outZero, int outMin, int outMax, byte[] out, int m, int n, int k) {
    if (k > INT8_MAX_K) {
      throw new IllegalArgumentException("int8LinearRequantize: k " + k + " exceeds " + INT8_MAX_K
          + " (int32 accumulation)");
    }
    if (outMin > outMax || outMin < -128 || outMax > 255) {
      throw new IllegalArgumentException("int8LinearRequantize: output range must be an 8-bit range, got [" + outMin
          + ", " + outMax + "]");
    }
    float inv = 1.0f / outScale;
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        int acc = 0;
        for (int p = 0; p < k; p++) acc += a[i * k + p] * b[j * k + p];
        float v = (acc - (long) aZero * bRowSum[j]) * (aScale * bScale[j]);
        if (bias != null) v += bias[j];
        double q = Math.rint(v * inv) + outZero;
        out[i * n + j] = (byte) (q <= outMin ? outMin : q >= outMax ? outMax : (int) q);
      }
    }
  }
}
