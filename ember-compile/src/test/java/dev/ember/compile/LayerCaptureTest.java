package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.AdaptiveAvgPool2d;
import dev.ember.nn.AdaptiveMaxPool2d;
import dev.ember.nn.AvgPool1d;
import dev.ember.nn.AvgPool2d;
import dev.ember.nn.BatchNorm1d;
import dev.ember.nn.Conv1d;
import dev.ember.nn.ConvTranspose2d;
import dev.ember.nn.Dropout;
import dev.ember.nn.Dropout2d;
import dev.ember.nn.ELU;
import dev.ember.nn.Embedding;
import dev.ember.nn.GELU;
import dev.ember.nn.GRU;
import dev.ember.nn.GroupNorm;
import dev.ember.nn.Hardswish;
import dev.ember.nn.LSTM;
import dev.ember.nn.LayerNorm;
import dev.ember.nn.LeakyReLU;
import dev.ember.nn.LearnedPositionalEmbedding;
import dev.ember.nn.Linear;
import dev.ember.nn.LogSoftmax;
import dev.ember.nn.MaxPool1d;
import dev.ember.nn.Mish;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.MultiheadAttention;
import dev.ember.nn.RMSNorm;
import dev.ember.nn.RNN;
import dev.ember.nn.ReLU;
import dev.ember.nn.Residual;
import dev.ember.nn.SiLU;
import dev.ember.nn.Sigmoid;
import dev.ember.nn.SinusoidalPositionalEncoding;
import dev.ember.nn.Softmax;
import dev.ember.nn.Softplus;
import dev.ember.nn.Tanh;
import dev.ember.nn.TransformerEncoder;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.nn.Unflatten;
import dev.ember.nn.Upsample;
import dev.ember.nn.functional.F;
import dev.ember.ops.IndexOps;
import dev.ember.ops.MovementOps;
import dev.ember.ops.ReduceOps;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Every model in {@link Models}, each nn layer family and the losses trace into one graph without breaks, and the
 * graph, run on inputs it was not traced on, gives eager's bits: an op without a trace hook would be a break, and one
 * whose result the tracer took for a constant would give the traced input's result instead.
 */
class LayerCaptureTest {
  /** A module and how to make an input for it (a fresh one per call). */
  private record Case(Module module, Supplier<Tensor> input) {}

  private static Map<String, Case> layers() {
    Generator.manualSeed(31);
    Map<String, Case> m = new LinkedHashMap<>();
    m.put("mlp", new Case(Models.mlp(784, 128, 10), () -> Tensor.randn(2, 1, 28, 28)));
    m.put("lenet5", new Case(Models.lenet5(10), () -> Tensor.randn(2, 1, 28, 28)));
    m.put("convnet", new Case(Models.convnet(3, 8, 5), () -> Tensor.randn(2, 3, 8, 8)));
    m.put("conv1d", new Case(new Conv1d(3, 4, 3, 1, 1), () -> Tensor.randn(2, 3, 8)));
    m.put("conv_transpose2d", new Case(new ConvTranspose2d(3, 4, 3, 2, 1), () -> Tensor.randn(2, 3, 5, 5)));
    m.put("max_pool1d", new Case(new MaxPool1d(2), () -> Tensor.randn(2, 3, 8)));
    m.put("avg_pool1d", new Case(new AvgPool1d(2), () -> Tensor.randn(2, 3, 8)));
    m.put("avg_pool2d", new Case(new AvgPool2d(2), () -> Tensor.randn(2, 3, 8, 8)));
    m.put("adaptive_avg_pool2d", new Case(new AdaptiveAvgPool2d(3), () -> Tensor.randn(2, 3, 8, 8)));
    m.put("adaptive_max_pool2d", new Case(new AdaptiveMaxPool2d(3), () -> Tensor.randn(2, 3, 8, 8)));
    m.put("batch_norm1d", new Case(new BatchNorm1d(3), () -> Tensor.randn(4, 3)));
    m.put("layer_norm", new Case(new LayerNorm(6), () -> Tensor.randn(2, 6)));
    m.put("group_norm", new Case(new GroupNorm(2, 4), () -> Tensor.randn(2, 4, 3, 3)));
    m.put("rms_norm", new Case(new RMSNorm(6), () -> Tensor.randn(2, 6)));
    m.put("dropout", new Case(new Dropout(0.3), () -> Tensor.randn(4, 6)));
    m.put("dropout2d", new Case(new Dropout2d(0.5), () -> Tensor.randn(2, 6, 3, 3)));
    m.put("activations", new Case(new dev.ember.nn.Sequential(new ELU(), new GELU(true), new Hardswish(),
        new LeakyReLU(), new Mish(), new SiLU(), new Softplus(), new Tanh(), new Sigmoid(), new Softmax(1),
        new LogSoftmax(1)), () -> Tensor.randn(3, 5)));
    m.put("embedding", new Case(new Embedding(10, 4, 0), () -> Tensor.randint(new Generator(7), 0, 10, 2, 3)));
    m.put("positional", new Case(new dev.ember.nn.Sequential(new SinusoidalPositionalEncoding(8, 16),
        new LearnedPositionalEmbedding(16, 8)), () -> Tensor.randn(2, 5, 8)));
    m.put("unflatten_upsample", new Case(new dev.ember.nn.Sequential(new Unflatten(1, 2, 2, 2),
        new Upsample(2.0), new Upsample(2.0, "bilinear")), () -> Tensor.randn(2, 8)));
    m.put("residual", new Case(new Residual(new Linear(4, 4)), () -> Tensor.randn(3, 4)));
    m.put("inplace_activations", new Case(new dev.ember.nn.Sequential(new Linear(4, 4), new ReLU(true),
        new Linear(4, 4), new LeakyReLU(0.1, true), new ELU(1.0, true), new SiLU(true), new Mish(true),
        new Hardswish(true)), () -> Tensor.randn(3, 4)));
    m.put("rnn", new Case(new RNN(3, 4), () -> Tensor.randn(5, 2, 3)));
    m.put("lstm", new Case(new LSTM(3, 4), () -> Tensor.randn(5, 2, 3)));
    m.put("gru", new Case(new GRU(3, 4), () -> Tensor.randn(5, 2, 3)));
    m.put("multihead_attention", new Case(new MultiheadAttention(8, 2), () -> Tensor.randn(3, 2, 8)));
    m.put("transformer_encoder", new Case(new TransformerEncoder(new TransformerEncoderLayer(8, 2), 2),
        () -> Tensor.randn(5, 2, 8)));
    return m;
  }

  @Test
  void everyModelAndLayerFamilyIsOneGraphThatMatchesEagerOnNewInputs() {
    for (boolean training : new boolean[] {false, true}) {
      for (Map.Entry<String, Case> e : layers().entrySet()) {
        Module m = e.getValue().module().train(training);
        String what = e.getKey() + (training ? " (train)" : " (eval)");
        CompiledModule c = Compiler.compile(m);
        for (int call = 0; call < 3; call++) { // the trace, then the graph on inputs it has not seen
          Tensor x = e.getValue().input().get();
          Generator.manualSeed(100 + call);
          Tensor eager = m.call(x);
          Generator.manualSeed(100 + call);
          Tensor compiled = c.call(x);
          try {
            assertBitwise(eager, compiled);
          } catch (AssertionError err) {
            throw new AssertionError(what + ", call " + call + ": " + err.getMessage() + "\n" + c.explain(), err);
          }
        }
        assertTrue(c.breaks().isEmpty(), what + ": " + c.explain());
        assertEquals(1, c.signatures(), what + ": " + c.explain());
      }
    }
  }

  @Test
  void opsAndLossesAreCapturedAndRunOnNewInputs() {
    Tensor cls = Tensor.of(new long[] {0, 2, 1}, 3);
    Map<String, Function<Tensor[], Tensor>> fns = new LinkedHashMap<>();
    fns.put("cat", in -> MovementOps.cat(List.of(in[0], in[1]), 1));
    fns.put("stack", in -> MovementOps.stack(List.of(in[0], in[1]), 0));
    fns.put("where", in -> dev.ember.ops.ElementwiseOps.where(in[0].gt(in[1]), in[0], in[1]));
    fns.put("clamp", in -> in[0].clamp(-0.5, 0.5));
    fns.put("gather", in -> IndexOps.gather(in[0], 1, in[1].argmax(1, true)));
    fns.put("index_select", in -> IndexOps.indexSelect(in[0], 0, cls));
    fns.put("scatter_add", in -> IndexOps.scatter(in[0], 1, in[1].argmax(1, true), in[1], true));
    fns.put("masked_fill", in -> in[0].maskedFill(in[1].gt(0), -1));
    fns.put("one_hot", in -> IndexOps.oneHot(in[0].argmax(1, false), 4).to(in[0].dtype()));
    fns.put("prod_amax_amin", in -> ReduceOps.prod(in[0], new int[] {1}, false)
        .add(ReduceOps.amax(in[0], new int[] {1}, false)).add(ReduceOps.amin(in[1], null, false)));
    fns.put("max_min_dim", in -> ReduceOps.max(in[0], 1, false)[0].add(ReduceOps.min(in[1], 1, false)[1].to(in[0].dtype())));
    fns.put("all_any", in -> ReduceOps.all(in[0].gt(-1), new int[] {1}, false)
        .to(in[0].dtype()).add(ReduceOps.any(in[1].gt(1), new int[] {1}, false).to(in[0].dtype())));
    fns.put("bmm_dot", in -> dev.ember.ops.LinalgOps.bmm(in[0].unsqueeze(0), in[1].t().unsqueeze(0)).sum()
        .add(dev.ember.ops.LinalgOps.dot(in[0].flatten(), in[1].flatten())));
    fns.put("detach", in -> in[0].detach().mul(in[1]));
    fns.put("pad", in -> F.pad(in[0].unsqueeze(0), new int[] {1, 2}, "reflect"));
    fns.put("mse_l1_smooth_huber", in -> F.mseLoss(in[0], in[1]).add(F.l1Loss(in[0], in[1]))
        .add(F.smoothL1Loss(in[0], in[1])).add(F.huberLoss(in[0], in[1])));
    fns.put("bce", in -> F.bceLoss(in[0].sigmoid(), in[1].sigmoid()).add(F.bceWithLogits(in[0], in[1].sigmoid())));
    fns.put("cross_entropy", in -> F.crossEntropy(in[0], cls).add(F.crossEntropy(in[0], in[1].softmax(1))));
    fns.put("nll_focal_poly", in -> F.nllLoss(in[0].logSoftmax(1), cls).add(F.focalLoss(in[0], cls))
        .add(F.polyLoss(in[0], cls)));
    fns.put("kl_div", in -> F.klDiv(in[0].logSoftmax(1), in[1].softmax(1)));
    fns.put("embedding_losses", in -> F.cosineEmbeddingLoss(in[0], in[1], Tensor.of(new float[] {1, -1, 1}, 3))
        .add(F.marginRankingLoss(in[0].flatten(), in[1].flatten(), Tensor.ones(12)))
        .add(F.hingeEmbeddingLoss(in[0], in[1].sign()))
        .add(F.tripletMarginLoss(in[0], in[1], in[0].mul(2))));
    fns.put("dice_sigmoid_focal", in -> F.diceLoss(in[0], in[1].sigmoid()).add(F.sigmoidFocalLoss(in[0],
        in[1].sigmoid())));
    Generator.manualSeed(32);
    for (Map.Entry<String, Function<Tensor[], Tensor>> e : fns.entrySet()) {
      Graph g = Compiler.trace(e.getValue(), Tensor.randn(3, 4), Tensor.randn(3, 4));
      for (int run = 0; run < 2; run++) {
        Tensor a = Tensor.randn(3, 4);
        Tensor b = Tensor.randn(3, 4);
        try {
          assertBitwise(e.getValue().apply(new Tensor[] {a, b}), g.run(a, b));
        } catch (AssertionError err) {
          throw new AssertionError(e.getKey() + ": " + err.getMessage() + "\n" + g, err);
        }
      }
    }
  }

  @Test
  void aCumulativeBatchNormReadsItsBatchCountOnEveryGraphRun() {
    Module a = new BatchNorm1d(3, 1e-5, null, true, true);
    Module b = new BatchNorm1d(3, 1e-5, null, true, true);
    CompiledModule c = Compiler.compile(b);
    for (int step = 0; step < 3; step++) {
      Tensor x = Tensor.randn(5, 3).mul(step + 1);
      assertBitwise(a.call(x), c.call(x));
    }
    for (Map.Entry<String, Tensor> e : a.stateDict().entrySet()) {
      assertBitwise(e.getValue(), b.stateDict().get(e.getKey()));
    }
    assertTrue(c.breaks().isEmpty(), c.explain());
  }

  /** Accumulates its input into a tensor it makes: a graph would keep that tensor as a constant. */
  static final class Accumulate extends Module {
    @Override
    public Tensor forward(Tensor x) {
      Tensor acc = Tensor.zeros(x.shape());
      acc.add_(x);
      Tensor scale = Tensor.ones(x.shape());
      scale.mul_(Tensor.scalar(2.0)); // in place too, but from constants only: a constant of the graph
      return acc.mul(scale);
    }
  }

  /** Scales by a tensor it makes from constants in place: one graph. */
  static final class Scale extends Module {
    @Override
    public Tensor forward(Tensor x) {
      Tensor scale = Tensor.ones(x.shape());
      scale.mul_(Tensor.scalar(3.0));
      return x.mul(scale);
    }
  }

  @Test
  void anInPlaceWriteOfAnInputIntoATensorMadeInTheTraceIsABreakNotAStaleConstant() {
    Module acc = new Accumulate();
    CompiledModule c = Compiler.compile(acc);
    c.call(Tensor.randn(2, 3));
    Tensor y = Tensor.randn(2, 3);
    assertBitwise(acc.call(y), c.call(y));
    assertTrue(c.explain().contains("add_: writes in place into a tensor made during the trace"), c.explain());

    Module scale = new Scale();
    CompiledModule s = Compiler.compile(scale);
    s.call(Tensor.randn(2, 3));
    assertBitwise(scale.call(y), s.call(y));
    assertTrue(s.breaks().isEmpty(), s.explain());
    assertTrue(s.graph().contains("constant"), s.graph());
  }

  /** Overwrites an intermediate with fill_, an in-place op without a trace hook. */
  static final class Refill extends Module {
    @Override
    public Tensor forward(Tensor x) {
      Tensor h = x.mul(2);
      dev.ember.ops.ElementwiseOps.fill_(h, 1.0);
      return h.add(x);
    }
  }

  @Test
  void anUntracedInPlaceWriteIsABreakNamingTheOpAndTypeItWrote() {
    Module m = new Refill();
    CompiledModule c = Compiler.compile(m);
    Tensor y = Tensor.randn(2, 3);
    c.call(Tensor.randn(2, 3));
    assertBitwise(m.call(y), c.call(y));
    assertTrue(c.explain().contains("its input (mul, f32[2, 3]) was modified in place by an op the tracer does not see"),
        c.explain());
  }

  @Test
  void anOpThatChecksItsIndicesIsOneNodeAndItsReplayChecksThemAgain() {
    Embedding emb = new Embedding(5, 3);
    CompiledModule c = Compiler.compile(emb);
    c.call(Tensor.of(new long[] {1, 4}, 2));
    assertTrue(c.graph().contains("= embedding(%x0, %weight"), c.graph());
    Tensor bad = Tensor.of(new long[] {1, 5}, 2);
    dev.ember.tensor.TensorArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
        dev.ember.tensor.TensorArgumentException.class, () -> c.call(bad));
    assertTrue(e.getMessage().contains("index out of range"), e.getMessage());
  }
}
