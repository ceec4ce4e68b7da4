package dev.ember.tensor;

import java.util.Locale;

/**
 * PyTorch-like printing: {@code tensor([[1.0000, 2.0000], ...], dtype=torch.float64, grad_fn=<MulBackward0>)}.
 * As PyTorch's formatter, one mode is chosen for all elements of a float tensor: integer-valued
 * ({@code 1.}), fixed ({@code 1.0000}) or scientific ({@code 1.0000e-05}), and cells are right-aligned
 * to a common width. Tensors over 1000 elements show 3 items at each edge of every dim.
 */
final class TensorFormat {
  private static final int EDGE = 3;
  private static final int SUMMARIZE_OVER = 1000;

  private TensorFormat() {}

  /** How every cell of one tensor is printed. */
  private record Mode(DType dtype, boolean intMode, boolean sci, int width) {}

  static String format(Tensor t) {
    StringBuilder sb = new StringBuilder("tensor(");
    boolean summarize = t.numel() > SUMMARIZE_OVER;
    Mode mode = mode(t, summarize);
    if (t.dim() == 0) {
      sb.append(cell(t.storage().getDouble(t.offset()), mode));
    } else if (t.numel() == 0) {
      sb.append("[]");
    } else {
      appendDim(sb, t, 0, t.offset(), mode, summarize, 7);
    }
    DType dt = t.dtype();
    if (t.numel() == 0 && t.dim() != 1) {
      StringBuilder size = new StringBuilder("(");
      for (int i = 0; i < t.dim(); i++) size.append(i > 0 ? ", " : "").append(t.shapeRef()[i]);
      sb.append(", size=").append(size).append(')');
    }
    // as PyTorch: an empty tensor always names a non-default dtype (there are no elements to tell int64)
    if (t.numel() == 0 ? dt != DType.F32 : dt != DType.F32 && dt != DType.I64 && dt != DType.BOOL) {
      sb.append(", dtype=torch.").append(dt.torchName());
    }
    if (t.gradFn() != null) sb.append(", grad_fn=<").append(gradFnName(t.gradFn().name())).append('>');
    else if (t.requiresGrad()) sb.append(", requires_grad=True");
    sb.append(')');
    return sb.toString();
  }

  /** PyTorch's node naming: {@code log_softmax} -> {@code LogSoftmaxBackward0}. */
  private static String gradFnName(String op) {
    StringBuilder sb = new StringBuilder();
    boolean up = true;
    for (char c : op.toCharArray()) {
      if (c == '_') {
        up = true;
      } else {
        sb.append(up ? Character.toUpperCase(c) : c);
        up = false;
      }
    }
    return sb.append("Backward0").toString();
  }

  private static void appendDim(StringBuilder sb, Tensor t, int d, int off, Mode mode, boolean summarize, int indent) {
    int n = t.shapeRef()[d];
    int stride = t.stridesRef()[d];
    String rowSep = ",".concat("\n".repeat(t.dim() - d - 1)).concat(" ".repeat(indent + d + 1));
    sb.append('[');
    for (int i = 0; i < n; i++) {
      if (summarize && n > 2 * EDGE && i == EDGE) {
        sb.append(d == t.dim() - 1 ? " ..., " : "..." + rowSep);
        i = n - EDGE - 1;
        continue;
      }
      if (d == t.dim() - 1) {
        sb.append(cell(t.storage().getDouble(off + i * stride), mode));
        if (i < n - 1) sb.append(", ");
      } else {
        appendDim(sb, t, d + 1, off + i * stride, mode, summarize, indent);
        if (i < n - 1) sb.append(rowSep);
      }
    }
    sb.append(']');
  }

  private static String cell(double v, Mode m) {
    String s;
    if (m.dtype == DType.BOOL) s = v != 0 ? "True" : "False";
    else if (!m.dtype.isFloatingPoint()) s = Long.toString((long) v);
    else if (Double.isNaN(v)) s = "nan";
    else if (Double.isInfinite(v)) s = v > 0 ? "inf" : "-inf";
    else if (m.sci) s = String.format(Locale.ROOT, "%.4e", v);
    else if (m.intMode) s = String.format(Locale.ROOT, "%.0f.", v);
    else s = String.format(Locale.ROOT, "%.4f", v);
    return m.width > s.length() ? " ".repeat(m.width - s.length()) + s : s;
  }

  /** PyTorch's _Formatter: the mode is decided by the finite non-zero values (of the summarized data). */
  private static Mode mode(Tensor t, boolean summarize) {
    boolean intMode = true;
    boolean sci = false;
    if (t.dtype().isFloatingPoint()) {
      double[] minMax = {Double.POSITIVE_INFINITY, 0};
      boolean[] integral = {true};
      forEach(t, summarize, v -> {
        double a = Math.abs(v);
        if (!Double.isFinite(v) || a == 0) return;
        minMax[0] = Math.min(minMax[0], a);
        minMax[1] = Math.max(minMax[1], a);
        if (v != Math.ceil(v)) integral[0] = false;
      });
      if (minMax[1] > 0) {
        intMode = integral[0];
        double ratio = minMax[1] / minMax[0];
        sci = ratio > 1000 || minMax[1] > 1e8 || (!intMode && minMax[0] < 1e-4);
      }
    }
    Mode probe = new Mode(t.dtype(), intMode, sci, 0);
    boolean fp = t.dtype().isFloatingPoint();
    int[] w = {1};
    forEach(t, summarize, v -> {
      // as PyTorch, float widths come from the finite non-zero values only (so nan, inf and 0 do not widen)
      if (!fp || (Double.isFinite(v) && v != 0)) w[0] = Math.max(w[0], cell(v, probe).length());
    });
    return new Mode(t.dtype(), intMode, sci, w[0]);
  }

  /** Visits the printed elements: all of them, or only the edges of every dim when summarizing. */
  private static void forEach(Tensor t, boolean summarize, java.util.function.DoubleConsumer f) {
    if (t.numel() == 0) return;
    int[] shape = t.shapeRef();
    int[] idx = new int[t.dim()];
    while (true) {
      int off = t.offset();
      for (int d = 0; d < idx.length; d++) off += idx[d] * t.stridesRef()[d];
      f.accept(t.storage().getDouble(off));
      int d = idx.length - 1;
      for (; d >= 0; d--) {
        idx[d]++;
        if (summarize && shape[d] > 2 * EDGE && idx[d] == EDGE) idx[d] = shape[d] - EDGE;
        if (idx[d] < shape[d]) break;
        idx[d] = 0;
      }
      if (d < 0) return;
    }
  }
}
