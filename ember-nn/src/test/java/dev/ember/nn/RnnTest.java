package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** RNN, LSTM and GRU against PyTorch (fixtures from rnn/make_rnn_fixtures.py) and gradchecks. */
class RnnTest {
  private static final Map<String, Tensor> FIX = Fixtures.read(RnnTest.class, "rnn/rnn_fixtures.txt");

  private static void assertClose(String what, Tensor want, Tensor got) {
    assertArrayEquals(want.shape(), got.shape(), what + " shape");
    double[] w = want.toDoubleArray(), g = got.toDoubleArray();
    for (int i = 0; i < w.length; i++) assertEquals(w[i], g[i], 1e-12 + 1e-10 * Math.abs(w[i]), what + "[" + i + "]");
  }

  /** Loads the case's PyTorch weights (which also checks every parameter name) and compares outputs. */
  private static void check(String name, RNNBase m) {
    LinkedHashMap<String, Tensor> all = Fixtures.under(FIX, name);
    LinkedHashMap<String, Tensor> sd = new LinkedHashMap<>();
    for (var e : all.entrySet()) if (e.getKey().startsWith("weight_") || e.getKey().startsWith("bias_")) sd.put(e.getKey(), e.getValue());
    m.to(DType.F64);
    m.loadStateDict(sd); // strict: names and shapes must be PyTorch's
    Tensor x = leaf(all.get("input")), h0 = leaf(all.get("h0")), c0 = leaf(all.get("c0"));
    RNNBase.Output out = m instanceof LSTM l ? l.forward(x, h0, c0) : m instanceof GRU g ? g.forward(x, h0) : ((RNN) m).forward(x, h0);
    assertClose(name + " output", all.get("output"), out.output());
    assertClose(name + " h_n", all.get("h_n"), out.hN());
    if (all.containsKey("c_n")) assertClose(name + " c_n", all.get("c_n"), out.cN());
    else assertNull(out.cN());
    // backpropagation through time against PyTorch's gradients for the same upstream gradients
    Tensor loss = out.output().mul(all.get("grad_output")).sum().add(out.hN().mul(all.get("grad_h_n")).sum());
    if (out.cN() != null) loss = loss.add(out.cN().mul(all.get("grad_c_n")).sum());
    loss.backward();
    assertClose(name + " grad input", all.get("grad.input"), x.grad());
    if (h0 != null) assertClose(name + " grad h0", all.get("grad.h0"), h0.grad());
    if (c0 != null) assertClose(name + " grad c0", all.get("grad.c0"), c0.grad());
    for (var p : m.namedParameters().entrySet()) {
      assertClose(name + " grad " + p.getKey(), all.get("grad." + p.getKey()), p.getValue().grad());
    }
  }

  private static Tensor leaf(Tensor t) {
    return t == null ? null : t.detach().requiresGrad(true);
  }

  @Test
  void matchesPyTorch() {
    Generator g = new Generator(1);
    check("rnn_tanh", new RNN(4, 6));
    check("rnn_relu_2layer_bidir", new RNN(4, 6, 2, "relu", true, false, 0, true, g));
    check("lstm", new LSTM(4, 6));
    check("lstm_2layer_bidir_batch_first", new LSTM(4, 6, 2, true, true, 0, true, g));
    check("lstm_nobias_unbatched", new LSTM(4, 6, 1, false, false, 0, false, g));
    check("gru", new GRU(4, 6));
    check("gru_3layer_bidir_batch_first", new GRU(4, 6, 3, true, true, 0, true, g));
  }

  @Test
  void backpropagationThroughTimeGradchecks() {
    Generator g = new Generator(2);
    for (RNNBase m : List.<RNNBase>of(new RNN(3, 4, 2, "tanh", true, false, 0, true, g),
        new LSTM(3, 4, 2, true, true, 0, true, g), new GRU(3, 4, 1, true, false, 0, true, g))) {
      m.to(DType.F64);
      Tensor x = Tensor.randn(g, DType.F64, 4, 2, 3).requiresGrad(true);
      // RNN: 2 layers x 2 directions, x is [T=4, N=2, 3]; GRU: 1 layer x 2 directions
      Tensor h0 = Tensor.randn(g, DType.F64, m instanceof GRU ? 2 : 4, 2, 4).requiresGrad(true);
      java.util.ArrayList<Tensor> inputs = new java.util.ArrayList<>(List.of(x));
      inputs.addAll(m.parameters());
      if (m instanceof LSTM l) {
        // batch_first: x is [N=4, T=2, 3]; states [layers*dirs=4, N=4, H=4]
        Tensor c0 = Tensor.randn(g, DType.F64, 4, 4, 4).requiresGrad(true);
        Tensor hh = Tensor.randn(g, DType.F64, 4, 4, 4).requiresGrad(true);
        inputs.add(hh);
        inputs.add(c0);
        GradCheck.check("LSTM", in -> {
          RNNBase.Output o = l.forward(in.get(0), in.get(in.size() - 2), in.get(in.size() - 1));
          return o.output().sum().add(o.hN().mul(o.cN()).sum());
        }, inputs);
      } else {
        Tensor h = h0;
        inputs.add(h);
        GradCheck.check(m.name(), in -> {
          RNNBase.Output o = m instanceof GRU gru ? gru.forward(in.get(0), in.get(in.size() - 1))
              : ((RNN) m).forward(in.get(0), in.get(in.size() - 1));
          return o.output().mul(o.output()).sum().add(o.hN().sum());
        }, inputs);
      }
    }
  }

  /**
   * Output, final states and every gradient of a float32 LSTM (2 layers, bidirectional) and GRU (bidirectional) at a
   * size where the fused steps spread their rows over the threads (32 x 260 per step; 260 is no multiple of a vector,
   * so the vector loops' tails run too). Layers are built from one seed each call.
   */
  private static float[][] float32Run(boolean lstm, DType dtype) {
    Generator g = new Generator(5);
    RNNBase m = lstm ? new LSTM(5, 260, 2, true, false, 0, true, g) : new GRU(5, 260, 1, true, true, 0, true, g);
    m.to(dtype);
    Tensor x = Tensor.randn(g, DType.F64, lstm ? 3 : 32, lstm ? 32 : 3, 5).to(dtype).requiresGrad(true);
    RNNBase.Output o = lstm ? ((LSTM) m).forward(x, null, null) : ((GRU) m).forward(x, null);
    Tensor loss = o.output().mul(Tensor.randn(g, DType.F64, o.output().shape()).to(dtype)).sum()
        .add(o.hN().mul(Tensor.randn(g, DType.F64, o.hN().shape()).to(dtype)).sum());
    if (o.cN() != null) loss = loss.add(o.cN().mul(Tensor.randn(g, DType.F64, o.cN().shape()).to(dtype)).sum());
    loss.backward();
    List<float[]> all = new java.util.ArrayList<>(List.of(o.output().toFloatArray(), o.hN().toFloatArray(),
        x.grad().toFloatArray()));
    if (o.cN() != null) all.add(o.cN().toFloatArray());
    for (Tensor p : m.parameters()) all.add(p.grad().toFloatArray());
    return all.toArray(new float[0][]);
  }

  @Test
  void float32LayersGiveTheSameBitsOnOneAndTwoThreads() {
    int old = dev.ember.backend.cpu.Parallel.threads();
    try {
      for (boolean lstm : new boolean[] {true, false}) {
        dev.ember.backend.cpu.Parallel.setThreads(1);
        float[][] one = float32Run(lstm, DType.F32);
        dev.ember.backend.cpu.Parallel.setThreads(2);
        float[][] two = float32Run(lstm, DType.F32);
        for (int i = 0; i < one.length; i++) {
          assertArrayEquals(one[i], two[i], (lstm ? "LSTM" : "GRU") + " result " + i + ", 1 vs 2 threads");
        }
      }
    } finally {
      dev.ember.backend.cpu.Parallel.setThreads(old);
    }
  }

  /**
   * An in-place op on the layer's output (relu_) gives the gradients of its out-of-place form: the backward reads the
   * hidden states it kept, not the output.
   */
  @Test
  void inPlaceChangesToTheOutputDoNotReachTheBackward() {
    for (boolean lstm : new boolean[] {true, false}) {
      double[][] grads = new double[2][];
      for (int inPlace = 0; inPlace < 2; inPlace++) {
        Generator g = new Generator(12);
        RNNBase m = lstm ? new LSTM(3, 5, 1, true, false, 0, false, g) : new GRU(3, 5, 1, true, false, 0, false, g);
        m.to(DType.F64);
        Tensor x = Tensor.randn(g, DType.F64, 4, 2, 3).requiresGrad(true);
        Tensor y = lstm ? ((LSTM) m).forward(x, null, null).output() : ((GRU) m).forward(x, null).output();
        y = inPlace == 1 ? y.relu_() : y.relu();
        y.mul(Tensor.randn(g, DType.F64, y.shape())).sum().backward();
        List<Tensor> all = new java.util.ArrayList<>(List.of(x.grad()));
        for (Tensor p : m.parameters()) all.add(p.grad().flatten());
        grads[inPlace] = Tensor.cat(all.stream().map(Tensor::flatten).toList(), 0).toDoubleArray();
      }
      assertArrayEquals(grads[0], grads[1], (lstm ? "LSTM" : "GRU") + " input and parameter gradients");
    }
  }

  /** Without a graph to record (no saved per-step states, reused slots) the layers give the recorded run's bits. */
  @Test
  void inferenceGivesTheBitsOfTheRecordedForward() {
    Generator g = new Generator(9);
    for (RNNBase m : List.<RNNBase>of(new LSTM(3, 20, 2, true, false, 0, true, g), new GRU(3, 20, 2, true, false, 0,
        true, g))) {
      Tensor x = Tensor.randn(g, 5, 4, 3);
      RNNBase.Output rec = m instanceof LSTM l ? l.forward(x, null, null) : ((GRU) m).forward(x, null);
      RNNBase.Output inf;
      try (dev.ember.autograd.Grad off = dev.ember.autograd.Grad.off()) {
        inf = m instanceof LSTM l ? l.forward(x, null, null) : ((GRU) m).forward(x, null);
      }
      assertArrayEquals(rec.output().toFloatArray(), inf.output().toFloatArray(), m.name() + " output");
      assertArrayEquals(rec.hN().toFloatArray(), inf.hN().toFloatArray(), m.name() + " h_n");
      if (rec.cN() != null) assertArrayEquals(rec.cN().toFloatArray(), inf.cN().toFloatArray(), m.name() + " c_n");
    }
  }

  /** The float32 fused steps (vectorized gates) against the float64 ones (checked against PyTorch above). */
  @Test
  void float32LayersMatchFloat64() {
    for (boolean lstm : new boolean[] {true, false}) {
      float[][] f32 = float32Run(lstm, DType.F32);
      float[][] f64 = float32Run(lstm, DType.F64);
      for (int i = 0; i < f32.length; i++) {
        double scale = 0;
        for (float v : f64[i]) scale = Math.max(scale, Math.abs(v));
        for (int e = 0; e < f32[i].length; e++) {
          assertEquals(f64[i][e], f32[i][e], 1e-4 * scale + 1e-6, (lstm ? "LSTM" : "GRU") + " result " + i + "[" + e
              + "]");
        }
      }
    }
  }

  @Test
  void namesShapesAndErrors() {
    LSTM l = new LSTM(4, 6, 2, true, false, 0.5, true, new Generator(1));
    assertEquals(List.of("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse",
        "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1", "bias_ih_l1",
        "bias_hh_l1", "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"),
        List.copyOf(l.namedParameters().keySet()));
    assertArrayEquals(new int[] {24, 12}, l.param("weight_ih_l1").shape());
    assertEquals("LSTM(4, 6, num_layers=2, dropout=0.5, bidirectional=True)", l.toString());
    assertEquals("GRU(3, 5, batch_first=True)", new GRU(3, 5, 1, true, true, 0, false, new Generator(1)).toString());
    Tensor x = Tensor.randn(new Generator(2), 7, 3, 4);
    // dropout only in training
    l.eval();
    assertArrayEquals(l.forward(x).toFloatArray(), l.forward(x).toFloatArray());
    assertArrayEquals(new int[] {7, 3, 12}, l.forward(x).shape());
    assertEquals("LSTM: input's last dimension must be input_size (4): input=[7, 3, 5]",
        assertThrows(IllegalArgumentException.class, () -> l.forward(Tensor.zeros(7, 3, 5))).getMessage());
    assertEquals("LSTM: h0 must have shape [4, 3, 6]: h0=[2, 3, 6], input=[7, 3, 4]",
        assertThrows(IllegalArgumentException.class, () -> l.forward(x, Tensor.zeros(2, 3, 6), Tensor.zeros(2, 3, 6))).getMessage());
    assertEquals("RNN: nonlinearity must be 'tanh' or 'relu', got 'gelu'",
        assertThrows(IllegalArgumentException.class, () -> new RNN(2, 2, 1, "gelu", true, false, 0, false, new Generator(1))).getMessage());
  }
}
