package dev.ember.ops;

import static dev.ember.ops.OpDef.of;

import dev.ember.autograd.Autograd;
import dev.ember.autograd.Tracing;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import java.util.Arrays;
import java.util.List;

/** Gather/scatter, index_select, masking, one-hot and embedding lookup. Indices are I64 or I32. */
public final class IndexOps {
  private IndexOps() {}

  // The definitions of the ops in this class (see OpDef): name, arity, dtype policy, what the backward reads.
  static final OpDef GATHER = of("gather", 2, DTypePolicy.PROMOTED, Reads.INPUTS);
  static final OpDef SCATTER = of("scatter", 3, DTypePolicy.PROMOTED, Reads.INPUTS);
  static final OpDef SCATTER_ADD = of("scatter_add", 3, DTypePolicy.PROMOTED, Reads.INPUTS);
  static final OpDef INDEX_SELECT = of("index_select", 2, DTypePolicy.PROMOTED, Reads.INPUTS);
  static final OpDef MASKED_FILL = of("masked_fill", 2, DTypePolicy.PROMOTED, Reads.INPUTS);
  static final OpDef MASKED_SELECT = of("masked_select", 2, DTypePolicy.PROMOTED, Reads.INPUTS);
  static final OpDef ONE_HOT = OpDef.noGrad("one_hot", 1, DTypePolicy.INDEX);
  static final OpDef TAKE_ALONG_DIM = of("take_along_dim", 2, DTypePolicy.PROMOTED, Reads.INPUTS);
  static final OpDef EMBEDDING = of("embedding", 2, DTypePolicy.PROMOTED, Reads.INPUTS);
  static final List<OpDef> DEFINITIONS = List.of(GATHER, SCATTER, SCATTER_ADD, INDEX_SELECT, MASKED_FILL, MASKED_SELECT,
      ONE_HOT, TAKE_ALONG_DIM, EMBEDDING);

  private static void checkIndexType(String op, Tensor index) {
    if (index.dtype() != DType.I64 && index.dtype() != DType.I32) {
      throw Check.fail(op, "index must be int64 or int32, got " + index.dtype().torchName(), "index", index);
    }
  }

  /**
   * Every index in [0, size) (negative indices are not accepted), or an error naming the first bad one. A device
   * index is not read on the host (on a GPU that waits for every queued kernel): its backend's
   * {@link dev.ember.backend.Backend#checkIndexRange} checks it (CUDA: raised at the next synchronizing point).
   */
  private static void checkBounds(String op, Tensor index, int size, String what, Tensor x) {
    Check.sameDevice(op, x, index);
    if (!index.device().isCpu()) {
      index.device().backend().checkIndexRange(index, 0, size, 0, (position, v) -> Check.fail(op, "index " + v
          + " out of range [0, " + size + ") for " + what + " at flat position " + position, "x", x, "index", index));
      return;
    }
    Tensor c = index.contiguous().cpu(); // a device index is read on the host, as a host-side assert
    Storage s = c.storage();
    long n = c.numel();
    for (int i = 0; i < n; i++) {
      long v = s.getLong(c.offset() + i);
      if (v < 0 || v >= size) {
        throw Check.fail(op, "index " + v + " out of range [0, " + size + ") for " + what + " at flat position " + i,
            "x", x, "index", index);
      }
    }
  }

  private static void checkGatherShapes(String op, Tensor x, int axis, Tensor index) {
    if (index.dim() != x.dim()) {
      throw Check.fail(op, "index must have the same rank as the input (" + index.dim() + " vs " + x.dim() + ")",
          "x", x, "index", index);
    }
    for (int d = 0; d < x.dim(); d++) {
      if (d != axis && index.shapeRef()[d] > x.shapeRef()[d]) {
        throw Check.fail(op, "index size " + index.shapeRef()[d] + " exceeds input size " + x.shapeRef()[d]
            + " at dim " + d, "x", x, "index", index);
      }
    }
  }

  /**
   * A 0-d input counts as one dim of size 1, as in PyTorch: dims 0 and -1 are valid, and an index of
   * rank at most 1 is read against it as if it were {@code x.reshape(1)}.
   */
  private static boolean asOneDim(Tensor x, Tensor index) {
    return x.dim() == 0 && index.dim() <= 1;
  }

  /** out[i][j] = x[index[i][j]][j] (dim 0), etc. */
  public static Tensor gather(Tensor x, int dim, Tensor index) {
    Tensor out = gatherUntraced(x, dim, index);
    return Tracing.active() ? Tracing.op(GATHER.name(), out, new Tensor[] {x, index}, new Object[] {"dim", dim},
        in -> gather(in[0], dim, in[1])) : out;
  }

  private static Tensor gatherUntraced(Tensor x, int dim, Tensor index) {
    checkIndexType("gather", index);
    int axis = Check.axis("gather", dim, x.dim(), x);
    if (asOneDim(x, index)) {
      checkBounds("gather", index, 1, "dim " + axis, x);
      return gather(x.reshape(1), 0, index.reshape(-1)).reshape(index.shapeRef());
    }
    checkGatherShapes("gather", x, axis, index);
    checkBounds("gather", index, x.shapeRef()[axis], "dim " + axis, x);
    Tensor idx = ElementwiseOps.on(x.device(), index);
    Tensor out = x.newEmpty(idx.shapeRef());
    ElementwiseOps.backend(out).gather(x, axis, idx, out);
    int[] inShape = x.shape();
    return Autograd.record("gather", out, (ctx, g) -> {
      Tensor gi = g.newZeros(inShape);
      ElementwiseOps.backend(gi).scatter(gi, axis, idx, g, true);
      return new Tensor[] {gi};
    }, new Tensor[] {x});
  }

  /** A copy of x with src written (or added, when accumulate) at index positions along dim. */
  public static Tensor scatter(Tensor x, int dim, Tensor index, Tensor src, boolean accumulate) {
    Tensor out = scatterUntraced(x, dim, index, src, accumulate);
    return Tracing.active() ? Tracing.op((accumulate ? SCATTER_ADD : SCATTER).name(), out, new Tensor[] {x, index, src},
        new Object[] {"dim", dim},
        in -> scatter(in[0], dim, in[1], in[2], accumulate)) : out;
  }

  private static Tensor scatterUntraced(Tensor x, int dim, Tensor index, Tensor src, boolean accumulate) {
    String name = accumulate ? "scatter_add" : "scatter";
    checkIndexType(name, index);
    int axis = Check.axis(name, dim, x.dim(), x);
    if (asOneDim(x, index) && src.dim() <= 1) {
      checkBounds(name, index, 1, "dim " + axis, x);
      return scatter(x.reshape(1), 0, index.reshape(-1), src.reshape(-1), accumulate).reshape();
    }
    checkGatherShapes(name, x, axis, index);
    if (src.dim() != index.dim()) throw Check.fail(name, "src must have the index's rank", "src", src, "index", index);
    for (int d = 0; d < index.dim(); d++) {
      if (index.shapeRef()[d] > src.shapeRef()[d]) {
        throw Check.fail(name, "index is larger than src at dim " + d, "src", src, "index", index);
      }
    }
    checkBounds(name, index, x.shapeRef()[axis], "dim " + axis, x);
    Check.sameDevice(name, x, src);
    Tensor s = ElementwiseOps.on(x.device(), src.to(x.dtype()));
    Tensor idx = ElementwiseOps.on(x.device(), index);
    Tensor out = x.newEmpty(x.shapeRef());
    ElementwiseOps.backend(out).copy(x, out);
    ElementwiseOps.backend(out).scatter(out, axis, idx, s, accumulate);
    return Autograd.record(name, out, (ctx, g) -> {
      Tensor gx = g;
      if (!accumulate) { // overwritten positions get no gradient
        gx = g.clone();
        ElementwiseOps.backend(gx).scatter(gx, axis, idx, g.newZeros(idx.shapeRef()), false);
      }
      Tensor gs = g.gather(axis, idx);
      Tensor gsFull = Arrays.equals(gs.shapeRef(), s.shapeRef()) ? gs : padTo(gs, s.shapeRef());
      return new Tensor[] {gx, gsFull};
    }, new Tensor[] {x, s});
  }

  private static Tensor padTo(Tensor g, int[] shape) {
    Tensor out = g.newZeros(shape);
    Tensor view = out;
    for (int d = 0; d < shape.length; d++) view = Views.slice(view, d, 0, g.shapeRef()[d], 1);
    ElementwiseOps.backend(out).copy(g, view);
    return out;
  }

  public static Tensor scatterAdd(Tensor x, int dim, Tensor index, Tensor src) {
    return scatter(x, dim, index, src, true);
  }

  /** Rows (or slices along dim) of x at the positions of a 1-d index. */
  public static Tensor indexSelect(Tensor x, int dim, Tensor index) {
    Tensor out = indexSelectUntraced(x, dim, index);
    return Tracing.active() ? Tracing.op(INDEX_SELECT.name(), out, new Tensor[] {x, index}, new Object[] {"dim", dim},
        in -> indexSelect(in[0], dim, in[1])) : out;
  }

  private static Tensor indexSelectUntraced(Tensor x, int dim, Tensor index) {
    checkIndexType("index_select", index);
    if (index.dim() > 1) throw Check.fail("index_select", "index must be 1-d", "x", x, "index", index);
    int axis = Check.axis("index_select", dim, x.dim(), x);
    Tensor idx = index.dim() == 0 ? index.reshape(1) : index;
    if (x.dim() == 0) { // x as [1]; the result is 0-d again, as in PyTorch
      if (idx.numel() != 1) {
        throw Check.fail("index_select", "a 0-d input takes an index of exactly one element, got "
            + idx.numel(), "x", x, "index", index);
      }
      checkBounds("index_select", idx, 1, "dim " + axis, x);
      return indexSelect(x.reshape(1), 0, idx).reshape();
    }
    checkBounds("index_select", idx, x.shapeRef()[axis], "dim " + axis, x);
    Tensor onX = ElementwiseOps.on(x.device(), idx);
    int[] shape = x.shape();
    shape[axis] = idx.shapeRef()[0];
    Tensor out = x.newEmpty(shape);
    ElementwiseOps.backend(out).indexSelect(x, axis, onX, out);
    int[] inShape = x.shape();
    return Autograd.record("index_select", out, (ctx, g) -> {
      Tensor gi = g.newZeros(inShape);
      ElementwiseOps.backend(gi).indexAdd(gi, axis, onX, g);
      return new Tensor[] {gi};
    }, new Tensor[] {x});
  }

  /** x with {@code value} where mask (BOOL, broadcast to x) is true. */
  public static Tensor maskedFill(Tensor x, Tensor mask, double value) {
    if (mask.dtype() != DType.BOOL) throw Check.fail("masked_fill", "mask must be bool, got " + mask.dtype().torchName(), "x", x, "mask", mask);
    int[] shape = Shapes.broadcast("masked_fill", x.shapeRef(), mask.shapeRef());
    if (!Arrays.equals(shape, x.shapeRef())) throw Check.fail("masked_fill", "mask does not broadcast to the input", "x", x, "mask", mask);
    return ElementwiseOps.where(mask, Tensor.scalar(value, x.dtype()), x);
  }

  /** The elements of x where mask is true, as a 1-d tensor. */
  public static Tensor maskedSelect(Tensor x, Tensor mask) {
    Tracing.unsupported("masked_select", "the size of its result depends on the mask's values");
    if (mask.dtype() != DType.BOOL) throw Check.fail("masked_select", "mask must be bool, got " + mask.dtype().torchName(), "x", x, "mask", mask);
    int[] shape = Shapes.broadcast("masked_select", x.shapeRef(), mask.shapeRef());
    Tensor xe = x.expand(shape).contiguous();
    Check.sameDevice("masked_select", x, mask);
    Tensor me = Views.expand(mask, shape).contiguous().cpu(); // the result's size is known only on the host
    int n = (int) me.numel();
    long[] pos = new long[n];
    int count = 0;
    for (int i = 0; i < n; i++) if (me.storage().getDouble(me.offset() + i) != 0) pos[count++] = i;
    Tensor idx = Tensor.of(Arrays.copyOf(pos, count), count).to(x.device());
    return indexSelect(xe.reshape(-1), 0, idx);
  }

  /** One-hot I64 encoding with a trailing dim of numClasses. */
  public static Tensor oneHot(Tensor labels, int numClasses) {
    Tensor out = oneHotUntraced(labels, numClasses);
    return Tracing.active() ? Tracing.op(ONE_HOT.name(), out, new Tensor[] {labels},
        new Object[] {"num_classes", numClasses},
        in -> oneHot(in[0], numClasses)) : out;
  }

  private static Tensor oneHotUntraced(Tensor labels, int numClasses) {
    checkIndexType("one_hot", labels);
    if (numClasses <= 0) throw Check.fail("one_hot", "numClasses must be positive, got " + numClasses, "labels", labels);
    checkBounds("one_hot", labels, numClasses, "numClasses " + numClasses, labels);
    int[] shape = Arrays.copyOf(labels.shapeRef(), labels.dim() + 1);
    shape[labels.dim()] = numClasses;
    Tensor out = Tensor.zeros(labels.device(), DType.I64, shape);
    Tensor idx = labels.unsqueeze(-1).to(DType.I64);
    ElementwiseOps.backend(out).scatter(out, labels.dim(), idx, Tensor.full(1, labels.device(), DType.I64, idx.shapeRef()), false);
    return out;
  }

  /** gather with the index broadcast against x except along dim, as torch.take_along_dim. */
  public static Tensor takeAlongDim(Tensor x, Tensor index, int dim) {
    checkIndexType("take_along_dim", index);
    if (x.dim() == 0) { // PyTorch: "Dimension specified as 0 but tensor has no dimensions"
      throw Check.fail("take_along_dim", "dim " + dim + " out of range: a 0-d input has no dims to take along"
          + " (valid: none)", "x", x, "index", index);
    }
    int axis = Check.axis("take_along_dim", dim, x.dim(), x);
    if (index.dim() != x.dim()) throw Check.fail("take_along_dim", "index must have the input's rank", "x", x, "index", index);
    int[] xs = x.shape();
    int[] is = index.shape();
    xs[axis] = 1;
    is[axis] = 1;
    int[] b = Shapes.broadcast("take_along_dim", xs, is);
    int[] xShape = b.clone();
    xShape[axis] = x.shapeRef()[axis];
    int[] iShape = b.clone();
    iShape[axis] = index.shapeRef()[axis];
    return gather(x.expand(xShape), axis, Views.expand(index, iShape));
  }

  /** Rows of an embedding table [V, D] for indices of any shape: result shape indices + [D]. */
  public static Tensor embedding(Tensor weight, Tensor indices) {
    Tensor out = embeddingUntraced(weight, indices);
    return Tracing.active() ? Tracing.op(EMBEDDING.name(), out, new Tensor[] {weight, indices}, new Object[] {},
        in -> embedding(in[0], in[1])) : out;
  }

  private static Tensor embeddingUntraced(Tensor weight, Tensor indices) {
    if (weight.dim() != 2) throw Check.fail("embedding", "weight must be 2-d [numEmbeddings, dim]", "weight", weight);
    int[] shape = Arrays.copyOf(indices.shapeRef(), indices.dim() + 1);
    shape[indices.dim()] = weight.shapeRef()[1];
    return indexSelect(weight, 0, indices.reshape(-1)).reshape(shape);
  }
}
