package dev.ember.backend;

import dev.ember.tensor.Storage;

/**
 * The fused LSTM cell's element loops, between the gate nonlinearities that run through
 * {@link Backend#unary}. Views are contiguous, of one floating dtype: act [N, 4H] holds sigmoid(i, f, o)
 * and tanh(g) in PyTorch's gate order i, f, g, o; out [2, N, H] holds h' at index 0 and c' at index 1.
 *
 * <p>The whole-sequence LSTM and GRU ({@code Recurrent.lstm}, {@code Recurrent.gru}) run one step's gate math as
 * one pass ({@link #lstmStep}, {@link #gruStep}) and its backward as one more ({@link #lstmStepBackward},
 * {@link #gruStepBackward}), between the step's GEMMs. Their views are contiguous [N, G*H] or [N, H] row blocks of
 * one floating dtype in host memory (the op layer calls them for CPU tensors only); the defaults here compute in
 * double through {@link Storage} and a backend may replace them (the CPU's float32 ones are vectorized).
 */
public interface RecurrentKernels {
  /** out[1] = c' = f * c + i * g, from act [N, 4H] and the previous cell state c [N, H]. */
  void lstmCellState(View act, View c, View out);

  /** out[0] = h' = o * tanh(c'), from act [N, 4H] and tanhC = tanh(c') [N, H]. */
  void lstmCellHidden(View act, View tanhC, View out);

  /**
   * The cell's backward from the upstream gradient g [2, N, H] (of h' and c'): writes every element of
   * dGates [N, 4H] (the pre-activation gates' gradient) and dc [N, H] (the previous cell state's), from act,
   * tanhC and the previous cell state cPrev [N, H].
   */
  void lstmCellBackward(View act, View tanhC, View g, View cPrev, View dGates, View dc);

  /**
   * One LSTM step forward: {@code gates} [N, 4H] holds the pre-activations (i, f, g, o) and is overwritten in place
   * with sigmoid(i), sigmoid(f), tanh(g), sigmoid(o); writes c' = f * cPrev + i * g into {@code c}, tanh(c') into
   * {@code tanhC} and h' = o * tanh(c') into {@code h} (each [N, H]).
   */
  default void lstmStep(View gates, View cPrev, View c, View tanhC, View h) {
    int n = gates.shapeRef()[0];
    int hs = gates.shapeRef()[1] / 4;
    Storage a = gates.storage();
    int ao = gates.offset();
    for (int r = 0; r < n; r++) {
      int g0 = ao + r * 4 * hs;
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        double i = sigmoid(a.getDouble(g0 + j)), f = sigmoid(a.getDouble(g0 + hs + j));
        double g = Math.tanh(a.getDouble(g0 + 2 * hs + j)), o = sigmoid(a.getDouble(g0 + 3 * hs + j));
        a.setDouble(g0 + j, i);
        a.setDouble(g0 + hs + j, f);
        a.setDouble(g0 + 2 * hs + j, g);
        a.setDouble(g0 + 3 * hs + j, o);
        // read back: the stored activations (rounded to the dtype) are what the backward sees
        i = a.getDouble(g0 + j);
        f = a.getDouble(g0 + hs + j);
        g = a.getDouble(g0 + 2 * hs + j);
        o = a.getDouble(g0 + 3 * hs + j);
        c.storage().setDouble(c.offset() + e, f * cPrev.storage().getDouble(cPrev.offset() + e) + i * g);
        double t = Math.tanh(c.storage().getDouble(c.offset() + e));
        tanhC.storage().setDouble(tanhC.offset() + e, t);
        h.storage().setDouble(h.offset() + e, o * tanhC.storage().getDouble(tanhC.offset() + e));
      }
    }
  }

  /**
   * One LSTM step backward, from the activations {@code act} [N, 4H] and tanh(c') that {@link #lstmStep} left, the
   * previous cell state {@code cPrev}, and the gradient of h' as the sum {@code gh + ghRec} (the output's gradient
   * and the next step's through the recurrent weight): writes the pre-activations' gradient into {@code dGates}
   * [N, 4H], and turns {@code dc} (in: the gradient of c', out: that of cPrev) in place.
   */
  default void lstmStepBackward(View act, View cPrev, View tanhC, View gh, View ghRec, View dc, View dGates) {
    int n = act.shapeRef()[0];
    int hs = act.shapeRef()[1] / 4;
    Storage a = act.storage(), d = dGates.storage(), dcs = dc.storage();
    int ao = act.offset(), dgo = dGates.offset();
    for (int r = 0; r < n; r++) {
      int g0 = r * 4 * hs;
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        double i = a.getDouble(ao + g0 + j), f = a.getDouble(ao + g0 + hs + j);
        double g = a.getDouble(ao + g0 + 2 * hs + j), o = a.getDouble(ao + g0 + 3 * hs + j);
        double t = tanhC.storage().getDouble(tanhC.offset() + e);
        double dh = gh.storage().getDouble(gh.offset() + e) + ghRec.storage().getDouble(ghRec.offset() + e);
        double dcn = dcs.getDouble(dc.offset() + e) + dh * o * (1 - t * t);
        d.setDouble(dgo + g0 + j, dcn * g * i * (1 - i));
        d.setDouble(dgo + g0 + hs + j, dcn * cPrev.storage().getDouble(cPrev.offset() + e) * f * (1 - f));
        d.setDouble(dgo + g0 + 2 * hs + j, dcn * i * (1 - g * g));
        d.setDouble(dgo + g0 + 3 * hs + j, dh * t * o * (1 - o));
        dcs.setDouble(dc.offset() + e, dcn * f);
      }
    }
  }

  /**
   * One GRU step forward (PyTorch's gate order r, z, n): {@code xg} [N, 3H] holds x W_ih^T + b_ih and is
   * overwritten in place with r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z) and n = tanh(x_n + r * h_n), where
   * {@code hg} [N, 3H] holds hPrev W_hh^T + b_hh; copies h_n into {@code hn} [N, H] (the backward's) and writes
   * h' = n + z * (hPrev - n) into {@code h}.
   */
  default void gruStep(View xg, View hg, View hPrev, View hn, View h) {
    int n = xg.shapeRef()[0];
    int hs = xg.shapeRef()[1] / 3;
    Storage a = xg.storage(), hgs = hg.storage();
    int ao = xg.offset(), ho = hg.offset();
    for (int r = 0; r < n; r++) {
      int g0 = r * 3 * hs;
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        a.setDouble(ao + g0 + j, sigmoid(a.getDouble(ao + g0 + j) + hgs.getDouble(ho + g0 + j)));
        a.setDouble(ao + g0 + hs + j, sigmoid(a.getDouble(ao + g0 + hs + j) + hgs.getDouble(ho + g0 + hs + j)));
        hn.storage().setDouble(hn.offset() + e, hgs.getDouble(ho + g0 + 2 * hs + j));
        double rv = a.getDouble(ao + g0 + j), z = a.getDouble(ao + g0 + hs + j);
        a.setDouble(ao + g0 + 2 * hs + j, Math.tanh(a.getDouble(ao + g0 + 2 * hs + j)
            + rv * hn.storage().getDouble(hn.offset() + e)));
        double nv = a.getDouble(ao + g0 + 2 * hs + j);
        h.storage().setDouble(h.offset() + e, nv + z * (hPrev.storage().getDouble(hPrev.offset() + e) - nv));
      }
    }
  }

  /**
   * One GRU step backward, from the activations {@code act} [N, 3H] (r, z, n) and h_n that {@link #gruStep} left,
   * the previous hidden state and the gradient of h' as {@code gh + ghRec}: writes the gradient of the x projection
   * (x W_ih^T + b_ih) into {@code dx} [N, 3H], that of the h projection (hPrev W_hh^T + b_hh) into {@code dhg}
   * [N, 3H], and the direct part of hPrev's, dh' * z, into {@code dhPrev} [N, H] (which may be ghRec: each element
   * is read before it is written).
   */
  default void gruStepBackward(View act, View hn, View hPrev, View gh, View ghRec, View dx, View dhg, View dhPrev) {
    int n = act.shapeRef()[0];
    int hs = act.shapeRef()[1] / 3;
    Storage a = act.storage(), dxs = dx.storage(), dhs = dhg.storage();
    int ao = act.offset(), xo = dx.offset(), go = dhg.offset();
    for (int r = 0; r < n; r++) {
      int g0 = r * 3 * hs;
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        double rv = a.getDouble(ao + g0 + j), z = a.getDouble(ao + g0 + hs + j), nv = a.getDouble(ao + g0 + 2 * hs + j);
        double dh = gh.storage().getDouble(gh.offset() + e) + ghRec.storage().getDouble(ghRec.offset() + e);
        double hp = hPrev.storage().getDouble(hPrev.offset() + e);
        double dpn = dh * (1 - z) * (1 - nv * nv);
        double dr = dpn * hn.storage().getDouble(hn.offset() + e) * rv * (1 - rv);
        double dz = dh * (hp - nv) * z * (1 - z);
        dxs.setDouble(xo + g0 + j, dr);
        dxs.setDouble(xo + g0 + hs + j, dz);
        dxs.setDouble(xo + g0 + 2 * hs + j, dpn);
        dhs.setDouble(go + g0 + j, dr);
        dhs.setDouble(go + g0 + hs + j, dz);
        dhs.setDouble(go + g0 + 2 * hs + j, dpn * rv);
        dhPrev.storage().setDouble(dhPrev.offset() + e, dh * z);
      }
    }
  }

  /** The logistic function in double, 1 / (1 + exp(-x)), without overflow for x far below 0. */
  private static double sigmoid(double x) {
    if (x >= 0) return 1 / (1 + Math.exp(-x));
    double e = Math.exp(x);
    return e / (1 + e);
  }
}
