package dev.ember.nn.functional;

import dev.ember.autograd.Tracing;
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
    Tensor out = lstmCellUntraced(gates, c);
    return Tracing.active() ? Tracing.op("lstm_cell", out, new Tensor[] {gates, c}, new Object[0],
        in -> lstmCell(in[0], in[1])) : out;
  }

  private static Tensor lstmCellUntraced(Tensor gates, Tensor c) {
    Tensor[] ac = HalfCompute.lowered("lstm_cell", gates, c); // autocast: the cell in low precision
    return fusedLstmCell(ac[0], ac[1]);
  }

  private static Tensor fusedLstmCell(Tensor gates, Tensor c) {
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
    if (HalfCompute.applies(gates)) return HalfCompute.like(op, gates, t -> fusedLstmCell(t[0], t[1]), gates, c);
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

  /**
   * One GRU step, as {@code torch.gru_cell} (nn.GRUCell): {@code input} [N, in] or unbatched [in], {@code hx} [N, H]
   * or [H], {@code wIh} [3H, in] and {@code wHh} [3H, H] in PyTorch's gate order r, z, n, biases [3H] or null:
   * {@code r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr)}, z likewise,
   * {@code n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))}, {@code h' = (1 - z) * n + z * h}. Composed of core
   * ops, whose backward is its backward; under autocast its products take low-precision operands.
   */
  public static Tensor gruCell(Tensor input, Tensor hx, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh) {
    String op = "gru_cell";
    Tensor[] a = HalfCompute.lowered(op, input, hx, wIh, wHh, bIh, bHh);
    int hs = checkCell(op, 3, a);
    if (HalfCompute.applies(a)) return HalfCompute.like(op, a[0], t -> gruCell(t[0], t[1], t[2], t[3], t[4], t[5]), a);
    Tensor xp = F.linear(a[0], a[2], a[4]);
    Tensor hp = F.linear(a[1], a[3], a[5]);
    int d = xp.dim() - 1;
    Tensor r = xp.narrow(d, 0, hs).add(hp.narrow(d, 0, hs)).sigmoid();
    Tensor z = xp.narrow(d, hs, hs).add(hp.narrow(d, hs, hs)).sigmoid();
    Tensor n = xp.narrow(d, 2 * hs, hs).add(r.mul(hp.narrow(d, 2 * hs, hs))).tanh();
    return n.add(z.mul(a[1].sub(n)));
  }

  /**
   * One Elman RNN step, as {@code torch.rnn_tanh_cell} / {@code rnn_relu_cell} (nn.RNNCell):
   * {@code h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)} with {@code nonlinearity} "tanh" or "relu"; shapes as
   * {@link #gruCell} with one gate ([H, in], [H, H], [H]). Composed of core ops; under autocast its products take
   * low-precision operands.
   */
  public static Tensor rnnCell(Tensor input, Tensor hx, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh,
      String nonlinearity) {
    String op = "rnn_cell";
    if (!"tanh".equals(nonlinearity) && !"relu".equals(nonlinearity)) {
      throw Check.fail(op, "nonlinearity must be 'tanh' or 'relu', got '" + nonlinearity + "'", "input", input);
    }
    Tensor[] a = HalfCompute.lowered(op, input, hx, wIh, wHh, bIh, bHh);
    checkCell(op, 1, a);
    if (HalfCompute.applies(a)) {
      return HalfCompute.like(op, a[0], t -> rnnCell(t[0], t[1], t[2], t[3], t[4], t[5], nonlinearity), a);
    }
    Tensor pre = F.linear(a[0], a[2], a[4]).add(F.linear(a[1], a[3], a[5]));
    return nonlinearity.equals("tanh") ? pre.tanh() : pre.relu();
  }

  /**
   * Checks a cell's {input, hx, w_ih, w_hh, b_ih, b_hh} for {@code gates} gates and returns the hidden size.
   */
  private static int checkCell(String op, int gates, Tensor[] a) {
    Tensor x = a[0], h = a[1], wIh = a[2], wHh = a[3], bIh = a[4], bHh = a[5];
    Check.floating(op, x);
    Object[] named = {"input", x, "hx", h, "weight_ih", wIh, "weight_hh", wHh};
    if (x.dim() != 1 && x.dim() != 2) throw Check.fail(op, "input must be [N, input_size] or [input_size]", named);
    if (h.dim() != x.dim() || (x.dim() == 2 && h.size(0) != x.size(0))) {
      throw Check.fail(op, "hx must be [N, hidden_size] for an input [N, input_size] ([hidden_size] unbatched)",
          named);
    }
    int hs = h.size(-1);
    if (wIh.dim() != 2 || wIh.size(0) != gates * hs || wIh.size(1) != x.size(-1)) {
      throw Check.fail(op, "weight_ih must be [" + gates + " * hidden_size, input_size] = [" + gates * hs + ", "
          + x.size(-1) + "]", named);
    }
    if (wHh.dim() != 2 || wHh.size(0) != gates * hs || wHh.size(1) != hs) {
      throw Check.fail(op, "weight_hh must be [" + gates + " * hidden_size, hidden_size] = [" + gates * hs + ", "
          + hs + "]", named);
    }
    for (Tensor b : new Tensor[] {bIh, bHh}) {
      if (b != null && (b.dim() != 1 || b.size(0) != gates * hs)) {
        throw Check.fail(op, "biases must be [" + gates + " * hidden_size] = [" + gates * hs + "]", "input", x,
            b == bIh ? "bias_ih" : "bias_hh", b);
      }
    }
    HalfCompute.requireSame(op, "input", x, "hx", h, "weight_ih", wIh, "weight_hh", wHh, "bias_ih", bIh,
        "bias_hh", bHh);
    return hs;
  }
}
