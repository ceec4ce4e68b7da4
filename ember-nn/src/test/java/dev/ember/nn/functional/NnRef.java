package dev.ember.nn.functional;

import dev.ember.testing.Arr;
import dev.ember.testing.Ref;
import java.util.Arrays;

/**
 * Naive double-precision oracles for the nn op table: plain loops over {@link Arr}, sharing no code
 * with the kernels. Ops without one here are checked against the PyTorch fixtures of the FixtureTests.
 */
final class NnRef {
  private NnRef() {}

  /** Expands a 1-value spatial argument to both dims. */
  static int[] pair(int[] v) {
    return v.length == 1 ? new int[] {v[0], v[0]} : v;
  }

  /**
   * conv2d of a batched [N, C, H, W] input with weight [O, C / groups, KH, KW] and bias [O] (or null), zero
   * padding {@code pad} = (top, bottom, left, right).
   */
  static Arr conv2d(Arr x, Arr w, Arr b, int[] stride, int[] pad, int[] dilation, int groups) {
    int n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
    int o = w.shape()[0], cg = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
    int oh = (h + pad[0] + pad[1] - dilation[0] * (kh - 1) - 1) / stride[0] + 1;
    int ow = (wd + pad[2] + pad[3] - dilation[1] * (kw - 1) - 1) / stride[1] + 1;
    int og = o / groups;
    Arr out = Arr.zeros(n, o, oh, ow);
    for (int i = 0; i < out.numel(); i++) {
      int[] at = out.index(i);
      int oc = at[1];
      double s = b == null ? 0 : b.data()[oc];
      for (int ic = 0; ic < cg; ic++) {
        int cin = oc / og * cg + ic;
        for (int u = 0; u < kh; u++) {
          for (int v = 0; v < kw; v++) {
            int y = at[2] * stride[0] - pad[0] + u * dilation[0];
            int z = at[3] * stride[1] - pad[2] + v * dilation[1];
            if (y >= 0 && y < h && z >= 0 && z < wd) s += x.get(at[0], cin, y, z) * w.get(oc, ic, u, v);
          }
        }
      }
      out.data()[i] = s;
    }
    assert c == cg * groups;
    return out;
  }

  /** conv1d through conv2d over a height of 1 (input [N, C, L], weight [O, C / groups, K]). */
  static Arr conv1d(Arr x, Arr w, Arr b, int stride, int[] pad, int dilation, int groups) {
    Arr x4 = new Arr(x.data(), new int[] {x.shape()[0], x.shape()[1], 1, x.shape()[2]});
    Arr w4 = new Arr(w.data(), new int[] {w.shape()[0], w.shape()[1], 1, w.shape()[2]});
    Arr y = conv2d(x4, w4, b, new int[] {1, stride}, new int[] {0, 0, pad[0], pad[1]}, new int[] {1, dilation}, groups);
    return new Arr(y.data(), new int[] {y.shape()[0], y.shape()[1], y.shape()[3]});
  }

  /**
   * conv_transpose2d of [N, C, H, W] with weight [C, O / groups, KH, KW]: each input element scatters its
   * products to {@code y * stride - padding + u * dilation}.
   */
  static Arr convTranspose2d(Arr x, Arr w, Arr b, int[] stride, int[] pad, int[] outPad, int groups, int[] dilation) {
    int n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
    int og = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
    int cg = c / groups;
    int oh = (h - 1) * stride[0] - 2 * pad[0] + dilation[0] * (kh - 1) + outPad[0] + 1;
    int ow = (wd - 1) * stride[1] - 2 * pad[1] + dilation[1] * (kw - 1) + outPad[1] + 1;
    Arr out = Arr.zeros(n, og * groups, oh, ow);
    for (int i = 0; i < out.numel(); i++) {
      int[] at = out.index(i);
      out.data()[i] = b == null ? 0 : b.data()[at[1]];
    }
    for (int i = 0; i < x.numel(); i++) {
      int[] at = x.index(i);
      int g = at[1] / cg;
      for (int oc = 0; oc < og; oc++) {
        for (int u = 0; u < kh; u++) {
          for (int v = 0; v < kw; v++) {
            int y = at[2] * stride[0] - pad[0] + u * dilation[0];
            int z = at[3] * stride[1] - pad[1] + v * dilation[1];
            if (y < 0 || y >= oh || z < 0 || z >= ow) continue;
            int f = out.flat(new int[] {at[0], g * og + oc, y, z});
            out.data()[f] += x.data()[i] * w.get(at[1], oc, u, v);
          }
        }
      }
    }
    return out;
  }

  /**
   * F.pad: {@code pad} holds (left, right) pairs from the last dim backwards; negative amounts crop. Modes
   * constant (filled with {@code value}), reflect, replicate, circular.
   */
  static Arr pad(Arr x, int[] pad, String mode, double value) {
    int r = x.rank();
    int[] left = new int[r];
    int[] shape = x.shape().clone();
    for (int k = 0; k < pad.length / 2; k++) {
      int d = r - 1 - k;
      left[d] = pad[2 * k];
      shape[d] += pad[2 * k] + pad[2 * k + 1];
    }
    Arr out = Arr.zeros(shape);
    for (int i = 0; i < out.numel(); i++) {
      int[] at = out.index(i);
      boolean outside = false;
      for (int d = 0; d < r; d++) {
        int n = x.shape()[d];
        int j = at[d] - left[d];
        if (j < 0 || j >= n) {
          switch (mode) {
            case "reflect" -> j = j < 0 ? -j : 2 * (n - 1) - j;
            case "replicate" -> j = j < 0 ? 0 : n - 1;
            case "circular" -> j = Math.floorMod(j, n);
            default -> outside = true;
          }
        }
        at[d] = j;
      }
      out.data()[i] = outside ? value : x.get(at);
    }
    return out;
  }

  /** PyTorch's pooling_output_shape: in ceil mode the last window must start inside the input or left padding. */
  static int poolOut(int in, int k, int s, int p, int d, boolean ceil) {
    int num = in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    int out = Math.floorDiv(num, s) + 1;
    return ceil && (out - 1) * s >= in + p ? out - 1 : out;
  }

  /**
   * Max or average pooling of [N, C, H, W] over windows (kh, kw) with stride, padding, dilation (1 for
   * average) and ceil mode. Average: the divisor is {@code divisor} if non-null, else the window clipped to
   * the padded input ({@code countPad}) or to the input.
   */
  static Arr pool2d(Arr x, int[] k, int[] s, int[] p, int[] d, boolean ceil, boolean max, boolean countPad,
      Integer divisor) {
    int n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
    int oh = poolOut(h, k[0], s[0], p[0], d[0], ceil);
    int ow = poolOut(w, k[1], s[1], p[1], d[1], ceil);
    Arr out = Arr.zeros(n, c, oh, ow);
    for (int i = 0; i < out.numel(); i++) {
      int[] at = out.index(i);
      int h0 = at[2] * s[0] - p[0];
      int w0 = at[3] * s[1] - p[1];
      double acc = max ? Double.NEGATIVE_INFINITY : 0;
      for (int u = 0; u < k[0]; u++) {
        for (int v = 0; v < k[1]; v++) {
          int y = h0 + u * d[0];
          int z = w0 + v * d[1];
          if (y < 0 || y >= h || z < 0 || z >= w) continue;
          double e = x.get(at[0], at[1], y, z);
          acc = max ? Math.max(acc, e) : acc + e;
        }
      }
      if (!max) {
        int padded = (Math.min(h0 + k[0], h + p[0]) - h0) * (Math.min(w0 + k[1], w + p[1]) - w0);
        int inside = (Math.min(h0 + k[0], h) - Math.max(h0, 0)) * (Math.min(w0 + k[1], w) - Math.max(w0, 0));
        acc /= divisor != null ? divisor : countPad ? padded : inside;
      }
      out.data()[i] = acc;
    }
    return out;
  }

  /** Adaptive max or average pooling of [N, C, H, W] to (oh, ow): windows [floor(o in/out), ceil((o + 1) in/out)). */
  static Arr adaptivePool2d(Arr x, int oh, int ow, boolean max) {
    int n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
    Arr out = Arr.zeros(n, c, oh, ow);
    for (int i = 0; i < out.numel(); i++) {
      int[] at = out.index(i);
      int y0 = at[2] * h / oh, y1 = -Math.floorDiv(-(at[2] + 1) * h, oh);
      int z0 = at[3] * w / ow, z1 = -Math.floorDiv(-(at[3] + 1) * w, ow);
      double acc = max ? Double.NEGATIVE_INFINITY : 0;
      for (int y = y0; y < y1; y++) {
        for (int z = z0; z < z1; z++) {
          double e = x.get(at[0], at[1], y, z);
          acc = max ? Math.max(acc, e) : acc + e;
        }
      }
      out.data()[i] = max ? acc : acc / ((y1 - y0) * (z1 - z0));
    }
    return out;
  }

  /** Views [.., L] (rank 2 or 3) or [C, H, W] as 4-d, runs {@code f}, and gives the result the input's rank back. */
  static Arr as4d(Arr x, boolean oneD, java.util.function.UnaryOperator<Arr> f) {
    int[] s = x.shape();
    int[] s4 = oneD ? (s.length == 2 ? new int[] {1, s[0], 1, s[1]} : new int[] {s[0], s[1], 1, s[2]})
        : (s.length == 3 ? new int[] {1, s[0], s[1], s[2]} : s);
    Arr y = f.apply(new Arr(x.data(), s4));
    int[] o = y.shape();
    int[] back = oneD ? (s.length == 2 ? new int[] {o[1], o[3]} : new int[] {o[0], o[1], o[3]})
        : (s.length == 3 ? new int[] {o[1], o[2], o[3]} : o);
    return new Arr(y.data(), back);
  }

  /**
   * Normalizes each row of the trailing {@code m} elements: (x - mean) / sqrt(var + eps) (biased variance), or,
   * for {@code rms}, x / sqrt(mean(x^2) + eps); then {@code * w + b} over the row (each may be null).
   */
  static Arr rowNorm(Arr x, int m, Arr w, Arr b, double eps, boolean rms) {
    double[] o = new double[x.numel()];
    for (int r = 0; m > 0 && r < x.numel() / m; r++) {
      double mean = 0;
      for (int j = 0; j < m; j++) mean += x.data()[r * m + j];
      mean = rms ? 0 : mean / m;
      double var = 0;
      for (int j = 0; j < m; j++) var += Math.pow(x.data()[r * m + j] - mean, 2);
      double inv = 1 / Math.sqrt(var / m + eps);
      for (int j = 0; j < m; j++) {
        double v = (x.data()[r * m + j] - mean) * inv;
        if (w != null) v *= w.data()[j];
        if (b != null) v += b.data()[j];
        o[r * m + j] = v;
      }
    }
    return new Arr(o, x.shape());
  }

  /**
   * One LSTM step from gates [.., 4H] (i, f, g, o) and cell state [.., H]: [2, .., H] holding h' and c'.
   */
  static Arr lstmCell(Arr gates, Arr c) {
    int hs = c.shape()[c.rank() - 1];
    int rows = c.numel() / Math.max(1, hs);
    int[] shape = new int[c.rank() + 1];
    shape[0] = 2;
    System.arraycopy(c.shape(), 0, shape, 1, c.rank());
    double[] o = new double[2 * c.numel()];
    for (int r = 0; r < rows; r++) {
      for (int j = 0; j < hs; j++) {
        double[] g = gates.data();
        int base = r * 4 * hs;
        double in = sigmoid(g[base + j]);
        double fo = sigmoid(g[base + hs + j]);
        double gg = Math.tanh(g[base + 2 * hs + j]);
        double out = sigmoid(g[base + 3 * hs + j]);
        double c1 = fo * c.data()[r * hs + j] + in * gg;
        o[r * hs + j] = out * Math.tanh(c1);
        o[c.numel() + r * hs + j] = c1;
      }
    }
    return new Arr(o, shape);
  }

  static double sigmoid(double x) {
    return 1 / (1 + Math.exp(-x));
  }

  /** Rows of {@code weight} [V, D] picked by {@code idx}: [idx shape..., D]. */
  static Arr embedding(long[] idx, int[] idxShape, Arr weight) {
    int d = weight.shape()[1];
    double[] o = new double[idx.length * d];
    for (int i = 0; i < idx.length; i++) System.arraycopy(weight.data(), (int) idx[i] * d, o, i * d, d);
    int[] shape = Arrays.copyOf(idxShape, idxShape.length + 1);
    shape[idxShape.length] = d;
    return new Arr(o, shape);
  }

  /**
   * softmax(q k^T / sqrt(E) + mask) v over [.., L, E] x [.., S, E] x [.., S, Ev]: {@code mask} (null, or broadcast
   * to [.., L, S]) is boolean (nonzero = may attend) or added; causal lets query i see keys j <= i; a window
   * w >= 0 lets it see |i - j| <= w (i - w <= j <= i when causal).
   */
  static Arr attention(Arr q, Arr k, Arr v, Arr mask, boolean boolMask, boolean causal, int window) {
    int r = q.rank();
    int[] perm = new int[r];
    for (int i = 0; i < r; i++) perm[i] = i;
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    double scale = 1 / Math.sqrt(q.shape()[r - 1]);
    Arr scores = Ref.map(Ref.matmul(q, Ref.permute(k, perm)), x -> x * scale);
    for (int f = 0; f < scores.numel(); f++) {
      int[] at = scores.index(f);
      int i = at[r - 2];
      int j = at[r - 1];
      boolean hidden = causal && j > i || window >= 0 && Math.abs(i - j) > window;
      if (mask != null) {
        double m = mask.getBroadcast(at);
        if (boolMask) hidden |= m == 0;
        else scores.data()[f] += m;
      }
      if (hidden) scores.data()[f] = Double.NEGATIVE_INFINITY;
    }
    return Ref.matmul(Ref.softmax(scores, r - 1, false), v);
  }

  static Arr attention(Arr q, Arr k, Arr v) {
    return attention(q, k, v, null, false, false, -1);
  }
}
