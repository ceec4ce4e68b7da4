package dev.ember.tensor;

import java.util.Arrays;

/** Shape and stride arithmetic shared by tensors and kernels. */
public final class Shapes {
  private Shapes() {}

  public static long numel(int[] shape) {
    long n = 1;
    for (int d : shape) n *= d;
    return n;
  }

  /** Row-major strides of a contiguous tensor of this shape. */
  public static int[] contiguousStrides(int[] shape) {
    int[] s = new int[shape.length];
    int acc = 1;
    for (int i = shape.length - 1; i >= 0; i--) {
      s[i] = acc;
      acc *= Math.max(shape[i], 1);
    }
    return s;
  }

  public static String str(int[] shape) {
    return Arrays.toString(shape);
  }

  /** NumPy broadcasting of two shapes, or an error naming the first axis (from the right) that clashes. */
  public static int[] broadcast(String op, int[] a, int[] b) {
    int r = Math.max(a.length, b.length);
    int[] out = new int[r];
    for (int i = 1; i <= r; i++) {
      int da = i <= a.length ? a[a.length - i] : 1;
      int db = i <= b.length ? b[b.length - i] : 1;
      if (da != db && da != 1 && db != 1) {
        throw Check.fail(op, "cannot broadcast (" + da + " vs " + db + " at axis -" + i + ")", "a", a, "b", b);
      }
      out[r - i] = da == 1 ? db : da;
    }
    return out;
  }

  /** Validates a user shape (with at most one -1) against {@code numel} and resolves the -1. */
  public static int[] inferShape(String op, int[] shape, long numel, int[] from) {
    int infer = -1;
    long known = 1;
    for (int i = 0; i < shape.length; i++) {
      if (shape[i] == -1) {
        if (infer >= 0) throw Check.fail(op, "only one dimension can be -1, got " + Arrays.toString(shape), "x", from);
        infer = i;
      } else if (shape[i] < 0) {
        throw Check.fail(op, "invalid size " + shape[i] + " in shape " + Arrays.toString(shape), "x", from);
      } else {
        // saturate: a wrapped product (65536^4 is 0 mod 2^64) could otherwise match numel
        known = known != 0 && shape[i] > Long.MAX_VALUE / known ? Long.MAX_VALUE : known * shape[i];
      }
    }
    int[] out = shape.clone();
    if (infer >= 0) {
      if (known == 0 || numel % known != 0) {
        throw Check.fail(op, "cannot infer -1 in shape " + Arrays.toString(shape) + " for " + numel + " elements",
            "x", from);
      }
      out[infer] = (int) (numel / known);
    } else if (known != numel) {
      throw Check.fail(op, "shape " + Arrays.toString(shape) + " is invalid for " + numel + " elements", "x", from);
    }
    return out;
  }

  /**
   * Strides for viewing (shape, strides) as newShape without copying, or null when impossible
   * (the same rule as PyTorch's computeStride: each group of merged or split dims must be contiguous
   * within itself).
   */
  public static int[] viewStrides(int[] shape, int[] strides, int[] newShape) {
    long numel = numel(shape);
    int[] ns = new int[newShape.length];
    if (numel == 0) return contiguousStrides(newShape);
    int viewD = newShape.length - 1;
    long chunkBase = strides.length == 0 ? 1 : strides[strides.length - 1];
    long tensorNumel = 1;
    long viewNumel = 1;
    for (int td = shape.length - 1; td >= 0; td--) {
      tensorNumel *= shape[td];
      if (td == 0 || (shape[td - 1] != 1 && strides[td - 1] != tensorNumel * chunkBase)) {
        while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1)) {
          ns[viewD] = (int) (viewNumel * chunkBase);
          viewNumel *= newShape[viewD];
          viewD--;
        }
        if (viewNumel != tensorNumel) return null;
        if (td > 0) {
          chunkBase = strides[td - 1];
          tensorNumel = 1;
          viewNumel = 1;
        }
      }
    }
    if (viewD != -1) {
      // remaining leading size-1 dims
      while (viewD >= 0) {
        if (newShape[viewD] != 1) return null;
        ns[viewD] = 1;
        viewD--;
      }
    }
    return ns;
  }
}
