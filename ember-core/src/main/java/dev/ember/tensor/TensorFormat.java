package dev.ember.tensor;

import java.util.Locale;

/** PyTorch-like printing: {@code tensor([[1.0000, 2.0000], ...], dtype=float64, grad_fn=<MulBackward>)}. */
final class TensorFormat {
  private static final int EDGE = 3;
  private static final int SUMMARIZE_OVER = 1000;

  private TensorFormat() {}

  static String format(Tensor t) {
    StringBuilder sb = new StringBuilder("tensor(");
    boolean summarize = t.numel() > SUMMARIZE_OVER;
    String[] cells = new String[1];
    boolean fp = t.dtype().isFloatingPoint();
    boolean allInts = fp && allIntegral(t);
    int width = maxWidth(t, fp, allInts, summarize);
    if (t.dim() == 0) {
      sb.append(cell(t.storage().getDouble(t.offset()), t.dtype(), fp, allInts, 0));
    } else if (t.numel() == 0) {
      sb.append("[]");
    } else {
      appendDim(sb, t, 0, t.offset(), width, fp, allInts, summarize, 7);
    }
    if (t.numel() == 0 && t.dim() > 1) sb.append(", size=").append(Shapes.str(t.shapeRef()));
    if (t.dtype() != DType.F32 && t.dtype() != DType.I64 && t.dtype() != DType.BOOL) {
      sb.append(", dtype=").append(t.dtype().torchName());
    }
    if (t.gradFn() != null) sb.append(", grad_fn=<").append(t.gradFn()).append('>');
    else if (t.requiresGrad()) sb.append(", requires_grad=True");
    sb.append(')');
    cells[0] = null;
    return sb.toString();
  }

  private static void appendDim(StringBuilder sb, Tensor t, int d, int off, int width, boolean fp, boolean allInts,
      boolean summarize, int indent) {
    int n = t.shapeRef()[d];
    int stride = t.stridesRef()[d];
    sb.append('[');
    for (int i = 0; i < n; i++) {
      if (summarize && n > 2 * EDGE && i == EDGE) {
        sb.append(d == t.dim() - 1 ? "..., " : "...,\n" + " ".repeat(indent + d + 1));
        i = n - EDGE - 1;
        continue;
      }
      if (d == t.dim() - 1) {
        String c = cell(t.storage().getDouble(off + i * stride), t.dtype(), fp, allInts, width);
        sb.append(c);
        if (i < n - 1) sb.append(", ");
      } else {
        appendDim(sb, t, d + 1, off + i * stride, width, fp, allInts, summarize, indent);
        if (i < n - 1) sb.append(",").append("\n".repeat(t.dim() - d - 1)).append(" ".repeat(indent + d + 1));
      }
    }
    sb.append(']');
  }

  private static String cell(double v, DType dtype, boolean fp, boolean allInts, int width) {
    String s;
    if (dtype == DType.BOOL) s = v != 0 ? "True" : "False";
    else if (!fp) s = Long.toString((long) v);
    else if (Double.isNaN(v)) s = "nan";
    else if (Double.isInfinite(v)) s = v > 0 ? "inf" : "-inf";
    else if (allInts) s = String.format(Locale.ROOT, "%.0f.", v);
    else if (v != 0 && (Math.abs(v) >= 1e8 || Math.abs(v) < 1e-4)) s = String.format(Locale.ROOT, "%.4e", v);
    else s = String.format(Locale.ROOT, "%.4f", v);
    return width > s.length() ? " ".repeat(width - s.length()) + s : s;
  }

  private static boolean allIntegral(Tensor t) {
    boolean[] ok = {true};
    forEach(t, v -> {
      if (!Double.isFinite(v) || v != Math.rint(v)) ok[0] = false;
    });
    return ok[0];
  }

  private static int maxWidth(Tensor t, boolean fp, boolean allInts, boolean summarize) {
    int[] w = {0};
    if (summarize) return 0;
    forEach(t, v -> w[0] = Math.max(w[0], cell(v, t.dtype(), fp, allInts, 0).length()));
    return w[0];
  }

  private static void forEach(Tensor t, java.util.function.DoubleConsumer f) {
    if (t.numel() > SUMMARIZE_OVER || t.numel() == 0) return;
    int[] idx = new int[t.dim()];
    for (long k = 0; k < t.numel(); k++) {
      int off = t.offset();
      for (int d = 0; d < idx.length; d++) off += idx[d] * t.stridesRef()[d];
      f.accept(t.storage().getDouble(off));
      for (int d = idx.length - 1; d >= 0; d--) {
        if (++idx[d] < t.shapeRef()[d]) break;
        idx[d] = 0;
      }
    }
  }
}
