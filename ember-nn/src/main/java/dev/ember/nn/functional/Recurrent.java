package dev.ember.nn.functional;

import dev.ember.autograd.Autograd;
import dev.ember.backend.Backend;
import dev.ember.backend.RecurrentKernels;
import dev.ember.backend.UnaryOp;
import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Fused recurrent cells. An LSTM step written with tensor ops costs about ten small ops and as many
 * allocations per time step, forward and backward; here the gate nonlinearities run as two
 * vectorized passes over the whole gate block and the state update as one scalar pass (the
 * backend's {@link RecurrentKernels}), and the backward is one pass from the saved activations. (The backward is not itself recorded: first-order
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
    if (HalfCompute.any(gates)) return HalfCompute.like(gates, t -> lstmCell(t[0], t[1]), gates, c);
    Backend be = gates.device().backend();
    RecurrentKernels kernels = be.recurrent();
    Tensor a = gates.contiguous().reshape(n, 4 * hs);
    Tensor cc = c.contiguous();
    Tensor act = gates.newEmpty(n, 4 * hs); // sigmoid(i, f, o), tanh(g)
    be.unary(UnaryOp.SIGMOID, 0, a, act);
    be.unary(UnaryOp.TANH, 0, a.narrow(1, 2 * hs, hs), act.narrow(1, 2 * hs, hs));
    Tensor out = gates.newEmpty(2, n, hs);
    kernels.lstmCellState(act, cc, out);
    Tensor tc = gates.newEmpty(n, hs); // tanh(c'), kept for the backward
    be.unary(UnaryOp.TANH, 0, out.select(0, 1), tc);
    kernels.lstmCellHidden(act, tc, out);
    Tensor result = unbatched ? out.reshape(2, hs) : out;
    int[] gatesShape = gates.shape();
    return Autograd.record(op, result, (ctx, g) -> {
      Tensor gg = g.contiguous();
      Tensor dGates = gates.newEmpty(n, 4 * hs);
      Tensor dc = gates.newEmpty(n, hs);
      kernels.lstmCellBackward(act, tc, gg, ctx.in(1).contiguous(), dGates, dc);
      return new Tensor[] {
          ctx.edgeNeeded(0) ? dGates.reshape(gatesShape) : null,
          ctx.edgeNeeded(1) ? dc.reshape(stateShape) : null};
    }, new Tensor[] {gates, c});
  }
}
