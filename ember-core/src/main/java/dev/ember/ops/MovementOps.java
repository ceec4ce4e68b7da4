package dev.ember.ops;

import dev.ember.autograd.Tracing;
import static dev.ember.ops.OpDef.VARIADIC;
import static dev.ember.ops.OpDef.of;

import dev.ember.autograd.Autograd;
import dev.ember.backend.Backend;
import dev.ember.tensor.Device;
import dev.ember.tensor.Check;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Views (share storage, no copy) and the ops that assemble or split tensors. */
public final class MovementOps {
  private MovementOps() {}

  // The definitions of the ops in this class (see OpDef): name, arity, dtype policy, what the backward reads.
  // t, broadcast_to and contiguous are Tensor methods built on transpose, expand and contiguousCopy
  static final OpDef RESHAPE = of("reshape", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef VIEW = of("view", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef PERMUTE = of("permute", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef TRANSPOSE = of("transpose", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef T = of("t", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef EXPAND = of("expand", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef BROADCAST_TO = of("broadcast_to", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef NARROW = of("narrow", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef SLICE = of("slice", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef SELECT = of("select", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef SQUEEZE = of("squeeze", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef UNSQUEEZE = of("unsqueeze", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef FLATTEN = of("flatten", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef CONTIGUOUS = of("contiguous", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef CAT = of("cat", VARIADIC, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef STACK = of("stack", VARIADIC, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef SPLIT = of("split", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final OpDef CHUNK = of("chunk", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  /** The copy to another device, {@code x.to(device)}; its backward copies the gradient back. */
  static final OpDef TO_DEVICE = of("to_device", 1, DTypePolicy.PROMOTED, Reads.NOTHING);
  static final List<OpDef> DEFINITIONS = List.of(RESHAPE, VIEW, PERMUTE, TRANSPOSE, T, EXPAND, BROADCAST_TO, NARROW,
      SLICE, SELECT, SQUEEZE, UNSQUEEZE, FLATTEN, CONTIGUOUS, CAT, STACK, SPLIT, CHUNK, TO_DEVICE);

  /**
   * x copied to {@code device} (contiguous there), by the backend of whichever side is not the CPU (a backend's
   * {@code copy} moves data between the host and its own device); differentiable.
   */
  public static Tensor toDevice(Tensor x, Device device) {
    return toDevice(x, device, false);
  }

  /**
   * {@link #toDevice(Tensor, Device)}; with {@code nonBlocking} the copy from the host goes through the device
   * backend's {@link Backend#copyNonBlocking} (a copy to the host blocks either way, as in PyTorch).
   */
  public static Tensor toDevice(Tensor x, Device device, boolean nonBlocking) {
    Tensor out = Tensor.uninitialized(device, x.dtype(), x.shapeRef());
    Backend b = device.isCpu() ? x.device().backend() : device.backend();
    if (!x.device().isCpu() && !device.isCpu()) { // between two devices: through the host
      Tensor host = Tensor.uninitialized(x.dtype(), x.shapeRef());
      x.device().backend().copy(x, host);
      if (nonBlocking) b.copyNonBlocking(host, out);
      else b.copy(host, out);
    } else if (nonBlocking && !device.isCpu()) {
      b.copyNonBlocking(x, out);
    } else {
      b.copy(x, out);
    }
    Device from = x.device();
    return Autograd.record(TO_DEVICE.name(), out, (ctx, g) -> new Tensor[] {g.to(from)}, new Tensor[] {x});
  }

  public static Tensor contiguousCopy(Tensor x) {
    Tensor out = contiguousCopyUntraced(x);
    return Tracing.active() ? Tracing.op("clone", out, new Tensor[] {x}, new Object[] {},
        in -> contiguousCopy(in[0])) : out;
  }

  private static Tensor contiguousCopyUntraced(Tensor x) {
    Tensor out = Tensor.uninitialized(x.device(), x.dtype(), x.shapeRef());
    ElementwiseOps.backend(out).copy(x, out);
    return Autograd.record("clone", out, (ctx, g) -> new Tensor[] {g}, new Tensor[] {x});
  }

  /** A view when the strides allow it, else a copy (as torch.reshape). */
  public static Tensor reshape(Tensor x, int[] shape) {
    Tensor out = reshapeUntraced(x, shape);
    return Tracing.active() ? Tracing.op("reshape", out, new Tensor[] {x}, new Object[] {"shape", out.shape()},
        in -> reshape(in[0], shape)) : out;
  }

  private static Tensor reshapeUntraced(Tensor x, int[] shape) {
    int[] target = Shapes.inferShape("reshape", shape, x.numel(), x.shapeRef());
    int[] strides = Shapes.viewStrides(x.shapeRef(), x.stridesRef(), target);
    Tensor src = strides == null ? contiguousCopy(x) : x;
    int[] st = strides == null ? Shapes.contiguousStrides(target) : strides;
    return viewAs("reshape", src, target, st, src.offset());
  }

  public static Tensor view(Tensor x, int[] shape) {
    Tensor out = viewUntraced(x, shape);
    return Tracing.active() ? Tracing.op("view", out, new Tensor[] {x}, new Object[] {"shape", out.shape()},
        in -> view(in[0], shape)) : out;
  }

  private static Tensor viewUntraced(Tensor x, int[] shape) {
    int[] target = Shapes.inferShape("view", shape, x.numel(), x.shapeRef());
    int[] strides = Shapes.viewStrides(x.shapeRef(), x.stridesRef(), target);
    if (strides == null) {
      throw Check.fail("view", "size " + Arrays.toString(target) + " is not compatible with the strides "
          + Arrays.toString(x.stridesRef()) + " (at least one dimension spans two contiguous subspaces)", "x", x,
          "hint", "use reshape(), or contiguous() first");
    }
    return viewAs("view", x, target, strides, x.offset());
  }

  private static Tensor viewAs(String name, Tensor x, int[] shape, int[] strides, int offset) {
    Tensor out = Views.of(x, shape, strides, offset);
    int[] inShape = x.shape();
    return Autograd.record(name, out, (ctx, g) -> new Tensor[] {g.reshape(inShape)}, new Tensor[] {x});
  }

  public static Tensor permute(Tensor x, int[] dims) {
    Tensor out = permuteUntraced(x, dims);
    return Tracing.active() ? Tracing.op("permute", out, new Tensor[] {x}, new Object[] {"dims", dims.clone()},
        in -> permute(in[0], dims)) : out;
  }

  private static Tensor permuteUntraced(Tensor x, int[] dims) {
    int r = x.dim();
    if (dims.length != r) {
      throw Check.fail("permute", "expected " + r + " dims, got " + Arrays.toString(dims), "x", x);
    }
    int[] norm = new int[r];
    boolean[] seen = new boolean[r];
    for (int i = 0; i < r; i++) {
      norm[i] = Check.axis("permute", dims[i], r, x);
      if (seen[norm[i]]) throw Check.fail("permute", "repeated dim " + dims[i] + " in " + Arrays.toString(dims), "x", x);
      seen[norm[i]] = true;
    }
    int[] inverse = new int[r];
    for (int i = 0; i < r; i++) inverse[norm[i]] = i;
    Tensor out = Views.permute(x, norm);
    return Autograd.record("permute", out, (ctx, g) -> new Tensor[] {g.permute(inverse)}, new Tensor[] {x});
  }

  public static Tensor transpose(Tensor x, int d0, int d1) {
    int r = x.dim();
    int a = Check.axis("transpose", d0, r, x);
    int b = Check.axis("transpose", d1, r, x);
    if (r == 0) return x; // as PyTorch, dims 0 and -1 name the 0-d tensor's only "dim"
    int[] perm = new int[r];
    for (int i = 0; i < r; i++) perm[i] = i;
    perm[a] = b;
    perm[b] = a;
    return permute(x, perm);
  }

  /**
   * Broadcast view, as torch.expand: -1 keeps an existing dim's size, new leading dims may be added
   * (but not as -1), and only size-1 dims change size.
   */
  public static Tensor expand(Tensor x, int[] shape) {
    Tensor out = expandUntraced(x, shape);
    return Tracing.active() ? Tracing.op("expand", out, new Tensor[] {x}, new Object[] {"shape", out.shape()},
        in -> expand(in[0], shape)) : out;
  }

  private static Tensor expandUntraced(Tensor x, int[] shape) {
    int r = shape.length;
    int lead = r - x.dim();
    if (lead < 0) {
      throw Check.fail("expand", "the target has fewer dimensions (" + r + ") than the tensor (" + x.dim() + ")",
          "x", x, "target", shape);
    }
    int[] target = shape.clone();
    for (int d = 0; d < r; d++) {
      int sd = d - lead;
      if (sd < 0) {
        if (target[d] < 0) {
          throw Check.fail("expand", "size " + shape[d] + " is not allowed in the new leading dim " + d, "x", x,
              "target", shape);
        }
        continue;
      }
      int have = x.shapeRef()[sd];
      if (target[d] == -1) target[d] = have;
      if (target[d] < 0 || (have != 1 && have != target[d])) {
        throw Check.fail("expand", "size " + have + " at dim " + sd + " cannot expand to " + shape[d], "x", x,
            "target", shape);
      }
    }
    if (Arrays.equals(target, x.shapeRef())) return x;
    Tensor out = Views.expand(x, target);
    int[] inShape = x.shape();
    return Autograd.record("expand", out, (ctx, g) -> new Tensor[] {g.sumTo(inShape)}, new Tensor[] {x});
  }

  /**
   * Elements start, start+step, ... below end along dim, as {@code x[start:end:step]} in Python:
   * negative start/end count from the end, then both are clamped to [0, size]; step must be positive.
   */
  public static Tensor slice(Tensor x, int dim, int start, int end, int step) {
    Tensor out = sliceUntraced(x, dim, start, end, step);
    return Tracing.active() ? Tracing.op("slice", out,
        new Tensor[] {x}, new Object[] {"dim", dim, "start", start, "end", end, "step", step},
        in -> slice(in[0], dim, start, end, step)) : out;
  }

  private static Tensor sliceUntraced(Tensor x, int dim, int start, int end, int step) {
    int axis = Check.dim("slice", dim, x);
    if (step <= 0) throw Check.fail("slice", "step must be positive, got " + step, "x", x);
    int n = x.shapeRef()[axis];
    int s = clampIndex(start, n);
    int e = clampIndex(end, n);
    // long: e - s + step - 1 overflows int for a step near Integer.MAX_VALUE
    int len = e > s ? (int) (((long) e - s + step - 1) / step) : 0;
    return sliceView(x, axis, s, len, step);
  }

  /**
   * {@code length} elements from {@code start} along dim, as torch.narrow: start may be negative
   * (counting from the end) or equal to the size (an empty result), and the range must lie inside
   * the dim; nothing is clamped.
   */
  public static Tensor narrow(Tensor x, int dim, int start, int length) {
    Tensor out = narrowUntraced(x, dim, start, length);
    return Tracing.active() ? Tracing.op("narrow", out,
        new Tensor[] {x}, new Object[] {"dim", dim, "start", start, "length", length},
        in -> narrow(in[0], dim, start, length)) : out;
  }

  private static Tensor narrowUntraced(Tensor x, int dim, int start, int length) {
    int axis = Check.dim("narrow", dim, x);
    int n = x.shapeRef()[axis];
    if (length < 0) throw Check.fail("narrow", "length must be non-negative, got " + length, "x", x);
    int s = start;
    if (start != n) {
      // PyTorch wraps start as a dim index of a size-max(n, 1) dim, so an empty dim accepts 0 and -1
      int wrap = Math.max(n, 1);
      if (start < -wrap || start >= wrap) {
        throw Check.fail("narrow", "start " + start + " out of range for dim " + axis + " of size " + n + " (valid: "
            + -wrap + ".." + n + ")", "x", x);
      }
      s = start < 0 ? start + wrap : start;
    }
    if ((long) s + length > n) {
      throw Check.fail("narrow", "start (" + s + ") + length (" + length + ") exceeds dimension size (" + n
          + ") of dim " + axis, "x", x);
    }
    return sliceView(x, axis, s, length, 1);
  }

  /** The view of elements s, s+step, ... (len of them) along axis, with its gradient; arguments already checked. */
  private static Tensor sliceView(Tensor x, int axis, int s, int len, int stepIn) {
    int step = len <= 1 ? 1 : stepIn; // a dim of one element needs no step, and stride * step could overflow
    Tensor out = Views.slice(x, axis, s, len, step);
    int[] inShape = x.shape();
    return Autograd.record("slice", out, (ctx, g) -> {
      Tensor gi = g.newZeros(inShape);
      ElementwiseOps.backend(gi).copy(g, Views.slice(gi, axis, s, len, step));
      return new Tensor[] {gi};
    }, new Tensor[] {x});
  }

  private static int clampIndex(int i, int n) {
    int v = i < 0 ? i + n : i;
    return Math.max(0, Math.min(n, v));
  }

  public static Tensor select(Tensor x, int dim, int index) {
    Tensor out = selectUntraced(x, dim, index);
    return Tracing.active() ? Tracing.op("select", out, new Tensor[] {x}, new Object[] {"dim", dim, "index", index},
        in -> select(in[0], dim, index)) : out;
  }

  private static Tensor selectUntraced(Tensor x, int dim, int index) {
    int axis = Check.dim("select", dim, x);
    int n = x.shapeRef()[axis];
    if (index < -n || index >= n) {
      throw Check.fail("select", "index " + index + " out of range for dimension " + axis + " of size " + n, "x", x);
    }
    int i = index < 0 ? index + n : index;
    Tensor out = Views.select(x, axis, i);
    int[] inShape = x.shape();
    return Autograd.record("select", out, (ctx, g) -> {
      Tensor gi = g.newZeros(inShape);
      ElementwiseOps.backend(gi).copy(g, Views.select(gi, axis, i));
      return new Tensor[] {gi};
    }, new Tensor[] {x});
  }

  public static Tensor squeeze(Tensor x) {
    int[] s = Arrays.stream(x.shapeRef()).filter(d -> d != 1).toArray();
    return s.length == x.dim() ? x : reshape(x, s);
  }

  public static Tensor squeeze(Tensor x, int dim) {
    int axis = Check.axis("squeeze", dim, x.dim(), x);
    if (x.dim() == 0 || x.shapeRef()[axis] != 1) return x;
    int[] s = new int[x.dim() - 1];
    for (int d = 0, j = 0; d < x.dim(); d++) if (d != axis) s[j++] = x.shapeRef()[d];
    return reshape(x, s);
  }

  public static Tensor unsqueeze(Tensor x, int dim) {
    int axis = Check.axis("unsqueeze", dim, x.dim() + 1, x);
    int[] s = new int[x.dim() + 1];
    for (int d = 0, j = 0; d < s.length; d++) s[d] = d == axis ? 1 : x.shapeRef()[j++];
    return reshape(x, s);
  }

  public static Tensor flatten(Tensor x, int startDim, int endDim) {
    int a = Check.axis("flatten", startDim, x.dim(), x);
    int b = Check.axis("flatten", endDim, x.dim(), x);
    if (x.dim() == 0) return reshape(x, new int[] {1});
    if (a > b) throw Check.fail("flatten", "start dim " + startDim + " comes after end dim " + endDim, "x", x);
    int[] s = new int[x.dim() - (b - a)];
    int j = 0;
    for (int d = 0; d < a; d++) s[j++] = x.shapeRef()[d];
    int merged = 1;
    for (int d = a; d <= b; d++) merged *= x.shapeRef()[d];
    s[j++] = merged;
    for (int d = b + 1; d < x.dim(); d++) s[j++] = x.shapeRef()[d];
    return reshape(x, s);
  }

  /** Concatenation along an existing dim; shapes must agree elsewhere. */
  public static Tensor cat(List<Tensor> tensors, int dim) {
    Tensor out = catUntraced(tensors, dim);
    return Tracing.active() ? Tracing.op(CAT.name(), out, tensors.toArray(new Tensor[0]), new Object[] {"dim", dim},
        in -> cat(Arrays.asList(in), dim)) : out;
  }

  private static Tensor catUntraced(List<Tensor> tensors, int dim) {
    if (tensors.isEmpty()) throw Check.fail("cat", "expected a non-empty list of tensors");
    Tensor first = tensors.get(0);
    if (first.dim() == 0) throw Check.fail("cat", "zero-dimensional tensors cannot be concatenated", "t0", first);
    int axis = Check.axis("cat", dim, first.dim(), first);
    int total = 0;
    dev.ember.tensor.DType dt = first.dtype();
    for (int i = 0; i < tensors.size(); i++) {
      Tensor t = tensors.get(i);
      Check.sameDevice("cat", first, t);
      if (t.dim() != first.dim()) {
        throw Check.fail("cat", "tensors must have the same rank (" + first.dim() + " vs " + t.dim() + ")",
            "t0", first, "t" + i, t);
      }
      for (int d = 0; d < t.dim(); d++) {
        if (d != axis && t.shapeRef()[d] != first.shapeRef()[d]) {
          throw Check.fail("cat", "sizes must match except in dim " + axis + " (" + first.shapeRef()[d] + " vs "
              + t.shapeRef()[d] + " at dim " + d + ")", "t0", first, "t" + i, t);
        }
      }
      total += t.shapeRef()[axis];
      dt = dev.ember.tensor.DType.promote(dt, t.dtype());
    }
    int[] shape = first.shape();
    shape[axis] = total;
    Tensor out = Tensor.uninitialized(first.device(), dt, shape);
    Backend backend = ElementwiseOps.backend(out);
    int[] sizes = new int[tensors.size()];
    int at = 0;
    for (int i = 0; i < tensors.size(); i++) {
      Tensor t = tensors.get(i);
      sizes[i] = t.shapeRef()[axis];
      backend.copy(t, Views.slice(out, axis, at, sizes[i], 1));
      at += sizes[i];
    }
    return Autograd.record("cat", out, (ctx, g) -> {
      Tensor[] grads = new Tensor[sizes.length];
      int pos = 0;
      for (int i = 0; i < sizes.length; i++) {
        grads[i] = Views.slice(g, axis, pos, sizes[i], 1).to(ctx.in(i).dtype());
        pos += sizes[i];
      }
      return grads;
    }, tensors.toArray(new Tensor[0]));
  }

  /** Joins tensors of equal shape along a new dim. */
  public static Tensor stack(List<Tensor> tensors, int dim) {
    Tensor out = stackUntraced(tensors, dim);
    return Tracing.active() ? Tracing.op(STACK.name(), out, tensors.toArray(new Tensor[0]), new Object[] {"dim", dim},
        in -> stack(Arrays.asList(in), dim)) : out;
  }

  private static Tensor stackUntraced(List<Tensor> tensors, int dim) {
    if (tensors.isEmpty()) throw Check.fail("stack", "expected a non-empty list of tensors");
    Tensor first = tensors.get(0);
    int axis = Check.axis("stack", dim, first.dim() + 1, first);
    List<Tensor> parts = new ArrayList<>(tensors.size());
    for (int i = 0; i < tensors.size(); i++) {
      Tensor t = tensors.get(i);
      if (!Arrays.equals(t.shapeRef(), first.shapeRef())) {
        throw Check.fail("stack", "all tensors must have the same shape", "t0", first, "t" + i, t);
      }
      parts.add(unsqueeze(t, axis));
    }
    return cat(parts, axis);
  }

  /**
   * Pieces of {@code splitSize} along dim (the last may be smaller); each is a view. As torch.split,
   * an empty dim gives one empty piece, and a split size of 0 is allowed only there.
   */
  public static List<Tensor> split(Tensor x, int splitSize, int dim) {
    int axis = Check.dim("split", dim, x);
    if (splitSize < 0) throw Check.fail("split", "split size must be non-negative, got " + splitSize, "x", x);
    int n = x.shapeRef()[axis];
    if (splitSize == 0 && n != 0) {
      throw Check.fail("split", "split size can be 0 only for an empty dim, got dim " + axis + " of size " + n, "x", x);
    }
    if (n == 0) {
      List<Tensor> out = new ArrayList<>();
      out.add(sliceView(x, axis, 0, 0, 1));
      return out;
    }
    return pieces(x, axis, n, splitSize);
  }

  /** split's pieces of a dim of size n &gt; 0 along axis, for a checked axis and splitSize &gt; 0. */
  private static List<Tensor> pieces(Tensor x, int axis, int n, int splitSize) {
    List<Tensor> out = new ArrayList<>();
    for (long s = 0; s < n; s += splitSize) { // long: s + splitSize may pass Integer.MAX_VALUE
      out.add(sliceView(x, axis, (int) s, (int) Math.min(n - s, splitSize), 1));
    }
    return out;
  }

  /**
   * At most {@code chunks} pieces of equal size (ceil), as torch.chunk; an empty dim gives
   * {@code chunks} empty pieces, as PyTorch's.
   */
  public static List<Tensor> chunk(Tensor x, int chunks, int dim) {
    int axis = Check.dim("chunk", dim, x);
    if (chunks <= 0) throw Check.fail("chunk", "number of chunks must be positive, got " + chunks, "x", x);
    int n = x.shapeRef()[axis];
    if (n == 0) {
      List<Tensor> out = new ArrayList<>(chunks);
      for (int i = 0; i < chunks; i++) out.add(sliceView(x, axis, 0, 0, 1));
      return out;
    }
    return pieces(x, axis, n, (int) (((long) n + chunks - 1) / chunks)); // checked above: not split's checks again
  }
}
