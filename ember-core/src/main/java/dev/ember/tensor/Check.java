package dev.ember.tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Argument checks done once at the API boundary, producing messages of the form
 * {@code matmul: inner dimensions differ (3 vs 4): a=[2, 3], b=[4, 5]}.
 */
public final class Check {
  private Check() {}

  /**
   * Builds the exception. {@code operands} alternates names and tensors/shapes:
   * {@code fail("matmul", "inner dimensions differ (3 vs 4)", "a", a, "b", b)}.
   */
  public static TensorArgumentException fail(String op, String problem, Object... operands) {
    StringBuilder sb = new StringBuilder(op).append(": ").append(problem);
    List<int[]> shapes = new ArrayList<>();
    String hint = null;
    boolean first = true;
    for (int i = 0; i + 1 < operands.length; i += 2) {
      String name = String.valueOf(operands[i]);
      Object v = operands[i + 1];
      if (name.equals("hint")) {
        hint = String.valueOf(v);
        continue;
      }
      int[] shape = v instanceof Tensor t ? t.shape() : v instanceof int[] s ? s : null;
      sb.append(first ? ": " : ", ").append(name).append('=');
      first = false;
      if (shape != null) {
        shapes.add(shape.clone());
        sb.append(Arrays.toString(shape));
      } else {
        sb.append(v);
      }
    }
    if (hint != null) sb.append("; hint: ").append(hint);
    return new TensorArgumentException(op, sb.toString(), shapes);
  }

  /** Normalises a possibly negative axis against {@code rank}, or fails naming the valid range. */
  public static int axis(String op, int axis, int rank, Tensor x) {
    int r = Math.max(rank, 1);
    if (axis < -r || axis >= r) {
      throw fail(op, "axis " + axis + " out of range for rank " + rank + " (valid: " + (-r) + ".." + (r - 1) + ")",
          "x", x);
    }
    return axis < 0 ? axis + r : axis;
  }

  /**
   * Normalises a possibly negative dim of an op that indexes into that dim (select, narrow, slice,
   * split, size), so it needs a real one: a 0-d tensor fails, where {@link #axis} would accept 0
   * and -1 as PyTorch's reductions do.
   */
  public static int dim(String op, int dim, Tensor x) {
    if (x.dim() == 0) throw fail(op, "cannot be applied to a 0-dim tensor (dim " + dim + ")", "x", x);
    return axis(op, dim, x.dim(), x);
  }

  public static void floating(String op, Tensor x) {
    if (!x.dtype().isFloatingPoint()) {
      throw fail(op, "expected a floating-point tensor, got " + x.dtype().torchName(), "x", x,
          "hint", "convert with x.to(DType.F32)");
    }
  }

  public static void floatingType(String op, DType dtype) {
    if (!dtype.isFloatingPoint()) {
      throw fail(op, "expected a floating-point dtype, got " + dtype.torchName());
    }
  }

  /**
   * Fails unless a and b are on one device; a 0-d CPU tensor (a scalar) goes with a tensor on any device, as in
   * PyTorch.
   */
  public static void sameDevice(String op, Tensor a, Tensor b) {
    if (a.device() != b.device() && !(a.device().isCpu() && a.dim() == 0) && !(b.device().isCpu() && b.dim() == 0)) {
      throw fail(op, "tensors are on different devices (" + a.device() + " vs " + b.device() + ")", "a", a, "b", b);
    }
  }
}
