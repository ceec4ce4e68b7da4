package dev.ember.tensor;

/**
 * Raw strided views without autograd recording or argument checks, for kernels and op
 * implementations that have already validated their input. Users call the Tensor methods. Under
 * {@code -ea} (as in the tests) each view asserts that it stays inside its storage, so a caller's
 * missed range check fails here rather than reading a neighbour's elements.
 */
public final class Views {
  private Views() {}

  public static Tensor of(Tensor t, int[] shape, int[] strides, int offset) {
    return checked(new Tensor(t.storage(), shape, strides, offset));
  }

  private static Tensor checked(Tensor v) {
    assert inStorage(v) : "view " + Shapes.str(v.shapeRef()) + " strides " + Shapes.str(v.stridesRef()) + " offset "
        + v.offset() + " reaches outside its storage of " + v.storage().size() + " elements";
    return v;
  }

  /** Whether every element of {@code v} lies in [0, storage size) (vacuously so when it has none). */
  static boolean inStorage(Tensor v) {
    int[] sh = v.shapeRef();
    int[] st = v.stridesRef();
    if (sh.length != st.length) return false;
    long lo = v.offset();
    long hi = v.offset();
    for (int d = 0; d < sh.length; d++) {
      if (sh[d] == 0) return true;
      if (sh[d] < 0) return false;
      long span = (long) (sh[d] - 1) * st[d];
      if (span < 0) lo += span;
      else hi += span;
    }
    return lo >= 0 && hi < v.storage().size();
  }

  /** A 2-d tensor seen as a batch of one, [1, r, c], without copying (the batched matmul's operand form). */
  public static Tensor batchOfOne(Tensor t) {
    return of(t, new int[] {1, t.shapeRef()[0], t.shapeRef()[1]}, new int[] {0, t.stridesRef()[0], t.stridesRef()[1]},
        t.offset());
  }

  public static Tensor transpose(Tensor t, int d0, int d1) {
    int r = t.dim();
    d0 = d0 < 0 ? d0 + r : d0;
    d1 = d1 < 0 ? d1 + r : d1;
    int[] sh = t.shape();
    int[] st = t.strides();
    int tmp = sh[d0];
    sh[d0] = sh[d1];
    sh[d1] = tmp;
    tmp = st[d0];
    st[d0] = st[d1];
    st[d1] = tmp;
    return checked(new Tensor(t.storage(), sh, st, t.offset()));
  }

  public static Tensor permute(Tensor t, int[] dims) {
    int[] sh = new int[dims.length];
    int[] st = new int[dims.length];
    for (int i = 0; i < dims.length; i++) {
      sh[i] = t.shapeRef()[dims[i]];
      st[i] = t.stridesRef()[dims[i]];
    }
    return checked(new Tensor(t.storage(), sh, st, t.offset()));
  }

  public static Tensor select(Tensor t, int dim, int index) {
    int r = t.dim();
    int[] sh = new int[r - 1];
    int[] st = new int[r - 1];
    for (int d = 0, j = 0; d < r; d++) {
      if (d == dim) continue;
      sh[j] = t.shapeRef()[d];
      st[j++] = t.stridesRef()[d];
    }
    return checked(new Tensor(t.storage(), sh, st, t.offset() + index * t.stridesRef()[dim]));
  }

  public static Tensor slice(Tensor t, int dim, int start, int length, int step) {
    int[] sh = t.shape();
    int[] st = t.strides();
    int off = t.offset() + (length > 0 ? start * st[dim] : 0);
    sh[dim] = length;
    st[dim] = st[dim] * step;
    return checked(new Tensor(t.storage(), sh, st, off));
  }

  /** Broadcast view: size-1 (or missing leading) dims get stride 0. Shapes must be compatible. */
  public static Tensor expand(Tensor t, int[] shape) {
    int r = shape.length;
    int off = r - t.dim();
    int[] st = new int[r];
    for (int d = 0; d < r; d++) {
      int sd = d - off;
      st[d] = sd < 0 || (t.shapeRef()[sd] == 1 && shape[d] != 1) ? 0 : t.stridesRef()[sd];
    }
    return checked(new Tensor(t.storage(), shape.clone(), st, t.offset()));
  }
}
