package dev.ember.tensor;

import dev.ember.autograd.Autograd;
import dev.ember.autograd.Node;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.View;
import dev.ember.ops.ElementwiseOps;
import dev.ember.ops.IndexOps;
import dev.ember.ops.LinalgOps;
import dev.ember.ops.MovementOps;
import dev.ember.ops.ReduceOps;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * An n-dimensional strided view over a {@link Storage}: {@code shape}, {@code strides} and
 * {@code offset} (in elements), plus a dtype and device. Views share storage; ops return new
 * tensors. The API reads like PyTorch: {@code x.matmul(w).add(b).relu()}, {@code x.sum(1, true)},
 * {@code x.reshape(-1, 784)}. The long tail lives in the op classes of {@code dev.ember.ops}.
 */
public final class Tensor implements View {
  // storage, strides, offset and device change only through setData (a parameter moved in place)
  private Storage storage;
  private final int[] shape;
  private int[] strides;
  private int offset;
  private Device device;
  private boolean requiresGrad;
  private Tensor grad;
  private Node gradFn;
  /** For a view recorded by autograd: the tensor it views (never itself such a view), else null. */
  private Tensor viewBase;
  /** viewBase's gradFn when this view's history was last brought up to date (see {@link #gradFn()}). */
  private Node baseHistory;
  private List<UnaryOperator<Tensor>> hooks;
  private List<Consumer<Tensor>> postAccumulateHooks;
  /** Whether an optimizer takes this parameter's gradient in blocks: see {@link Deferred#consumeInBlocks}. */
  boolean gradInBlocks;

  /** Kernel-level constructor: a view with the given geometry over {@code storage}. */
  public Tensor(Storage storage, int[] shape, int[] strides, int offset) {
    this.storage = storage;
    this.shape = shape;
    this.strides = strides;
    this.offset = offset;
    this.device = storage.device();
  }

  // ------------------------------------------------------------------ creation

  /** A new contiguous, zero-filled tensor (the fill is free: Java arrays start zeroed). */
  public static Tensor empty(DType dtype, int... shape) {
    checkShape("empty", shape);
    return new Tensor(Storage.allocate(dtype, Shapes.numel(shape)), shape.clone(), Shapes.contiguousStrides(shape), 0);
  }

  /**
   * A new contiguous tensor whose contents are unspecified, as {@code torch.empty}: for code that
   * writes every element before reading any. Inside a {@link MemoryScope} it may hold the values of a
   * tensor released earlier (the pool's zero-fill is skipped, which for a 16 MB gradient is a full
   * pass over memory); outside one it is zero-filled like {@link #empty(DType, int...)}.
   */
  public static Tensor uninitialized(DType dtype, int... shape) {
    checkShape("uninitialized", shape);
    return new Tensor(Storage.allocateUninitialized(dtype, Shapes.numel(shape)), shape.clone(),
        Shapes.contiguousStrides(shape), 0);
  }

  public static Tensor empty(int... shape) {
    return empty(DType.F32, shape);
  }

  /** A new contiguous, zero-filled tensor on {@code device} (as {@code torch.zeros(..., device=device)}). */
  public static Tensor empty(Device device, DType dtype, int... shape) {
    if (device.isCpu()) return empty(dtype, shape);
    checkShape("empty", shape);
    return new Tensor(device.backend().allocate(dtype, Shapes.numel(shape), true), shape.clone(),
        Shapes.contiguousStrides(shape), 0);
  }

  /** A new contiguous tensor on {@code device} whose contents are unspecified (see {@link #uninitialized(DType, int...)}). */
  public static Tensor uninitialized(Device device, DType dtype, int... shape) {
    if (device.isCpu()) return uninitialized(dtype, shape);
    checkShape("uninitialized", shape);
    return new Tensor(device.backend().allocate(dtype, Shapes.numel(shape), false), shape.clone(),
        Shapes.contiguousStrides(shape), 0);
  }

  /** A zero-filled tensor on {@code device}. */
  public static Tensor zeros(Device device, DType dtype, int... shape) {
    return empty(device, dtype, shape);
  }

  /** A tensor on {@code device} with every element {@code value}. */
  public static Tensor full(double value, Device device, DType dtype, int... shape) {
    return uninitialized(device, dtype, shape).fill_(value);
  }

  /** A zero-filled tensor of this tensor's device and dtype (as {@code x.new_zeros(shape)}). */
  public Tensor newZeros(int... shape) {
    return empty(device, dtype(), shape);
  }

  /** A tensor of this tensor's device and {@code dtype}, zero-filled. */
  public Tensor newZeros(DType dtype, int... shape) {
    return empty(device, dtype, shape);
  }

  /** A tensor of this tensor's device and dtype whose contents are unspecified (as {@code x.new_empty(shape)}). */
  public Tensor newEmpty(int... shape) {
    return uninitialized(device, dtype(), shape);
  }

  /** A tensor of this tensor's device and {@code dtype} whose contents are unspecified. */
  public Tensor newEmpty(DType dtype, int... shape) {
    return uninitialized(device, dtype, shape);
  }

  /** A tensor of this tensor's device and dtype filled with {@code value} (as {@code x.new_full(shape, value)}). */
  public Tensor newFull(double value, int... shape) {
    return full(value, device, dtype(), shape);
  }

  public static Tensor zeros(int... shape) {
    return empty(DType.F32, shape);
  }

  public static Tensor zeros(DType dtype, int... shape) {
    return empty(dtype, shape);
  }

  public static Tensor ones(int... shape) {
    return full(1, DType.F32, shape);
  }

  public static Tensor ones(DType dtype, int... shape) {
    return full(1, dtype, shape);
  }

  public static Tensor full(double value, int... shape) {
    return full(value, DType.F32, shape);
  }

  public static Tensor full(double value, DType dtype, int... shape) {
    return empty(dtype, shape).fill_(value);
  }

  /** A 0-d tensor holding {@code value}. */
  public static Tensor scalar(double value) {
    return full(value, DType.F32);
  }

  public static Tensor scalar(double value, DType dtype) {
    return full(value, dtype);
  }

  /** Zeros of t's shape, dtype and device. */
  public static Tensor zerosLike(Tensor t) {
    return empty(t.device, t.dtype(), t.shape);
  }

  /** Ones of t's shape, dtype and device. */
  public static Tensor onesLike(Tensor t) {
    return full(1, t.device, t.dtype(), t.shape);
  }

  /** {@code value} in t's shape, dtype and device. */
  public static Tensor fullLike(Tensor t, double value) {
    return full(value, t.device, t.dtype(), t.shape);
  }

  /** A zero-filled tensor of t's shape, dtype and device. */
  public static Tensor emptyLike(Tensor t) {
    return empty(t.device, t.dtype(), t.shape);
  }

  /** {@code [start, end)} in steps of {@code step}, as torch.arange; integer arguments give I64. */
  public static Tensor arange(double start, double end, double step) {
    return Factory.arange(start, end, step, isIntegral(start) && isIntegral(end) && isIntegral(step) ? DType.I64 : DType.F32);
  }

  public static Tensor arange(double start, double end, double step, DType dtype) {
    return Factory.arange(start, end, step, dtype);
  }

  public static Tensor arange(long end) {
    return Factory.arange(0, end, 1, DType.I64);
  }

  public static Tensor linspace(double start, double end, int steps) {
    return Factory.linspace(start, end, steps, DType.F32);
  }

  public static Tensor linspace(double start, double end, int steps, DType dtype) {
    return Factory.linspace(start, end, steps, dtype);
  }

  public static Tensor eye(int n) {
    return Factory.eye(n, n, DType.F32);
  }

  public static Tensor eye(int n, int m, DType dtype) {
    return Factory.eye(n, m, dtype);
  }

  /** Wraps a copy of {@code data} with the given shape (default: 1-d). */
  public static Tensor of(float[] data, int... shape) {
    return Factory.fromArray(Storage.wrap(data.clone()), shape, data.length);
  }

  public static Tensor of(double[] data, int... shape) {
    return Factory.fromArray(Storage.wrap(data.clone()), shape, data.length);
  }

  public static Tensor of(long[] data, int... shape) {
    return Factory.fromArray(Storage.wrap(data.clone()), shape, data.length);
  }

  public static Tensor of(int[] data, int... shape) {
    return Factory.fromArray(Storage.wrap(data.clone()), shape, data.length);
  }

  /** An I8 (int8) tensor holding a copy of the signed bytes {@code data}. */
  public static Tensor of(byte[] data, int... shape) {
    return Factory.fromArray(Storage.wrapInt8(data.clone()), shape, data.length);
  }

  public static Tensor of(boolean[] data, int... shape) {
    byte[] b = new byte[data.length];
    for (int i = 0; i < b.length; i++) b[i] = (byte) (data[i] ? 1 : 0);
    return Factory.fromArray(Storage.wrapBool(b), shape, data.length);
  }

  /** A 2-d tensor from nested rows (all rows must have the same length). */
  public static Tensor of(float[][] rows) {
    return Factory.fromRows(rows);
  }

  public static Tensor of(double[][] rows) {
    return Factory.fromRows(rows);
  }

  /** Uniform in [0, 1). */
  public static Tensor rand(Generator gen, int... shape) {
    return Factory.rand(gen, DType.F32, shape);
  }

  /**
   * Uniform in [0, 1) of {@code dtype}, as torch draws it: for BF16/F16 each value keeps the dtype's significand bits
   * (8, 11) of one 32-bit output, so it is exact in the dtype and below 1.
   */
  public static Tensor rand(Generator gen, DType dtype, int... shape) {
    return Factory.rand(gen, dtype, shape);
  }

  public static Tensor rand(int... shape) {
    return Factory.rand(Generator.global(), DType.F32, shape);
  }

  /** Standard normal. */
  public static Tensor randn(Generator gen, int... shape) {
    return Factory.randn(gen, DType.F32, shape);
  }

  public static Tensor randn(Generator gen, DType dtype, int... shape) {
    return Factory.randn(gen, dtype, shape);
  }

  public static Tensor randn(int... shape) {
    return Factory.randn(Generator.global(), DType.F32, shape);
  }

  /** Integers uniform in {@code [low, high)}, as I64. */
  public static Tensor randint(Generator gen, long low, long high, int... shape) {
    return Factory.randint(gen, low, high, shape);
  }

  /** A random permutation of {@code 0..n-1}, as I64 (Fisher-Yates). */
  public static Tensor randperm(Generator gen, int n) {
    return Factory.randperm(gen, n);
  }

  /** 1 with probability {@code p[i]}, else 0, in p's dtype. */
  public static Tensor bernoulli(Generator gen, Tensor p) {
    return Factory.bernoulli(gen, p);
  }

  // ------------------------------------------------------------------ geometry

  public int[] shape() {
    return shape.clone();
  }

  /** Size of dimension {@code d} (negative counts from the end). */
  public int size(int d) {
    return shape[Check.dim("size", d, this)];
  }

  public int dim() {
    return shape.length;
  }

  public long numel() {
    return Shapes.numel(shape);
  }

  public int[] strides() {
    return strides.clone();
  }

  public int offset() {
    return offset;
  }

  public Storage storage() {
    return storage;
  }

  public DType dtype() {
    return storage.dtype();
  }

  public Device device() {
    return device;
  }

  /** Read-only access to the shape array for kernels (do not modify). */
  public int[] shapeRef() {
    return shape;
  }

  /** Read-only access to the strides array for kernels (do not modify). */
  public int[] stridesRef() {
    return strides;
  }

  public boolean isContiguous() {
    for (int d : shape) if (d == 0) return true; // no element to be out of order, as PyTorch
    int expected = 1;
    for (int i = shape.length - 1; i >= 0; i--) {
      if (shape[i] != 1 && strides[i] != expected) return false;
      expected *= shape[i];
    }
    return true;
  }

  /**
   * Whether this tensor is all of its storage, element for element in order: offset 0, contiguous, as many
   * elements as the storage has. Writing every element of such a tensor overwrites the whole buffer.
   */
  public boolean spansStorage() {
    return offset == 0 && numel() == storage.size() && isContiguous();
  }

  /** The in-place modification counter of the underlying storage. */
  public int version() {
    return storage.version();
  }

  // ------------------------------------------------------------------ autograd

  public boolean requiresGrad() {
    return requiresGrad || gradFn() != null;
  }

  /** Marks a leaf as needing gradients (as {@code requires_grad_}). */
  public Tensor requiresGrad(boolean flag) {
    if (gradFn != null && !flag) {
      throw new IllegalStateException("requiresGrad: cannot turn off gradients of a non-leaf tensor "
          + java.util.Arrays.toString(shape) + " (produced by " + gradFn.name() + "); hint: use detach()");
    }
    if (flag && !dtype().isFloatingPoint()) {
      throw Check.fail("requiresGrad", "only floating-point tensors can require gradients, got "
          + dtype().torchName(), "x", this);
    }
    this.requiresGrad = flag;
    return this;
  }

  public boolean isLeaf() {
    return gradFn() == null;
  }

  public Tensor grad() {
    return grad;
  }

  /**
   * Sets the gradient. On a tensor that belongs to no {@link MemoryScope} (a parameter), the
   * gradient's buffer leaves any scope it was made in, so that it survives as long as the tensor.
   */
  public void setGrad(Tensor g) {
    if (g != null && storage.scope == null) MemoryScope.escape(g);
    this.grad = g;
  }

  /**
   * Makes this leaf tensor a view of {@code src}'s data, keeping its identity, {@code requiresGrad} and hooks, as
   * PyTorch's {@code p.data = src}: how {@code Module.to(Device)} moves a parameter while an optimizer holds it.
   * The dtype and device become src's; a gradient that no longer matches them is moved and converted with it.
   * Views made of this tensor before the call keep the old data.
   *
   * @throws IllegalArgumentException if the shapes differ
   * @throws IllegalStateException if this tensor is not a leaf (its graph was recorded on the old data)
   */
  public void setData(Tensor src) {
    if (!java.util.Arrays.equals(shape, src.shape)) {
      throw Check.fail("set_data", "shape of the new data differs", "self", this, "src", src);
    }
    if (gradFn != null) {
      throw new IllegalStateException("set_data: tensor " + java.util.Arrays.toString(shape) + " is not a leaf"
          + " (produced by " + gradFn.name() + "); hint: detach() it first");
    }
    this.storage = src.storage;
    this.strides = src.strides.clone();
    this.offset = src.offset;
    this.device = src.device;
    Tensor g = grad;
    if (g != null && (g.device != device || g.dtype() != dtype())) {
      try (dev.ember.autograd.Grad ignored = dev.ember.autograd.Grad.off()) {
        setGrad(g.to(dtype()).to(device));
      }
    }
  }

  /**
   * The node that produced this tensor, or null for a leaf. A view whose base was since modified in place through
   * another tensor gets a new history here first (as PyTorch's view regeneration): the base's current one.
   */
  public Node gradFn() {
    if (viewBase != null && viewBase.gradFn != baseHistory) Autograd.refreshView(this);
    return gradFn;
  }

  /** For a view recorded by autograd, the tensor whose storage it views (never a view itself); else null. */
  public Tensor viewBase() {
    return viewBase;
  }

  /** Set by {@link Autograd}: this tensor is a view of {@code base}, whose current history it is in step with. */
  public void setViewBase(Tensor base) {
    this.viewBase = base;
    this.baseHistory = base == null ? null : base.gradFn;
  }

  /** Set by {@link Autograd#record}. */
  public void setGradFn(Node node) {
    this.gradFn = node;
  }

  /**
   * Registers a hook called with this tensor's gradient during backward; it may return a replacement (or null to keep
   * it). It runs once per backward, on the sum of every contribution of that pass (for a leaf, before the sum is
   * accumulated into {@link #grad()}), as PyTorch's {@code register_hook}.
   */
  public Tensor registerHook(UnaryOperator<Tensor> hook) {
    if (!requiresGrad()) {
      throw new IllegalStateException("registerHook: tensor " + java.util.Arrays.toString(shape)
          + " does not require grad, so no gradient will reach the hook");
    }
    if (hooks == null) hooks = new ArrayList<>();
    hooks.add(hook);
    return this;
  }

  public List<UnaryOperator<Tensor>> gradHooks() {
    return hooks == null ? List.of() : hooks;
  }

  /**
   * Registers a hook called with this leaf tensor each time backward has accumulated a gradient contribution into
   * its {@link #grad()} (PyTorch's {@code register_post_accumulate_grad_hook}): how data-parallel training starts
   * reducing a gradient while backward goes on. The hook reads {@code grad()}; it must not keep that tensor nor
   * write into it (backward may still pass it on to another node), but it may {@linkplain #setGrad replace} it.
   */
  public Tensor registerPostAccumulateGradHook(Consumer<Tensor> hook) {
    if (!requiresGrad() || !isLeaf()) {
      throw new IllegalStateException("registerPostAccumulateGradHook: tensor " + java.util.Arrays.toString(shape)
          + " is not a leaf that requires grad, so no gradient is accumulated into it");
    }
    if (postAccumulateHooks == null) postAccumulateHooks = new ArrayList<>();
    postAccumulateHooks.add(hook);
    return this;
  }

  /** The hooks of {@link #registerPostAccumulateGradHook}, in registration order. */
  public List<Consumer<Tensor>> postAccumulateGradHooks() {
    return postAccumulateHooks == null ? List.of() : postAccumulateHooks;
  }

  /** Back-propagates from a scalar (a 0-d or one-element tensor). */
  public void backward() {
    if (numel() != 1) {
      throw Check.fail("backward", "grad can be implicitly created only for scalar outputs (numel " + numel() + ")",
          "x", this, "hint", "pass the upstream gradient: backward(grad)");
    }
    Autograd.backward(this, onesLike(this), false);
  }

  public void backward(Tensor upstream) {
    Autograd.backward(this, upstream, false);
  }

  public void backward(Tensor upstream, boolean retainGraph) {
    Autograd.backward(this, upstream, retainGraph);
  }

  /** A view sharing storage, cut from the graph. */
  public Tensor detach() {
    Tensor out = new Tensor(storage, shape, strides, offset);
    // traced as an op: otherwise a tracer would take the result for a constant fixed at trace time
    return dev.ember.autograd.Tracing.active() ? dev.ember.autograd.Tracing.op("detach", out, new Tensor[] {this},
        new Object[0], in -> in[0].detach()) : out;
  }

  // ------------------------------------------------------------------ data access

  public double item() {
    dev.ember.autograd.Tracing.unsupported("item", "reads a tensor's value into Java");
    if (numel() != 1) {
      throw Check.fail("item", "only one-element tensors can be converted to a number (numel " + numel() + ")", "x", this);
    }
    if (storage.onDevice()) return cpu().item();
    return storage.getDouble(offset);
  }

  /** Element at a full index. */
  public double getDouble(int... index) {
    dev.ember.autograd.Tracing.unsupported("getDouble", "reads a tensor's value into Java");
    return storage.getDouble(flatIndex("getDouble", index));
  }

  public long getLong(int... index) {
    dev.ember.autograd.Tracing.unsupported("getLong", "reads a tensor's value into Java");
    return storage.getLong(flatIndex("getLong", index));
  }

  private int flatIndex(String op, int[] index) {
    if (index.length != shape.length) {
      throw Check.fail(op, "expected " + shape.length + " indices, got " + index.length, "x", this);
    }
    int off = offset;
    for (int i = 0; i < index.length; i++) {
      int ix = index[i] < 0 ? index[i] + shape[i] : index[i];
      if (ix < 0 || ix >= shape[i]) {
        throw Check.fail(op, "index " + index[i] + " out of range for dimension " + i + " of size " + shape[i], "x", this);
      }
      off += ix * strides[i];
    }
    return off;
  }

  /** The elements in row-major order, as floats. */
  public float[] toFloatArray() {
    dev.ember.autograd.Tracing.unsupported("toFloatArray", "reads a tensor's values into Java");
    float[] out = new float[(int) numel()];
    if (out.length == 0) return out; // an empty view's offset may lie past its storage's end (as in PyTorch)
    Tensor c = to(DType.F32).contiguous().cpu(); // a device tensor's elements are copied to the host first
    System.arraycopy(c.storage.floats(), c.offset, out, 0, out.length);
    return out;
  }

  public double[] toDoubleArray() {
    dev.ember.autograd.Tracing.unsupported("toDoubleArray", "reads a tensor's values into Java");
    double[] out = new double[(int) numel()];
    if (out.length == 0) return out; // an empty view's offset may lie past its storage's end (as in PyTorch)
    Tensor c = to(DType.F64).contiguous().cpu(); // a device tensor's elements are copied to the host first
    System.arraycopy(c.storage.doubles(), c.offset, out, 0, out.length);
    return out;
  }

  public long[] toLongArray() {
    dev.ember.autograd.Tracing.unsupported("toLongArray", "reads a tensor's values into Java");
    long[] out = new long[(int) numel()];
    if (out.length == 0) return out; // an empty view's offset may lie past its storage's end (as in PyTorch)
    Tensor c = to(DType.I64).contiguous().cpu(); // a device tensor's elements are copied to the host first
    System.arraycopy(c.storage.longs(), c.offset, out, 0, out.length);
    return out;
  }

  @Override
  public String toString() {
    if (storage.isReleased()) { // printing (a debugger, a log line) must not throw
      return "tensor(<released by its MemoryScope>, size=" + java.util.Arrays.toString(shape) + ", dtype="
          + "torch." + dtype().torchName() + ")";
    }
    if (storage.onDevice()) return TensorFormat.format(detachedCopyOnCpu()).replaceFirst("\\)$", ", device='" + device + "')");
    return TensorFormat.format(this);
  }

  private Tensor detachedCopyOnCpu() {
    Tensor host = uninitialized(dtype(), shape);
    device.backend().copy(this, host);
    return host;
  }

  // ------------------------------------------------------------------ conversion and copies

  /** This tensor in {@code dtype} (itself when already that type). Differentiable between float types. */
  public Tensor to(DType dtype) {
    return dtype == dtype() ? this : ElementwiseOps.cast(this, dtype);
  }

  /**
   * This tensor on {@code device}: itself when already there, else a copy made by the device's backend
   * (differentiable: the gradient flows back to this tensor's device), as {@code x.to(device)}.
   */
  public Tensor to(Device device) {
    return device == this.device ? this : MovementOps.toDevice(this, device);
  }

  /**
   * {@link #to(Device)}, and with {@code nonBlocking} a copy from the host that does not wait for the transfer, as
   * {@code x.to(device, non_blocking=True)}: the device's backend may stage the values and copy them asynchronously
   * ({@link dev.ember.backend.Backend#copyNonBlocking}); this tensor may change as soon as the call returns, and
   * every later op on the device sees the copied values. The values are the blocking copy's; a copy to the host, or
   * on the CPU, always blocks.
   */
  public Tensor to(Device device, boolean nonBlocking) {
    return device == this.device ? this : MovementOps.toDevice(this, device, nonBlocking);
  }

  /** This tensor on the host (itself when it is there already), as {@code x.cpu()}. */
  public Tensor cpu() {
    return to(Device.CPU);
  }

  /** This tensor on {@code cuda:0}, as {@code x.cuda()}. */
  public Tensor cuda() {
    return to(Device.cuda());
  }

  /** Itself if contiguous, else a contiguous copy (differentiable). */
  public Tensor contiguous() {
    return isContiguous() ? this : MovementOps.contiguousCopy(this);
  }

  /** A contiguous copy that never shares storage (differentiable). */
  public Tensor cloneContiguous() {
    return MovementOps.contiguousCopy(this);
  }

  public Tensor clone() {
    return MovementOps.contiguousCopy(this);
  }

  // ------------------------------------------------------------------ views

  public Tensor reshape(int... newShape) {
    return MovementOps.reshape(this, newShape);
  }

  /** A view with a new shape; fails (naming the strides) when the data cannot be viewed that way. */
  public Tensor view(int... newShape) {
    return MovementOps.view(this, newShape);
  }

  public Tensor permute(int... dims) {
    return MovementOps.permute(this, dims);
  }

  public Tensor transpose(int d0, int d1) {
    return MovementOps.transpose(this, d0, d1);
  }

  /** Transpose of a 2-d tensor (as {@code x.t()}). */
  public Tensor t() {
    if (dim() != 2) throw Check.fail("t", "expects a 2-d tensor, got rank " + dim(), "x", this);
    return MovementOps.transpose(this, 0, 1);
  }

  /** The last two dims swapped (as {@code x.mT}): a matrix or a batch of them (a 0-d tensor comes back as it is, as in PyTorch). */
  public Tensor mT() {
    if (dim() == 0) return this;
    if (dim() < 2) throw Check.fail("mT", "expects a matrix or a batch of matrices, got rank " + dim(), "x", this);
    return MovementOps.transpose(this, -2, -1);
  }

  public Tensor expand(int... newShape) {
    return MovementOps.expand(this, newShape);
  }

  public Tensor broadcastTo(int... newShape) {
    return MovementOps.expand(this, newShape);
  }

  public Tensor expandAs(Tensor other) {
    return MovementOps.expand(this, other.shape);
  }

  /**
   * {@code length} elements from {@code start} along {@code dim}, as torch.narrow: a negative start
   * counts from the end, and a range outside the dim is an error (not clamped as by {@link #slice}).
   */
  public Tensor narrow(int dim, int start, int length) {
    return MovementOps.narrow(this, dim, start, length);
  }

  /**
   * Elements {@code start, start+step, ...} below {@code end} along {@code dim}, as Python's
   * {@code x[start:end:step]}: negative start/end count from the end and are clamped to the dim; step must be positive.
   */
  public Tensor slice(int dim, int start, int end, int step) {
    return MovementOps.slice(this, dim, start, end, step);
  }

  public Tensor select(int dim, int index) {
    return MovementOps.select(this, dim, index);
  }

  public Tensor squeeze() {
    return MovementOps.squeeze(this);
  }

  public Tensor squeeze(int dim) {
    return MovementOps.squeeze(this, dim);
  }

  public Tensor unsqueeze(int dim) {
    return MovementOps.unsqueeze(this, dim);
  }

  public Tensor flatten() {
    return MovementOps.flatten(this, 0, -1);
  }

  public Tensor flatten(int startDim, int endDim) {
    return MovementOps.flatten(this, startDim, endDim);
  }

  public List<Tensor> split(int splitSize, int dim) {
    return MovementOps.split(this, splitSize, dim);
  }

  public List<Tensor> chunk(int chunks, int dim) {
    return MovementOps.chunk(this, chunks, dim);
  }

  public static Tensor cat(List<Tensor> tensors, int dim) {
    return MovementOps.cat(tensors, dim);
  }

  public static Tensor stack(List<Tensor> tensors, int dim) {
    return MovementOps.stack(tensors, dim);
  }

  // ------------------------------------------------------------------ elementwise

  public Tensor add(Tensor o) {
    return ElementwiseOps.add(this, o);
  }

  public Tensor add(double s) {
    return ElementwiseOps.addScalar(this, s);
  }

  public Tensor sub(Tensor o) {
    return ElementwiseOps.sub(this, o);
  }

  public Tensor sub(double s) {
    return ElementwiseOps.addScalar(this, -s);
  }

  public Tensor mul(Tensor o) {
    return ElementwiseOps.mul(this, o);
  }

  public Tensor mul(double s) {
    return ElementwiseOps.mulScalar(this, s);
  }

  public Tensor div(Tensor o) {
    return ElementwiseOps.div(this, o);
  }

  public Tensor div(double s) {
    return ElementwiseOps.divScalar(this, s);
  }

  public Tensor pow(Tensor o) {
    return ElementwiseOps.pow(this, o);
  }

  public Tensor pow(double exponent) {
    return ElementwiseOps.powScalar(this, exponent);
  }

  public Tensor maximum(Tensor o) {
    return ElementwiseOps.maximum(this, o);
  }

  public Tensor minimum(Tensor o) {
    return ElementwiseOps.minimum(this, o);
  }

  public Tensor neg() {
    return ElementwiseOps.unary(UnaryOp.NEG, this);
  }

  public Tensor abs() {
    return ElementwiseOps.unary(UnaryOp.ABS, this);
  }

  public Tensor sign() {
    return ElementwiseOps.unary(UnaryOp.SIGN, this);
  }

  public Tensor exp() {
    return ElementwiseOps.unary(UnaryOp.EXP, this);
  }

  public Tensor log() {
    return ElementwiseOps.unary(UnaryOp.LOG, this);
  }

  public Tensor log1p() {
    return ElementwiseOps.unary(UnaryOp.LOG1P, this);
  }

  public Tensor expm1() {
    return ElementwiseOps.unary(UnaryOp.EXPM1, this);
  }

  public Tensor sqrt() {
    return ElementwiseOps.unary(UnaryOp.SQRT, this);
  }

  public Tensor rsqrt() {
    return ElementwiseOps.unary(UnaryOp.RSQRT, this);
  }

  public Tensor square() {
    return ElementwiseOps.unary(UnaryOp.SQUARE, this);
  }

  public Tensor reciprocal() {
    return ElementwiseOps.unary(UnaryOp.RECIPROCAL, this);
  }

  public Tensor sin() {
    return ElementwiseOps.unary(UnaryOp.SIN, this);
  }

  public Tensor cos() {
    return ElementwiseOps.unary(UnaryOp.COS, this);
  }

  public Tensor tanh() {
    return ElementwiseOps.unary(UnaryOp.TANH, this);
  }

  public Tensor sigmoid() {
    return ElementwiseOps.unary(UnaryOp.SIGMOID, this);
  }

  public Tensor relu() {
    return ElementwiseOps.unary(UnaryOp.RELU, this);
  }

  public Tensor floor() {
    return ElementwiseOps.unary(UnaryOp.FLOOR, this);
  }

  public Tensor ceil() {
    return ElementwiseOps.unary(UnaryOp.CEIL, this);
  }

  public Tensor round() {
    return ElementwiseOps.unary(UnaryOp.ROUND, this);
  }

  public Tensor trunc() {
    return ElementwiseOps.unary(UnaryOp.TRUNC, this);
  }

  public Tensor clamp(double min, double max) {
    return ElementwiseOps.clamp(this, min, max);
  }

  public Tensor eq(Tensor o) {
    return ElementwiseOps.compare(dev.ember.backend.BinaryOp.EQ, this, o);
  }

  public Tensor ne(Tensor o) {
    return ElementwiseOps.compare(dev.ember.backend.BinaryOp.NE, this, o);
  }

  public Tensor lt(Tensor o) {
    return ElementwiseOps.compare(dev.ember.backend.BinaryOp.LT, this, o);
  }

  public Tensor le(Tensor o) {
    return ElementwiseOps.compare(dev.ember.backend.BinaryOp.LE, this, o);
  }

  public Tensor gt(Tensor o) {
    return ElementwiseOps.compare(dev.ember.backend.BinaryOp.GT, this, o);
  }

  public Tensor ge(Tensor o) {
    return ElementwiseOps.compare(dev.ember.backend.BinaryOp.GE, this, o);
  }

  /**
   * {@code s} as the other side of a comparison with this tensor: in this tensor's dtype where it holds s exactly,
   * else in float64 (an integer tensor against 2.5, a bool one against 2): rounded to an integer dtype, s compared
   * as another number ({@code [1, 2, 3] < 2.5} gave [true, false, false]; PyTorch compares in a floating type).
   */
  private Tensor comparand(double s) {
    return scalar(s, dtype().holds(s) ? dtype() : DType.F64);
  }

  public Tensor eq(double s) {
    return eq(comparand(s));
  }

  public Tensor gt(double s) {
    return gt(comparand(s));
  }

  public Tensor lt(double s) {
    return lt(comparand(s));
  }

  public Tensor ge(double s) {
    return ge(comparand(s));
  }

  public Tensor le(double s) {
    return le(comparand(s));
  }

  public Tensor ne(double s) {
    return ne(comparand(s));
  }

  // ------------------------------------------------------------------ in place (bump the version)
  // While recording, on a tensor (or with an operand) that requires grad, these are differentiable as in PyTorch:
  // the tensor's history is rebased onto the op (see Autograd.recordInPlace); a leaf that requires grad, or a view
  // of one, is refused.

  /**
   * {@code s} as the operand of an in-place op on this tensor: in its dtype (float32 for a half one) where that holds
   * s exactly, else in float64, so that the op refuses what would not fit ({@code int64.add_(0.5)} added 0).
   */
  private Tensor scalarOperand(double s) {
    return dtype().isHalf() ? scalar(s, DType.F32) : comparand(s);
  }

  public Tensor add_(Tensor o) {
    return ElementwiseOps.inPlace(dev.ember.backend.BinaryOp.ADD, this, o);
  }

  public Tensor add_(double s) {
    return ElementwiseOps.inPlace(dev.ember.backend.BinaryOp.ADD, this, scalarOperand(s));
  }

  public Tensor sub_(Tensor o) {
    return ElementwiseOps.inPlace(dev.ember.backend.BinaryOp.SUB, this, o);
  }

  public Tensor mul_(Tensor o) {
    return ElementwiseOps.inPlace(dev.ember.backend.BinaryOp.MUL, this, o);
  }

  public Tensor mul_(double s) {
    return ElementwiseOps.inPlace(dev.ember.backend.BinaryOp.MUL, this, scalarOperand(s));
  }

  public Tensor div_(double s) {
    return ElementwiseOps.inPlace(dev.ember.backend.BinaryOp.DIV, this, scalarOperand(s));
  }

  public Tensor copy_(Tensor src) {
    return ElementwiseOps.copy_(this, src);
  }

  public Tensor fill_(double value) {
    return ElementwiseOps.fill_(this, value);
  }

  public Tensor zero_() {
    return ElementwiseOps.fill_(this, 0);
  }

  public Tensor clamp_(double min, double max) {
    return ElementwiseOps.clamp_(this, min, max);
  }

  public Tensor sub_(double s) {
    return ElementwiseOps.inPlace(dev.ember.backend.BinaryOp.SUB, this, scalarOperand(s));
  }

  public Tensor div_(Tensor o) {
    return ElementwiseOps.inPlace(dev.ember.backend.BinaryOp.DIV, this, o);
  }

  public Tensor relu_() {
    return ElementwiseOps.unary_(UnaryOp.RELU, this);
  }

  public Tensor sigmoid_() {
    return ElementwiseOps.unary_(UnaryOp.SIGMOID, this);
  }

  public Tensor tanh_() {
    return ElementwiseOps.unary_(UnaryOp.TANH, this);
  }

  public Tensor exp_() {
    return ElementwiseOps.unary_(UnaryOp.EXP, this);
  }

  public Tensor expm1_() {
    return ElementwiseOps.unary_(UnaryOp.EXPM1, this);
  }

  public Tensor log_() {
    return ElementwiseOps.unary_(UnaryOp.LOG, this);
  }

  public Tensor log1p_() {
    return ElementwiseOps.unary_(UnaryOp.LOG1P, this);
  }

  public Tensor neg_() {
    return ElementwiseOps.unary_(UnaryOp.NEG, this);
  }

  public Tensor abs_() {
    return ElementwiseOps.unary_(UnaryOp.ABS, this);
  }

  public Tensor sign_() {
    return ElementwiseOps.unary_(UnaryOp.SIGN, this);
  }

  public Tensor sqrt_() {
    return ElementwiseOps.unary_(UnaryOp.SQRT, this);
  }

  public Tensor rsqrt_() {
    return ElementwiseOps.unary_(UnaryOp.RSQRT, this);
  }

  public Tensor square_() {
    return ElementwiseOps.unary_(UnaryOp.SQUARE, this);
  }

  public Tensor reciprocal_() {
    return ElementwiseOps.unary_(UnaryOp.RECIPROCAL, this);
  }

  public Tensor sin_() {
    return ElementwiseOps.unary_(UnaryOp.SIN, this);
  }

  public Tensor cos_() {
    return ElementwiseOps.unary_(UnaryOp.COS, this);
  }

  public Tensor floor_() {
    return ElementwiseOps.unary_(UnaryOp.FLOOR, this);
  }

  public Tensor ceil_() {
    return ElementwiseOps.unary_(UnaryOp.CEIL, this);
  }

  public Tensor round_() {
    return ElementwiseOps.unary_(UnaryOp.ROUND, this);
  }

  public Tensor trunc_() {
    return ElementwiseOps.unary_(UnaryOp.TRUNC, this);
  }

  /** this = this^exponent, as {@code Tensor.pow_} with a number. */
  public Tensor pow_(double exponent) {
    return ElementwiseOps.unary_(UnaryOp.POW_SCALAR, this, exponent);
  }

  // ------------------------------------------------------------------ reductions

  public Tensor sum() {
    return ReduceOps.sum(this, null, false);
  }

  public Tensor sum(int dim, boolean keepDim) {
    return ReduceOps.sum(this, new int[] {dim}, keepDim);
  }

  public Tensor sum(int[] dims, boolean keepDim) {
    return ReduceOps.sum(this, dims, keepDim);
  }

  public Tensor mean() {
    return ReduceOps.mean(this, null, false);
  }

  public Tensor mean(int dim, boolean keepDim) {
    return ReduceOps.mean(this, new int[] {dim}, keepDim);
  }

  public Tensor mean(int[] dims, boolean keepDim) {
    return ReduceOps.mean(this, dims, keepDim);
  }

  /** Reduces to {@code targetShape} by summing broadcast dimensions (the backward of broadcasting). */
  public Tensor sumTo(int... targetShape) {
    return ReduceOps.sumTo(this, targetShape);
  }

  public Tensor max() {
    return ReduceOps.amax(this, null, false);
  }

  public Tensor min() {
    return ReduceOps.amin(this, null, false);
  }

  public Tensor argmax(int dim, boolean keepDim) {
    return ReduceOps.argmax(this, dim, keepDim);
  }

  public Tensor argmin(int dim, boolean keepDim) {
    return ReduceOps.argmin(this, dim, keepDim);
  }

  // ------------------------------------------------------------------ linear algebra and indexing

  public Tensor matmul(Tensor o) {
    return LinalgOps.matmul(this, o);
  }

  public Tensor softmax(int dim) {
    return ReduceOps.softmax(this, dim, false);
  }

  public Tensor logSoftmax(int dim) {
    return ReduceOps.softmax(this, dim, true);
  }

  public Tensor gather(int dim, Tensor index) {
    return IndexOps.gather(this, dim, index);
  }

  public Tensor indexSelect(int dim, Tensor index) {
    return IndexOps.indexSelect(this, dim, index);
  }

  public Tensor maskedFill(Tensor mask, double value) {
    return IndexOps.maskedFill(this, mask, value);
  }

  // ------------------------------------------------------------------ helpers

  private static boolean isIntegral(double v) {
    return v == Math.rint(v) && !Double.isInfinite(v);
  }

  static void checkShape(String op, int[] shape) {
    for (int d : shape) {
      if (d < 0) throw Check.fail(op, "negative dimension " + d + " in shape " + java.util.Arrays.toString(shape), "shape", shape);
    }
  }
}
