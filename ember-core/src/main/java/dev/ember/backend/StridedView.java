package dev.ember.backend;

import dev.ember.tensor.DType;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;

/**
 * A plain {@link View}, for a backend's own views: a derived view of an operand (a transpose, a selected slice,
 * a broadcast, a batch of one) or a scratch buffer, without the tensor side of a view. The geometry rules are
 * {@link dev.ember.tensor.Views}'s; under {@code -ea} each view asserts that it stays inside its storage.
 *
 * @param storage the elements
 * @param shapeRef the shape, owned by this view
 * @param stridesRef the strides in elements, owned by this view
 * @param offset the first element's index in {@code storage}
 */
public record StridedView(Storage storage, int[] shapeRef, int[] stridesRef, int offset) implements View {
  /** A view of {@code storage} with the given geometry (the arrays are taken, not copied). */
  public static StridedView of(Storage storage, int[] shape, int[] strides, int offset) {
    return checked(new StridedView(storage, shape, strides, offset));
  }

  /** A new contiguous, zero-filled buffer of {@code shape}, as {@code Tensor.empty}. */
  public static StridedView allocate(DType dtype, int... shape) {
    return new StridedView(Storage.allocate(dtype, Shapes.numel(shape)), shape.clone(), Shapes.contiguousStrides(shape),
        0);
  }

  /** A new contiguous buffer of {@code shape} with unspecified contents, as {@code Tensor.uninitialized}. */
  public static StridedView uninitialized(DType dtype, int... shape) {
    return new StridedView(Storage.allocateUninitialized(dtype, Shapes.numel(shape)), shape.clone(),
        Shapes.contiguousStrides(shape), 0);
  }

  /** A 2-d view seen as a batch of one, [1, r, c], without copying (the batched matmul's operand form). */
  public static StridedView batchOfOne(View t) {
    return of(t.storage(), new int[] {1, t.shapeRef()[0], t.shapeRef()[1]},
        new int[] {0, t.stridesRef()[0], t.stridesRef()[1]}, t.offset());
  }

  /** {@code t} with axes d0 and d1 swapped (negative axes count from the end). */
  public static StridedView transpose(View t, int d0, int d1) {
    int r = t.rank();
    d0 = d0 < 0 ? d0 + r : d0;
    d1 = d1 < 0 ? d1 + r : d1;
    int[] sh = t.shapeRef().clone();
    int[] st = t.stridesRef().clone();
    int tmp = sh[d0];
    sh[d0] = sh[d1];
    sh[d1] = tmp;
    tmp = st[d0];
    st[d0] = st[d1];
    st[d1] = tmp;
    return of(t.storage(), sh, st, t.offset());
  }

  /** {@code t} at position {@code index} of axis {@code dim}, that axis removed. */
  public static StridedView select(View t, int dim, int index) {
    int r = t.rank();
    int[] sh = new int[r - 1];
    int[] st = new int[r - 1];
    for (int d = 0, j = 0; d < r; d++) {
      if (d == dim) continue;
      sh[j] = t.shapeRef()[d];
      st[j++] = t.stridesRef()[d];
    }
    return of(t.storage(), sh, st, t.offset() + index * t.stridesRef()[dim]);
  }

  /** Broadcast view: size-1 (or missing leading) axes get stride 0. Shapes must be compatible. */
  public static StridedView expand(View t, int[] shape) {
    int r = shape.length;
    int off = r - t.rank();
    int[] st = new int[r];
    for (int d = 0; d < r; d++) {
      int sd = d - off;
      st[d] = sd < 0 || (t.shapeRef()[sd] == 1 && shape[d] != 1) ? 0 : t.stridesRef()[sd];
    }
    return of(t.storage(), shape.clone(), st, t.offset());
  }

  @Override
  public DType dtype() {
    return storage.dtype();
  }

  @Override
  public long numel() {
    return Shapes.numel(shapeRef);
  }

  @Override
  public boolean isContiguous() {
    for (int d : shapeRef) if (d == 0) return true; // no element to be out of order, as PyTorch
    int expected = 1;
    for (int i = shapeRef.length - 1; i >= 0; i--) {
      if (shapeRef[i] != 1 && stridesRef[i] != expected) return false;
      expected *= shapeRef[i];
    }
    return true;
  }

  private static StridedView checked(StridedView v) {
    assert inStorage(v) : "view " + Shapes.str(v.shapeRef) + " strides " + Shapes.str(v.stridesRef) + " offset "
        + v.offset + " reaches outside its storage of " + v.storage.size() + " elements";
    return v;
  }

  /** Whether every element of {@code v} lies in [0, storage size) (vacuously so when it has none). */
  private static boolean inStorage(StridedView v) {
    int[] sh = v.shapeRef;
    int[] st = v.stridesRef;
    if (sh.length != st.length) return false;
    long lo = v.offset;
    long hi = v.offset;
    for (int d = 0; d < sh.length; d++) {
      if (sh[d] == 0) return true;
      if (sh[d] < 0) return false;
      long span = (long) (sh[d] - 1) * st[d];
      if (span < 0) lo += span;
      else hi += span;
    }
    return lo >= 0 && hi < v.storage.size();
  }
}
