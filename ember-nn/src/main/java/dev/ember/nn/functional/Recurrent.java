package dev.ember.nn.functional;

import dev.ember.autograd.Autograd;
import dev.ember.backend.Backend;
import dev.ember.backend.UnaryOp;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Fused recurrent cells. An LSTM step written with tensor ops costs about ten small ops and as many
 * allocations per time step, forward and backward; here the gate nonlinearities run as two
 * vectorized passes over the whole gate block and the state update as one scalar pass, and the
 * backward is one pass from the saved activations. (The backward is not itself recorded: first-order
 * gradients only, as PyTorch's fused CPU cell.)
 */
public final class Recurrent {
  private Recurrent() {}

  /**
   * One LSTM step from pre-activation gates {@code [N, 4H]} (x W_ih^T + b_ih + h W_hh^T + b_hh, in
   * PyTorch's gate order i, f, g, o) and the previous cell state {@code c [N, H]}. Returns a
   * {@code [2, N, H]} tensor: index 0 is the new hidden state h' = o * tanh(c'), index 1 the new
   * cell state c' = f * c + i * g. Also takes unbatched {@code [4H]} gates with a {@code [H]} state
   * (returning {@code [2, H]}).
   */
  public static Tensor lstmCell(Tensor gates, Tensor c) {
    String op = "lstm_cell";
    Check.floating(op, gates);
    boolean unbatched = gates.dim() == 1;
    if (gates.dim() != 1 && gates.dim() != 2 || gates.size(-1) % 4 != 0) {
      throw Check.fail(op, "gates must be [N, 4*hidden] or [4*hidden]", "gates", gates, "c", c);
    }
    int hs = gates.size(-1) / 4;
    int n = unbatched ? 1 : gates.size(0);
    int[] stateShape = unbatched ? new int[] {hs} : new int[] {n, hs};
    if (!Arrays.equals(c.shapeRef(), stateShape)) {
      throw Check.fail(op, "cell state must be " + Arrays.toString(stateShape) + " for these gates", "gates", gates,
          "c", c);
    }
    if (c.dtype() != gates.dtype()) {
      throw Check.fail(op, "gates and cell state must have one dtype (" + gates.dtype().torchName() + " vs "
          + c.dtype().torchName() + ")", "gates", gates, "c", c);
    }
    Backend be = Device.CPU.backend();
    Tensor a = gates.contiguous().reshape(n, 4 * hs);
    Tensor cc = c.contiguous();
    Tensor act = Tensor.uninitialized(gates.dtype(), n, 4 * hs); // sigmoid(i, f, o), tanh(g)
    be.unary(UnaryOp.SIGMOID, 0, a, act);
    be.unary(UnaryOp.TANH, 0, a.narrow(1, 2 * hs, hs), act.narrow(1, 2 * hs, hs));
    Tensor out = Tensor.uninitialized(gates.dtype(), 2, n, hs);
    Storage as = act.storage(), cs = cc.storage(), os = out.storage();
    int co = cc.offset(), nh = n * hs;
    boolean f32 = gates.dtype() == DType.F32;
    // float32 reads its arrays directly and computes in double as the Storage path does: the same bits
    // without a dtype dispatch per element
    float[] af = f32 ? as.floats() : null, cf = f32 ? cs.floats() : null, of = f32 ? os.floats() : null;
    for (int r = 0; r < n; r++) {
      int g0 = r * 4 * hs;
      for (int j = 0; j < hs; j++) {
        int ce = co + r * hs + j;
        if (f32) {
          of[nh + r * hs + j] = (float) ((double) af[g0 + hs + j] * cf[ce] + (double) af[g0 + j] * af[g0 + 2 * hs + j]);
        } else {
          os.setDouble(nh + r * hs + j, as.getDouble(g0 + hs + j) * cs.getDouble(ce)
              + as.getDouble(g0 + j) * as.getDouble(g0 + 2 * hs + j));
        }
      }
    }
    Tensor tc = Tensor.uninitialized(gates.dtype(), n, hs); // tanh(c'), kept for the backward
    be.unary(UnaryOp.TANH, 0, out.select(0, 1), tc);
    Storage ts = tc.storage();
    float[] tf = f32 ? ts.floats() : null;
    for (int r = 0; r < n; r++) {
      for (int j = 0; j < hs; j++) {
        if (f32) of[r * hs + j] = (float) ((double) af[r * 4 * hs + 3 * hs + j] * tf[r * hs + j]);
        else os.setDouble(r * hs + j, as.getDouble(r * 4 * hs + 3 * hs + j) * ts.getDouble(r * hs + j));
      }
    }
    Tensor result = unbatched ? out.reshape(2, hs) : out;
    int[] gatesShape = gates.shape();
    return Autograd.record(op, result, (ctx, g) -> {
      Tensor gg = g.contiguous();
      Storage gs = gg.storage();
      int go = gg.offset();
      Tensor dGates = Tensor.uninitialized(gates.dtype(), n, 4 * hs);
      Tensor dc = Tensor.uninitialized(gates.dtype(), n, hs);
      Storage dgs = dGates.storage(), dcs = dc.storage();
      Tensor cPrevT = ctx.in(1).contiguous();
      Storage cPrev = cPrevT.storage();
      int cpo = cPrevT.offset();
      if (f32 && gg.dtype() == DType.F32) {
        lstmBackwardF32(af, ts.floats(), gs.floats(), go, cPrev.floats(), cpo, dgs.floats(), dcs.floats(), n, hs);
        return new Tensor[] {
            ctx.edgeNeeded(0) ? dGates.reshape(gatesShape) : null,
            ctx.edgeNeeded(1) ? dc.reshape(stateShape) : null};
      }
      for (int r = 0; r < n; r++) {
        int g0 = r * 4 * hs;
        for (int j = 0; j < hs; j++) {
          int e = r * hs + j;
          double i = as.getDouble(g0 + j), f = as.getDouble(g0 + hs + j);
          double gt = as.getDouble(g0 + 2 * hs + j), o = as.getDouble(g0 + 3 * hs + j);
          double t = ts.getDouble(e);
          double dh = gs.getDouble(go + e);
          double dcNew = gs.getDouble(go + nh + e) + dh * o * (1 - t * t);
          dgs.setDouble(g0 + j, dcNew * gt * i * (1 - i));
          dgs.setDouble(g0 + hs + j, dcNew * cPrev.getDouble(cpo + e) * f * (1 - f));
          dgs.setDouble(g0 + 2 * hs + j, dcNew * i * (1 - gt * gt));
          dgs.setDouble(g0 + 3 * hs + j, dh * t * o * (1 - o));
          dcs.setDouble(e, dcNew * f);
        }
      }
      return new Tensor[] {
          ctx.edgeNeeded(0) ? dGates.reshape(gatesShape) : null,
          ctx.edgeNeeded(1) ? dc.reshape(stateShape) : null};
    }, new Tensor[] {gates, c});
  }

  /** The backward loop of {@link #lstmCell} on float arrays, in double as the Storage loop computes it. */
  private static void lstmBackwardF32(float[] act, float[] tanhC, float[] g, int go, float[] cPrev, int cpo,
      float[] dGates, float[] dc, int n, int hs) {
    int nh = n * hs;
    for (int r = 0; r < n; r++) {
      int g0 = r * 4 * hs;
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        double i = act[g0 + j], f = act[g0 + hs + j];
        double gt = act[g0 + 2 * hs + j], o = act[g0 + 3 * hs + j];
        double t = tanhC[e];
        double dh = g[go + e];
        double dcNew = g[go + nh + e] + dh * o * (1 - t * t);
        dGates[g0 + j] = (float) (dcNew * gt * i * (1 - i));
        dGates[g0 + hs + j] = (float) (dcNew * cPrev[cpo + e] * f * (1 - f));
        dGates[g0 + 2 * hs + j] = (float) (dcNew * i * (1 - gt * gt));
        dGates[g0 + 3 * hs + j] = (float) (dh * t * o * (1 - o));
        dc[e] = (float) (dcNew * f);
      }
    }
  }
}
