package dev.ember.nn.functional;

import dev.ember.amp.Autocast;
import dev.ember.autograd.Tracing;
import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.backend.Backend;
import dev.ember.backend.BinaryOp;
import dev.ember.backend.RecurrentKernels;
import dev.ember.backend.ReduceOp;
import dev.ember.backend.UnaryOp;
import dev.ember.ops.LinalgOps;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
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
   * One LSTM layer in one direction over a whole sequence, as {@code torch.lstm} runs it (nn.LSTM's layer): input
   * {@code [T, N, in]}, initial states {@code h0}, {@code c0} [N, H], {@code wIh} [4H, in], {@code wHh} [4H, H],
   * biases [4H] or null, gate order i, f, g, o; {@code reverse} runs from the last step to the first. Returns
   * {@code [T + 1, N, H]}: index t &lt; T is the hidden state after step t (the layer's output), index T the final
   * cell state (the final hidden state is index T - 1, or 0 when reversed).
   *
   * <p>On the CPU in float32 and float64 it is one op with one autograd node: the input projection of every step is
   * one GEMM before the loop, each step one GEMM with the recurrent weight into the step's slice of a [T, N, 4H]
   * buffer and one fused gate pass; its backward runs the steps in reverse (gate gradients into a [T, N, 4H]
   * buffer, one GEMM per step for the recurrent state's gradient) and then forms the weight, bias and input
   * gradients as one GEMM (reduction) each over all steps; a graph capture records it as one op. Elsewhere (another
   * device, half dtypes, autocast) it is composed of {@code addmm} and {@link #lstmCell} per step, with the same
   * values up to rounding.
   */
  public static Tensor lstm(Tensor input, Tensor h0, Tensor c0, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh,
      boolean reverse) {
    String op = "lstm";
    checkSequence(op, 4, input, h0, wIh, wHh, bIh, bHh);
    if (c0 == null || !Arrays.equals(c0.shapeRef(), h0.shapeRef())) {
      throw Check.fail(op, "c0 must have h0's shape " + Arrays.toString(h0.shapeRef()), "input", input, "h0", h0,
          "c0", c0);
    }
    HalfCompute.requireSame(op, "input", input, "c0", c0);
    if (fusable(input)) {
      if (!Tracing.active()) return fusedLstm(input, h0, c0, wIh, wHh, bIh, bHh, reverse);
      Tensor out;
      try (Tracing.Scope inner = Tracing.suspend()) { // captured as one op, not as the views and copies inside it
        out = fusedLstm(input, h0, c0, wIh, wHh, bIh, bHh, reverse);
      }
      return Tracing.op(op, out, new Tensor[] {input, h0, c0, wIh, wHh, bIh, bHh},
          new Object[] {"reverse", reverse}, in -> lstm(in[0], in[1], in[2], in[3], in[4], in[5], in[6], reverse));
    }
    int steps = input.size(0), batch = input.size(1);
    Tensor inBias = bIh == null ? bHh : bHh == null ? bIh : bIh.add(bHh);
    Tensor flat = input.reshape(steps * batch, input.size(2));
    Tensor xp = (inBias == null ? flat.matmul(wIh.t()) : LinalgOps.addmm(inBias, flat, wIh.t()))
        .reshape(steps, batch, -1);
    Tensor[] outs = new Tensor[steps + 1];
    Tensor h = h0, c = c0;
    for (int s = 0; s < steps; s++) {
      int t = reverse ? steps - 1 - s : s;
      Tensor hc = lstmCell(LinalgOps.addmm(xp.select(0, t), h, wHh.t()), c); // [2, N, H]: h', c'
      h = hc.select(0, 0);
      c = hc.select(0, 1);
      outs[t] = h;
    }
    outs[steps] = c;
    return Tensor.stack(Arrays.asList(outs), 0);
  }

  /**
   * One GRU layer in one direction over a whole sequence, as {@code torch.gru} runs it (nn.GRU's layer): input
   * {@code [T, N, in]}, initial state {@code h0} [N, H], {@code wIh} [3H, in], {@code wHh} [3H, H], biases [3H] or
   * null, gate order r, z, n ({@link #gruCell}'s equations); {@code reverse} runs from the last step to the first.
   * Returns the hidden states {@code [T, N, H]} (index t: after step t; the final one is index T - 1, or 0 when
   * reversed). On the CPU in float32 and float64 it is one op with one autograd node, as {@link #lstm}; elsewhere
   * composed of core ops per step.
   */
  public static Tensor gru(Tensor input, Tensor h0, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh, boolean reverse) {
    checkSequence("gru", 3, input, h0, wIh, wHh, bIh, bHh);
    if (fusable(input)) {
      if (!Tracing.active()) return fusedGru(input, h0, wIh, wHh, bIh, bHh, reverse);
      Tensor out;
      try (Tracing.Scope inner = Tracing.suspend()) { // captured as one op, as lstm
        out = fusedGru(input, h0, wIh, wHh, bIh, bHh, reverse);
      }
      return Tracing.op("gru", out, new Tensor[] {input, h0, wIh, wHh, bIh, bHh}, new Object[] {"reverse", reverse},
          in -> gru(in[0], in[1], in[2], in[3], in[4], in[5], reverse));
    }
    int steps = input.size(0), batch = input.size(1), hs = h0.size(1);
    Tensor flat = input.reshape(steps * batch, input.size(2));
    Tensor xp = (bIh == null ? flat.matmul(wIh.t()) : LinalgOps.addmm(bIh, flat, wIh.t())).reshape(steps, batch, -1);
    Tensor[] outs = new Tensor[steps];
    Tensor h = h0;
    for (int s = 0; s < steps; s++) {
      int t = reverse ? steps - 1 - s : s;
      Tensor xt = xp.select(0, t);
      Tensor hp = bHh == null ? h.matmul(wHh.t()) : LinalgOps.addmm(bHh, h, wHh.t());
      Tensor r = xt.narrow(1, 0, hs).add(hp.narrow(1, 0, hs)).sigmoid();
      Tensor z = xt.narrow(1, hs, hs).add(hp.narrow(1, hs, hs)).sigmoid();
      Tensor n = xt.narrow(1, 2 * hs, hs).add(r.mul(hp.narrow(1, 2 * hs, hs))).tanh();
      h = n.add(z.mul(h.sub(n))); // (1 - z) n + z h
      outs[t] = h;
    }
    return Tensor.stack(Arrays.asList(outs), 0);
  }

  /**
   * Whether the whole-sequence ops run fused: CPU float32/float64 outside autocast (under which the composed steps
   * give addmm and lstm_cell their own policies). Graph capture records the fused op as one op.
   */
  private static boolean fusable(Tensor input) {
    return input.device() == Device.CPU && (input.dtype() == DType.F32 || input.dtype() == DType.F64)
        && !Autocast.enabled();
  }

  /** Checks a sequence op's input [T, N, in], h0 [N, H], weights and biases for {@code gates} gates. */
  private static void checkSequence(String op, int gates, Tensor x, Tensor h0, Tensor wIh, Tensor wHh, Tensor bIh,
      Tensor bHh) {
    Check.floating(op, x);
    Object[] named = {"input", x, "h0", h0, "weight_ih", wIh, "weight_hh", wHh};
    if (x.dim() != 3 || x.size(0) == 0) {
      throw Check.fail(op, "input must be [T, N, input_size] with T >= 1", named);
    }
    if (h0 == null || h0.dim() != 2 || h0.size(0) != x.size(1)) {
      throw Check.fail(op, "h0 must be [N, hidden_size] for an input [T, N, input_size]", named);
    }
    int hs = h0.size(1);
    checkWeights(op, gates, hs, x, wIh, wHh, bIh, bHh, named);
    HalfCompute.requireSame(op, "input", x, "h0", h0, "weight_ih", wIh, "weight_hh", wHh, "bias_ih", bIh,
        "bias_hh", bHh);
    for (Tensor t : new Tensor[] {h0, wIh, wHh, bIh, bHh}) {
      if (t != null) Check.sameDevice(op, x, t);
    }
  }

  /** Whether an op on {@code inputs} records a node (grad mode on and an input requiring grad): see Autograd.record. */
  private static boolean recorded(Tensor... inputs) {
    if (!Grad.enabled()) return false;
    for (Tensor t : inputs) if (t != null && t.requiresGrad()) return true;
    return false;
  }

  /** A 2-d tensor as the rank-3 batch of one the backend's matmul takes. */
  private static Tensor b1(Tensor t) {
    return Views.batchOfOne(t);
  }

  /**
   * The input projection of every step, x [T*N, in] W_ih^T + bias, as one GEMM into a new [T, N, G] buffer (the
   * bias, when given, copied in first as GEMM's starting C, as addmm does).
   */
  private static Tensor inputProjection(Backend be, Tensor x, Tensor wIh, Tensor bias) {
    int steps = x.size(0), n = x.size(1), g = wIh.size(0);
    Tensor out = x.newEmpty(steps, n, g);
    Tensor out2 = out.reshape(steps * n, g);
    if (bias != null) be.copy(Views.expand(bias, new int[] {steps * n, g}), out2);
    be.matmul(b1(x.reshape(steps * n, x.size(2))), b1(wIh.t()), b1(out2), bias != null);
    return out;
  }

  /**
   * The recurrent weight's gradient sum over t of dG[t]^T hPrev[t], where hPrev of the first step processed is h0
   * and of every other step the output of the step before it: two GEMMs (the first step's, then the other T - 1
   * steps' as one product over (T - 1) N rows, accumulated onto it).
   */
  private static Tensor recurrentWeightGrad(Backend be, Tensor dG, Tensor out, Tensor h0, boolean reverse) {
    int steps = dG.size(0), n = dG.size(1), g = dG.size(2), hs = h0.size(1);
    Tensor dW = dG.newEmpty(g, hs);
    int first = reverse ? steps - 1 : 0;
    be.matmul(b1(dG.select(0, first).t()), b1(h0), b1(dW), false);
    if (steps > 1) {
      Tensor d = dG.narrow(0, reverse ? 0 : 1, steps - 1).reshape((steps - 1) * n, g);
      Tensor h = out.narrow(0, reverse ? 1 : 0, steps - 1).reshape((steps - 1) * n, hs);
      be.matmul(b1(d.t()), b1(h), b1(dW), true);
    }
    return dW;
  }

  /**
   * The backward's recurrent product, the previous hidden state's gradient dG W_hh ([N, G] x [G, H]) once per step,
   * computed as its transpose W_hh^T dG^T into an [H, N] buffer and then transposed into place: with W_hh^T copied
   * once per backward, the product's A is a row-major matrix and its B the step's few gate-gradient rows, the shape
   * the CPU GEMM runs without packing A when N is at most one register tile wide (N = 32, H = 256, 4H = 1024 on one
   * thread: 5.8 -&gt; 4.7 ms over 32 steps with the transposes, against dG W_hh straight); wider, both forms pack
   * one operand of W_hh's size per step.
   */
  private static final class Recurrence {
    private final Backend be;
    private final Tensor wT;
    private final Tensor prodT;

    Recurrence(Backend be, Tensor wHh, int n) {
      this.be = be;
      this.wT = b1(wHh.t().contiguous()); // [H, G]
      int hs = wHh.size(1);
      this.prodT = wHh.newEmpty(hs, n);
    }

    /** dh = dG W_hh, or dh += dG W_hh when {@code accumulate}, for the step's dG [N, G] and dh [N, H]. */
    void backward(Tensor dG, Tensor dh, boolean accumulate) {
      be.matmul(wT, b1(dG.t()), b1(prodT), false);
      if (accumulate) be.binary(BinaryOp.ADD, dh, prodT.t(), dh);
      else be.copy(prodT.t(), dh);
    }
  }

  /** The column sums of a [T, N, G] gradient: a bias's gradient [G] (the backend's fixed-order reduction). */
  private static Tensor columnSums(Backend be, Tensor d) {
    int g = d.size(2);
    Tensor out = d.newEmpty(1, g);
    be.reduce(ReduceOp.SUM, d.reshape(d.size(0) * d.size(1), g), new int[] {0}, out);
    return out.reshape(g);
  }

  /** x-gradient [T, N, in] = dG [T*N, G] W_ih, and W_ih's gradient dG^T x, each one GEMM over all steps. */
  private static Tensor[] inputGrads(Backend be, Tensor dG, Tensor x, Tensor wIh, boolean needX, boolean needW) {
    int steps = dG.size(0), n = dG.size(1), g = dG.size(2), in = x.size(2);
    Tensor d2 = dG.reshape(steps * n, g);
    Tensor dx = null, dW = null;
    if (needX) {
      dx = x.newEmpty(steps, n, in);
      be.matmul(b1(d2), b1(wIh), b1(dx.reshape(steps * n, in)), false);
    }
    if (needW) {
      dW = x.newEmpty(g, in);
      be.matmul(b1(d2.t()), b1(x.reshape(steps * n, in)), b1(dW), false);
    }
    return new Tensor[] {dx, dW};
  }

  private static Tensor fusedLstm(Tensor input, Tensor h0In, Tensor c0In, Tensor wIhIn, Tensor wHhIn, Tensor bIhIn,
      Tensor bHhIn, boolean reverse) {
    Tensor x = input.detach().contiguous(), h0 = h0In.detach().contiguous(), c0 = c0In.detach().contiguous();
    Tensor wIh = wIhIn.detach().contiguous(), wHh = wHhIn.detach().contiguous();
    Tensor bias = bIhIn == null ? (bHhIn == null ? null : bHhIn.detach())
        : bHhIn == null ? bIhIn.detach() : bIhIn.detach().add(bHhIn.detach());
    int steps = x.size(0), n = x.size(1), hs = h0.size(1);
    Backend be = x.device().backend();
    RecurrentKernels k = be.recurrent();
    Tensor act = inputProjection(be, x, wIh, bias); // pre-activations, then the gates' activations
    Tensor out = x.newEmpty(steps + 1, n, hs);
    // the backward's cell states and tanh(c) per step; without one, two cell-state slots in turn and one tanh slot
    boolean keep = recorded(input, h0In, c0In, wIhIn, wHhIn, bIhIn, bHhIn);
    Tensor cAll = x.newEmpty(keep ? steps : 2, n, hs);
    Tensor tanhC = x.newEmpty(keep ? steps : 1, n, hs);
    // the hidden states the backward reads, apart from the output (which the caller may change in place)
    Tensor hAll = keep ? x.newEmpty(steps, n, hs) : out;
    Tensor whT = b1(wHh.t());
    Tensor h = h0, c = c0;
    for (int s = 0; s < steps; s++) {
      int t = reverse ? steps - 1 - s : s;
      Tensor a = act.select(0, t);
      be.matmul(b1(h), whT, b1(a), true);
      Tensor hNew = hAll.select(0, t), cNew = cAll.select(0, keep ? t : s % 2);
      k.lstmStep(a, c, cNew, tanhC.select(0, keep ? t : 0), hNew);
      h = hNew;
      c = cNew;
    }
    if (keep) be.copy(hAll, out.narrow(0, 0, steps));
    be.copy(c, out.select(0, steps));
    return Autograd.record("lstm", out, (ctx, gOut) -> {
      for (int i = 0; i < 7; i++) ctx.in(i); // fails if an input changed in place since the forward
      Tensor g = gOut.contiguous();
      Tensor dG = act.newEmpty(steps, n, 4 * hs);
      Tensor dc = x.newEmpty(n, hs);
      be.copy(g.select(0, steps), dc);
      Tensor dh = x.newZeros(n, hs);
      Recurrence rec = new Recurrence(be, wHh, n);
      boolean needH0 = ctx.edgeNeeded(1);
      for (int s = steps - 1; s >= 0; s--) {
        int t = reverse ? steps - 1 - s : s;
        int prev = reverse ? t + 1 : t - 1;
        Tensor cPrev = s == 0 ? c0 : cAll.select(0, prev);
        Tensor d = dG.select(0, t);
        k.lstmStepBackward(act.select(0, t), cPrev, tanhC.select(0, t), g.select(0, t), dh, dc, d);
        if (s > 0 || needH0) rec.backward(d, dh, false);
      }
      Tensor[] dIn = inputGrads(be, dG, x, wIh, ctx.edgeNeeded(0), ctx.edgeNeeded(3));
      Tensor db = ctx.edgeNeeded(5) || ctx.edgeNeeded(6) ? columnSums(be, dG) : null;
      return new Tensor[] {
          dIn[0],
          needH0 ? dh : null,
          ctx.edgeNeeded(2) ? dc : null,
          dIn[1],
          ctx.edgeNeeded(4) ? recurrentWeightGrad(be, dG, hAll, h0, reverse) : null,
          ctx.edgeNeeded(5) ? db : null,
          ctx.edgeNeeded(6) ? (ctx.edgeNeeded(5) ? db.clone() : db) : null};
    }, new Tensor[] {input, h0In, c0In, wIhIn, wHhIn, bIhIn, bHhIn}, act, cAll, tanhC, hAll);
  }

  private static Tensor fusedGru(Tensor input, Tensor h0In, Tensor wIhIn, Tensor wHhIn, Tensor bIhIn, Tensor bHhIn,
      boolean reverse) {
    Tensor x = input.detach().contiguous(), h0 = h0In.detach().contiguous();
    Tensor wIh = wIhIn.detach().contiguous(), wHh = wHhIn.detach().contiguous();
    Tensor bHh = bHhIn == null ? null : bHhIn.detach();
    int steps = x.size(0), n = x.size(1), hs = h0.size(1);
    Backend be = x.device().backend();
    RecurrentKernels k = be.recurrent();
    Tensor act = inputProjection(be, x, wIh, bIhIn == null ? null : bIhIn.detach()); // then r, z, n
    Tensor out = x.newEmpty(steps, n, hs);
    boolean keep = recorded(input, h0In, wIhIn, wHhIn, bIhIn, bHhIn);
    Tensor hn = x.newEmpty(keep ? steps : 1, n, hs); // the backward's h_n per step
    Tensor hAll = keep ? x.newEmpty(steps, n, hs) : out; // its hidden states, apart from the output
    Tensor hg = x.newEmpty(n, 3 * hs);
    Tensor bias = bHh == null ? null : Views.expand(bHh, new int[] {n, 3 * hs});
    Tensor whT = b1(wHh.t());
    Tensor h = h0;
    for (int s = 0; s < steps; s++) {
      int t = reverse ? steps - 1 - s : s;
      if (bias != null) be.copy(bias, hg);
      be.matmul(b1(h), whT, b1(hg), bias != null);
      Tensor hNew = hAll.select(0, t);
      k.gruStep(act.select(0, t), hg, h, hn.select(0, keep ? t : 0), hNew);
      h = hNew;
    }
    if (keep) be.copy(hAll, out);
    return Autograd.record("gru", out, (ctx, gOut) -> {
      for (int i = 0; i < 6; i++) ctx.in(i); // fails if an input changed in place since the forward
      Tensor g = gOut.contiguous();
      Tensor dX = act.newEmpty(steps, n, 3 * hs);
      Tensor dH = act.newEmpty(steps, n, 3 * hs);
      Tensor dh = x.newZeros(n, hs);
      Recurrence rec = new Recurrence(be, wHh, n);
      for (int s = steps - 1; s >= 0; s--) {
        int t = reverse ? steps - 1 - s : s;
        int prev = reverse ? t + 1 : t - 1;
        Tensor hPrev = s == 0 ? h0 : hAll.select(0, prev);
        Tensor d = dH.select(0, t);
        k.gruStepBackward(act.select(0, t), hn.select(0, t), hPrev, g.select(0, t), dh, dX.select(0, t), d, dh);
        rec.backward(d, dh, true);
      }
      Tensor[] dIn = inputGrads(be, dX, x, wIh, ctx.edgeNeeded(0), ctx.edgeNeeded(2));
      return new Tensor[] {
          dIn[0],
          ctx.edgeNeeded(1) ? dh : null,
          dIn[1],
          ctx.edgeNeeded(3) ? recurrentWeightGrad(be, dH, hAll, h0, reverse) : null,
          ctx.edgeNeeded(4) ? columnSums(be, dX) : null,
          ctx.edgeNeeded(5) ? columnSums(be, dH) : null};
    }, new Tensor[] {input, h0In, wIhIn, wHhIn, bIhIn, bHhIn}, act, hn, hAll);
  }

  /**
   * Checks the weights [gates * hs, input_size] and [gates * hs, hs] and the biases [gates * hs] of a cell or a
   * sequence op whose input's last dimension is input_size.
   */
  private static void checkWeights(String op, int gates, int hs, Tensor x, Tensor wIh, Tensor wHh, Tensor bIh,
      Tensor bHh, Object[] named) {
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
    checkWeights(op, gates, hs, x, wIh, wHh, bIh, bHh, named);
    HalfCompute.requireSame(op, "input", x, "hx", h, "weight_ih", wIh, "weight_hh", wHh, "bias_ih", bIh,
        "bias_hh", bHh);
    return hs;
  }
}
