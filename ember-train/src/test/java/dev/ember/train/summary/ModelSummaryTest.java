package dev.ember.train.summary;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.BatchNorm2d;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Embedding;
import dev.ember.nn.Flatten;
import dev.ember.nn.Linear;
import dev.ember.nn.MaxPool2d;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.TransformerEncoder;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class ModelSummaryTest {
  static Sequential mlp(Generator g) {
    return new Sequential(new Linear(784, 256, true, g), new ReLU(), new Linear(256, 128, true, g), new ReLU(),
        new Linear(128, 10, true, g));
  }

  static Sequential lenet5(Generator g) {
    return new Sequential(new Conv2d(1, 6, 5, 1, 2), new ReLU(), new MaxPool2d(2), new Conv2d(6, 16, 5), new ReLU(),
        new MaxPool2d(2), new Flatten(), new Linear(400, 120, true, g), new ReLU(), new Linear(120, 84, true, g),
        new ReLU(), new Linear(84, 10, true, g));
  }

  static Conv2d conv3x3(int in, int out, Generator g) {
    return new Conv2d(in, out, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1, false,
        "zeros", g);
  }

  /** conv-bn-relu x2, pool, conv-bn-relu, pool, classifier; convs without bias as usual before BatchNorm. */
  static Sequential vgg(Generator g) {
    return new Sequential(conv3x3(3, 16, g), new BatchNorm2d(16), new ReLU(), conv3x3(16, 16, g), new BatchNorm2d(16),
        new ReLU(), new MaxPool2d(2), conv3x3(16, 32, g), new BatchNorm2d(32), new ReLU(), new MaxPool2d(2),
        new Flatten(), new Linear(32 * 8 * 8, 10, true, g));
  }

  private static List<Long> flops(ModelSummary s) {
    return s.layers().stream().map(LayerSummary::flops).toList();
  }

  @Test
  void mlpParamsAndFlopsMatchHandCounts() {
    ModelSummary s = ModelSummary.of(mlp(new Generator(1)), 4, 784);
    // params: 784*256+256, 256*128+128, 128*10+10
    assertEquals(200_960 + 32_896 + 1_290, s.totalParams());
    assertEquals(235_146, s.trainableParams());
    assertEquals(0, s.nonTrainableParams());
    assertEquals(235_146L * 4, s.paramBytes());
    // per sample: Linear 2*in*out + out (bias), ReLU 1 per element; batch 4
    long perSample = (2 * 784 * 256 + 256) + 256 + (2 * 256 * 128 + 128) + 128 + (2 * 128 * 10 + 10);
    assertEquals(470_282, perSample);
    assertEquals(4 * perSample, s.totalFlops());
    assertEquals(List.of(0L, 4L * 401_664, 4L * 256, 4L * 65_664, 4L * 128, 4L * 2_570), flops(s));
    assertEquals(4 * perSample, s.layer("").subtreeFlops());
    assertArrayEquals(new int[] {4, 10}, s.layer("4").outputShape());
    assertEquals(List.of(0, 1, 1, 1, 1, 1), s.layers().stream().map(LayerSummary::depth).toList());
    // leaf outputs: 4 * (256 + 256 + 128 + 128 + 10) floats
    assertEquals(4L * 4 * (256 + 256 + 128 + 128 + 10), s.activationBytes());
  }

  @Test
  void lenet5MatchesHandCounts() {
    ModelSummary s = ModelSummary.of(lenet5(new Generator(2)), 1, 1, 28, 28);
    assertEquals(61_706, s.totalParams());
    assertEquals(List.of(0L, 6L * 25 + 6, 0L, 0L, 16L * 150 + 16, 0L, 0L, 0L, 48_120L, 0L, 10_164L, 0L, 850L),
        s.layers().stream().map(LayerSummary::params).toList());
    // conv1: 2*1*5*5 per output element of [1, 6, 28, 28] (4704) + bias; conv2: 2*6*5*5 * [1, 16, 10, 10] + bias;
    // max pools one comparison per input element; linears 2*in*out + out
    assertEquals(List.of(0L, 2L * 25 * 4704 + 4704, 4704L, 4704L, 2L * 150 * 1600 + 1600, 1600L, 1600L, 0L,
        2L * 400 * 120 + 120, 120L, 2L * 120 * 84 + 84, 84L, 2L * 84 * 10 + 10), flops(s));
    assertEquals(852_370, s.totalFlops());
    assertArrayEquals(new int[] {1, 16, 5, 5}, s.layer("5").outputShape());
    assertArrayEquals(new int[] {1, 400}, s.layer("6").outputShape());
    assertEquals(4L * 15_002, s.activationBytes());
    assertEquals(4L * 784, s.inputBytes());
  }

  @Test
  void vggWithBatchNormMatchesHandCountsAndLeavesTheModelAsItWas() {
    Sequential model = vgg(new Generator(3));
    model.train();
    Tensor runningMean = model.get(1).buffer("running_mean");
    float[] before = runningMean.toFloatArray();
    ModelSummary s = ModelSummary.of(model, 2, 3, 32, 32);
    assertEquals(432 + 32 + 2304 + 32 + 4608 + 64 + 20_490, s.totalParams());
    // BatchNorm in eval mode: per-channel scale and shift, 2 per element; buffers: mean + var (F32), count (I64)
    assertEquals(List.of(0L, 2L * 27 * 32_768, 2L * 32_768, 32_768L, 2L * 144 * 32_768, 2L * 32_768, 32_768L, 32_768L,
        2L * 144 * 16_384, 2L * 16_384, 16_384L, 16_384L, 0L, 2L * 2048 * 10 * 2 + 20), flops(s));
    assertEquals(16_302_100, s.totalFlops());
    assertEquals((16 + 16 + 16 + 16 + 32 + 32) * 4 + 3 * 8, s.bufferBytes());
    assertArrayEquals(new int[] {2, 2048}, s.layer("11").outputShape());
    for (Module m : model.modules()) assertTrue(m.isTraining(), "mode restored");
    assertArrayEquals(before, runningMean.toFloatArray(), "running statistics untouched");
    assertEquals(0, model.get(1).buffer("num_batches_tracked").toLongArray()[0]);
    for (Module m : model.modules()) assertEquals(0, m.forwardHookCount(), "hooks removed");
  }

  @Test
  void attentionAndTransformerLayersAreCounted() {
    Generator g = new Generator(4);
    TransformerEncoder enc = new TransformerEncoder(
        new TransformerEncoderLayer(8, 2, 16, 0.1, "relu", 1e-5, true, false, true, g), 1);
    ModelSummary s = ModelSummary.of(enc, 2, 5, 8);
    // E=8, H=2, L=S=5, N=2: q/k/v projections 3 * 10 tokens * (2*8*8 + 8); scores and weighted sum
    // 2*L*S*E*N each; scale H*L*S*N; softmax 5*H*L*S*N
    long attention = 3 * 10 * (2 * 64 + 8) + 2 * (2 * 5 * 5 * 8 * 2) + 2 * 5 * 5 * 2 + 5 * 2 * 5 * 5 * 2;
    assertEquals(6280, attention);
    assertEquals(attention, s.layer("layers.0.self_attn").flops());
    assertEquals(2 * 8 * 8 * 10 + 80, s.layer("layers.0.self_attn.out_proj").flops());
    // two residual adds over [2, 5, 8] and the ReLU over the [2, 5, 16] hidden layer
    assertEquals(2 * 80 + 160, s.layer("layers.0").flops());
    assertEquals(8 * 80, s.layer("layers.0.norm1").flops());
    assertEquals(0, s.layer("layers.0.dropout").flops(), "dropout is free in eval mode");
    assertEquals(320 + 6280 + 1360 + 640 + (2 * 8 * 16 * 10 + 160) + (2 * 16 * 8 * 10 + 80) + 640, s.totalFlops());
    assertEquals(enc.numParameters(false), s.totalParams());
    assertEquals(List.of("", "layers.0", "layers.0.self_attn", "layers.0.self_attn.out_proj", "layers.0.dropout1",
        "layers.0.norm1", "layers.0.linear1", "layers.0.dropout", "layers.0.linear2", "layers.0.dropout2", "layers.0.norm2"),
        s.layers().stream().map(LayerSummary::name).toList());
    assertEquals(3 * 8 * 8 + 3 * 8, s.layer("layers.0.self_attn").params(), "in_proj on the attention row");
    assertEquals(8 * 8 + 8, s.layer("layers.0.self_attn.out_proj").params());
    assertEquals(List.of(), s.uncalledLeaves());
  }

  /** A leaf type the counter has no rule for. */
  static final class Doubler extends Module {
    @Override
    public Tensor forward(Tensor x) {
      return x.mul(2);
    }
  }

  @Test
  void unknownLeavesAreMarkedAndCountedAsZero() {
    ModelSummary s = ModelSummary.of(new Sequential(new Linear(3, 2), new Doubler()), 1, 3);
    assertEquals(1, s.unknownFlopLayers().size());
    assertFalse(s.layer("1").flopsKnown());
    assertEquals(2 * 3 * 2 + 2, s.totalFlops());
    String text = s.toString();
    assertTrue(text.contains("1 (Doubler)"), text);
    assertTrue(text.contains("1 layer of unknown cost counted as 0: 1 (Doubler)"), text);
    String row = text.lines().filter(l -> l.contains("(Doubler)")).findFirst().orElseThrow();
    assertTrue(row.endsWith("?"), row);
  }

  /** A model whose forward runs its children with forward() (no hooks) for one and call() for the other. */
  static final class Net extends Module {
    Net() {
      registerModule("body", new Linear(4, 3));
      registerModule("head", new Linear(3, 2));
      registerModule("unused", new ReLU());
    }

    @Override
    public Tensor forward(Tensor x) {
      return child("head").call(child("body").forward(x));
    }
  }

  @Test
  void leavesNotSeenThroughCallAreListed() {
    ModelSummary s = ModelSummary.of(new Net(), 1, 4);
    assertEquals(List.of("", "head"), s.layers().stream().map(LayerSummary::name).toList());
    assertEquals(List.of("body", "unused"), s.uncalledLeaves());
    assertEquals(15 + 8, s.totalParams(), "parameters of every module are in the totals");
    assertEquals(2 * 3 * 2 + 2, s.totalFlops());
    assertTrue(s.toString().contains("Not seen (unused, or run with forward() instead of call()): body, unused;"),
        s.toString());
    assertTrue(ModelSummary.of(lenet5(new Generator(9)), 1, 1, 28, 28).uncalledLeaves().isEmpty());
  }

  @Test
  void aModuleCalledTwiceGetsTwoRowsAndItsParametersOnce() {
    Linear shared = new Linear(3, 3);
    ModelSummary s = ModelSummary.of(new Sequential(shared, new ReLU(), shared), 2, 3);
    assertEquals(4, s.layers().size());
    LayerSummary first = s.layers().get(1);
    LayerSummary again = s.layers().get(3);
    assertEquals("0", again.name());
    assertTrue(again.repeated());
    assertFalse(first.repeated());
    assertEquals(12, first.params());
    assertEquals(0, again.params());
    assertEquals(12, s.totalParams());
    assertEquals(2 * (2 * 9 * 2 + 6) + 6, s.totalFlops());
    assertTrue(s.toString().contains("(recursive)"));
  }

  @Test
  void integerInputsCanBeGiven() {
    Sequential model = new Sequential(new Embedding(10, 4), new Flatten(), new Linear(12, 2));
    ModelSummary s = ModelSummary.of(model, Tensor.of(new long[] {1, 2, 3, 4, 5, 6}, 2, 3));
    assertArrayEquals(new int[] {2, 3, 4}, s.layer("0").outputShape());
    assertEquals(0, s.layer("0").flops());
    assertEquals(40 + 26, s.totalParams());
    assertEquals(2 * (2 * 12 * 2 + 2), s.totalFlops());
  }

  @Test
  void frozenParametersAreNonTrainable() {
    Sequential model = mlp(new Generator(5));
    model.get(0).requiresGrad(false);
    ModelSummary s = ModelSummary.of(model, 1, 784);
    assertEquals(200_960, s.nonTrainableParams());
    assertEquals(200_960, s.layer("0").params());
    assertEquals(0, s.layer("0").trainableParams());
    assertTrue(s.toString().contains("Non-trainable params: 200,960"));
  }

  @Test
  void tableIsAlignedAndHasTheTotals() {
    ModelSummary s = ModelSummary.of(lenet5(new Generator(6)), 1, 1, 28, 28);
    String text = s.toString();
    List<String> lines = text.lines().toList();
    String header = lines.get(1);
    assertTrue(header.startsWith("Layer (type)"), header);
    int shapeCol = header.indexOf("Output shape");
    int paramEnd = header.indexOf("Param #") + "Param #".length();
    List<String> rows = lines.subList(3, 3 + s.layers().size());
    assertEquals("Sequential", rows.get(0).substring(0, shapeCol).strip());
    assertEquals("  0 (Conv2d)", rows.get(1).substring(0, shapeCol).stripTrailing());
    for (String r : rows) {
      assertEquals('[', r.charAt(shapeCol), r);
      assertTrue(r.charAt(paramEnd - 1) != ' ', "numbers right-aligned: " + r);
    }
    assertTrue(rows.get(1).contains("156"), rows.get(1));
    assertTrue(rows.get(1).contains("239,904"), rows.get(1));
    assertTrue(text.contains("Total params: 61,706\n"), text);
    assertTrue(text.contains("Trainable params: 61,706\n"), text);
    assertTrue(text.contains("Param memory (MB): 0.25 (buffers 0.00)"), text);
    assertTrue(text.contains("Activation memory, layer outputs (MB): 0.06"), text);
    assertTrue(text.contains("Total forward MFLOPs: 0.85\n"), text);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    s.print(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    assertEquals(text, bytes.toString(StandardCharsets.UTF_8));
  }

  @Test
  void profiledTimesEveryLayerAndRestoresGradients() {
    Sequential model = lenet5(new Generator(7));
    Tensor w = model.get(0).param("weight");
    Tensor oldGrad = Tensor.ones(w.shape());
    w.setGrad(oldGrad);
    ModelSummary s = ModelSummary.profiled(model, 1, 2, 2, 1, 28, 28);
    assertSame(oldGrad, w.grad());
    assertNull(model.get(3).param("weight").grad());
    ModelSummary.Profile p = s.profile();
    assertEquals(2, p.iterations());
    assertEquals(1, p.warmup());
    assertTrue(p.forwardNanos() > 0 && p.forwardBackwardNanos() >= p.forwardNanos(), p.toString());
    for (LayerSummary l : s.layers()) {
      assertTrue(l.timed() && l.selfNanos() >= 0 && l.totalNanos() >= l.selfNanos(), l.toString());
    }
    List<LayerSummary> top = s.bottlenecks(3);
    assertEquals(3, top.size());
    assertTrue(top.get(0).selfNanos() >= top.get(1).selfNanos() && top.get(1).selfNanos() >= top.get(2).selfNanos());
    String text = s.toString();
    assertTrue(text.contains("Self ms") && text.contains("Bottlenecks (self time, share of the forward):"), text);
    assertEquals(ModelSummary.of(model, 2, 1, 28, 28).totalFlops(), s.totalFlops());
    for (Module m : model.modules()) {
      assertTrue(m.isTraining());
      assertEquals(0, m.forwardHookCount());
    }
  }

  @Test
  void badArgumentsAreRejectedWithTheOperationInTheMessage() {
    Sequential model = mlp(new Generator(8));
    assertEquals("ModelSummary.of: the sample input shape must have at least one dimension (the batch)",
        assertThrows(IllegalArgumentException.class, () -> ModelSummary.of(model)).getMessage());
    assertEquals("ModelSummary.of: sample input dimensions must be positive, got [0, 784]",
        assertThrows(IllegalArgumentException.class, () -> ModelSummary.of(model, 0, 784)).getMessage());
    assertEquals("ModelSummary.profiled: need warmup >= 0 and iterations >= 1 (warmup 0, iterations 0)",
        assertThrows(IllegalArgumentException.class, () -> ModelSummary.profiled(model, 0, 0, 1, 784)).getMessage());
    assertThrows(IllegalArgumentException.class, () -> ModelSummary.of(null, 1, 784));
    // a shape the model rejects: the layer's own error comes through and the hooks are gone
    assertThrows(IllegalArgumentException.class, () -> ModelSummary.of(model, 1, 783));
    for (Module m : model.modules()) assertEquals(0, m.forwardHookCount());
    assertThrows(IllegalArgumentException.class, () -> ModelSummary.of(model, 1, 784).layer("nope"));
  }
}
