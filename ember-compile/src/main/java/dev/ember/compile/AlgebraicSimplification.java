package dev.ember.compile;

import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Removes ops that do nothing and merges ops that undo or repeat each other, where the result keeps its shape and
 * dtype: {@code x * 1}, {@code 1 * x}, {@code x / 1}, {@code x + 0}, {@code 0 + x}, {@code x - 0} (the constant
 * all ones or zeros and broadcasting to x's shape); a dropout outside training; a reshape, view or expand to x's
 * own shape; a reshape or view of a reshape or view (one reshape, unless the inner one's input may be
 * non-contiguous: then the inner one copies and the outer is a view of its copy); a permute of a permute (one
 * permute, or none when they cancel).
 *
 * <p>Bitwise, with one IEEE exception: eager {@code -0.0 + 0} is {@code +0.0}, the simplified graph keeps
 * {@code -0.0} (they compare equal).
 */
public final class AlgebraicSimplification extends Rewriter {
  @Override
  GraphNode rewrite(GraphNode n, List<GraphNode> emitted) {
    if (n.kind() != GraphNode.Kind.OP) return n;
    List<GraphNode> in = n.inputs;
    switch (n.op()) {
      case "mul" -> {
        if (isAll(in.get(1), 1) && sameType(in.get(0), n)) return in.get(0);
        if (isAll(in.get(0), 1) && sameType(in.get(1), n)) return in.get(1);
      }
      case "div" -> {
        if (isAll(in.get(1), 1) && sameType(in.get(0), n)) return in.get(0);
      }
      case "add" -> {
        if (isAll(in.get(1), 0) && sameType(in.get(0), n)) return in.get(0);
        if (isAll(in.get(0), 0) && sameType(in.get(1), n)) return in.get(1);
      }
      case "sub" -> {
        if (isAll(in.get(1), 0) && sameType(in.get(0), n)) return in.get(0);
      }
      case "reshape", "view", "expand" -> {
        GraphNode x = in.get(0);
        if (sameType(x, n)) return x;
        if (!n.op().equals("expand") && x.kind() == GraphNode.Kind.OP
            && (x.op().equals("reshape") || x.op().equals("view")) && !maybeStrided(x.inputs.get(0))) {
          return reshape(x.inputs.get(0), n);
        }
      }
      case "dropout" -> { // outside training (or with p 0) it returns x itself
        if ((!Boolean.TRUE.equals(n.attr("training")) || ((Double) n.attr("p")) == 0) && sameType(in.get(0), n)) {
          return in.get(0);
        }
      }
      case "permute" -> {
        GraphNode x = in.get(0);
        if (x.kind() == GraphNode.Kind.OP && x.op().equals("permute")) {
          int r = n.shape().length;
          int[] outer = normalize((int[]) n.attr("dims"), r);
          int[] inner = normalize((int[]) x.attr("dims"), r);
          int[] composed = new int[r];
          for (int i = 0; i < r; i++) composed[i] = inner[outer[i]];
          GraphNode src = x.inputs.get(0);
          boolean identity = true;
          for (int i = 0; i < r; i++) identity &= composed[i] == i;
          if (identity) return src;
          return GraphNode.op("permute", List.of(src), Map.of("dims", composed), n.shape(), n.dtype(),
              t -> t[0].permute(composed));
        }
      }
      default -> { }
    }
    return n;
  }

  /** Ops whose value may be a strided view that is not contiguous, so that a reshape of it copies. */
  private static final Set<String> STRIDED = Set.of("permute", "transpose", "t", "expand", "broadcast_to", "narrow",
      "select", "slice", "diagonal", "as_strided", "unfold", "movedim", "swapaxes");
  /** View ops that keep a non-contiguous input's strides in their result (reshape: where it can). */
  private static final Set<String> LAYOUT_KEEPING = Set.of("reshape", "view", "squeeze", "unsqueeze", "flatten");

  /**
   * Whether {@code x}'s value may not be contiguous (a permute, a narrow, ... seen through views). A reshape of a
   * reshape of such a value is not merged: the inner reshape copies, the outer is then a view of that copy, while
   * one reshape straight from x would copy again where the inner one has other readers (attention's output, read
   * as [B, T, E] by the out projection and as [B*T, E] by its weight gradient, was copied twice).
   */
  private static boolean maybeStrided(GraphNode x) {
    while (x != null && x.kind() == GraphNode.Kind.OP) {
      if (STRIDED.contains(x.op())) return true;
      if (!LAYOUT_KEEPING.contains(x.op())) return false;
      x = x.inputs.get(0);
    }
    return false;
  }

  /** One reshape of {@code src} to {@code n}'s shape. */
  private static GraphNode reshape(GraphNode src, GraphNode n) {
    int[] shape = n.shape();
    if (sameType(src, n)) return src;
    return GraphNode.op("reshape", List.of(src), Map.of("shape", shape), shape, n.dtype(), t -> t[0].reshape(shape));
  }

  private static int[] normalize(int[] dims, int rank) {
    int[] d = new int[dims.length];
    for (int i = 0; i < d.length; i++) d[i] = dims[i] < 0 ? dims[i] + rank : dims[i];
    return d;
  }

  private static boolean sameType(GraphNode x, GraphNode n) {
    return x != null && x.dtype() == n.dtype() && Arrays.equals(x.shape(), n.shape());
  }

  /** Whether {@code c} is a constant whose every element is {@code v}. */
  private static boolean isAll(GraphNode c, double v) {
    if (c == null || c.kind() != GraphNode.Kind.CONSTANT) return false;
    Tensor t = c.value();
    if (t.numel() > 64) return false;
    for (float f : t.cpu().to(dev.ember.tensor.DType.F32).toFloatArray()) if (f != v) return false;
    return true;
  }
}
