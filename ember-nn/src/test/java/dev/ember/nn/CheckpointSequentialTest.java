package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Checkpointing;
import dev.ember.autograd.Grad;
import dev.ember.nn.CheckpointSequential.Range;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class CheckpointSequentialTest {
  private static final long[] OWN_SEED_STATE = new Generator(99).state();

  /** Linear, ReLU, Dropout (default generator), Linear, Tanh, Dropout (own generator), Linear. */
  private static Sequential mlp(Generator own) {
    Generator g = new Generator(3);
    return new Sequential(new Linear(10, 32, true, g), new ReLU(), new Dropout(0.2), new Linear(32, 32, true, g),
        new Tanh(), new Dropout(0.4, own), new Linear(32, 4, true, g));
  }

  /** One training step's parameter gradients from fixed generator states, and the generators' states after it. */
  private static Object[] step(Module model, Generator own, Tensor x, UnaryOperator<Tensor> forward) {
    Generator.manualSeed(5);
    own.setState(OWN_SEED_STATE);
    model.zeroGrad(true);
    Tensor loss = forward.apply(x).square().mean();
    long[] global = Generator.global().state();
    long[] ownState = own.state();
    loss.backward();
    assertArrayEquals(global, Generator.global().state(), "backward moved the default generator");
    assertArrayEquals(ownState, own.state(), "backward moved the module's generator");
    List<Tensor> ps = model.parameters();
    float[][] grads = new float[ps.size()][];
    for (int i = 0; i < grads.length; i++) grads[i] = ps.get(i).grad().toFloatArray();
    return new Object[] {grads, global, ownState};
  }

  private static void assertSameStep(Object[] expected, Object[] actual, String what) {
    float[][] e = (float[][]) expected[0];
    float[][] a = (float[][]) actual[0];
    assertEquals(e.length, a.length);
    for (int i = 0; i < e.length; i++) assertTrue(Arrays.equals(e[i], a[i]), what + ": gradient " + i + " differs");
    assertArrayEquals((long[]) expected[1], (long[]) actual[1], what + ": default generator");
    assertArrayEquals((long[]) expected[2], (long[]) actual[2], what + ": own generator");
  }

  @Test
  void checkpointSequentialGivesBitwiseTheSameGradientsForEverySegmentCount() {
    Generator own = new Generator(99);
    Sequential model = mlp(own);
    Tensor x = Tensor.randn(new Generator(1), 8, 10);
    Object[] plain = step(model, own, x, model::forward);
    for (int s = 1; s <= model.size(); s++) {
      int segments = s;
      assertSameStep(plain, step(model, own, x, t -> CheckpointSequential.apply(model, segments, t)), "segments " + s);
    }
  }

  @Test
  void chosenChildrenAndRangesGiveBitwiseTheSameGradients() {
    Generator own = new Generator(99);
    Sequential model = mlp(own);
    Tensor x = Tensor.randn(new Generator(1), 8, 10);
    Object[] plain = step(model, own, x, model::forward);
    boolean[] flags = {true, false, true, true, false, true, false};
    assertSameStep(plain, step(model, own, x, t -> CheckpointSequential.apply(model, flags, t)), "flags");
    List<Range> ranges = List.of(new Range(0, 3), new Range(4, 6), new Range(6, 7));
    assertSameStep(plain, step(model, own, x, t -> CheckpointSequential.apply(model, ranges, t)), "ranges");
    assertSameStep(plain, step(model, own, x, t -> CheckpointSequential.apply(model, List.of(), t)), "no range");
  }

  @Test
  void checkpointedRunsAreOneNodeEach() {
    Sequential model = mlp(new Generator(99));
    Tensor x = Tensor.randn(new Generator(1), 8, 10);
    Tensor y = CheckpointSequential.apply(model, List.of(new Range(2, 7)), x);
    assertTrue(Checkpointing.isCheckpoint(y));
    assertFalse(Checkpointing.isCheckpoint(model.forward(x)));
    try (Grad ignored = Grad.off()) {
      assertFalse(CheckpointSequential.apply(model, 3, x).requiresGrad());
    }
  }

  @Test
  void segmentsSplitAsPyTorch() {
    // torch.utils.checkpoint.checkpoint_sequential: segment_size = n // segments, all but the last checkpointed
    assertEquals(List.of(new Range(0, 3), new Range(3, 6)), CheckpointSequential.segments(10, 3));
    assertEquals(List.of(), CheckpointSequential.segments(7, 1));
    assertEquals(6, CheckpointSequential.segments(7, 7).size());
    assertEquals(List.of(new Range(0, 2), new Range(2, 4)), CheckpointSequential.segments(7, 3));
  }

  @Test
  void badSegmentCountsFlagsAndRangesAreRejected() {
    Sequential model = mlp(new Generator(99));
    Tensor x = Tensor.randn(new Generator(1), 8, 10);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CheckpointSequential.apply(model, 0, x));
    assertEquals("checkpoint_sequential: segments must be between 1 and the number of children (7), got 0",
        e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> CheckpointSequential.apply(model, 8, x));
    e = assertThrows(IllegalArgumentException.class, () -> CheckpointSequential.apply(model, new boolean[3], x));
    assertEquals("checkpoint_sequential: expected one flag per child (7), got 3", e.getMessage());
    for (List<Range> bad : List.of(List.of(new Range(2, 2)), List.of(new Range(0, 8)),
        List.of(new Range(3, 5), new Range(4, 6)), List.of(new Range(4, 6), new Range(0, 2)),
        List.of(new Range(-1, 2)))) {
      e = assertThrows(IllegalArgumentException.class, () -> CheckpointSequential.apply(model, bad, x));
      assertTrue(e.getMessage().endsWith("within the 7 children, got " + bad), e.getMessage());
    }
  }

  /** A post-norm encoder layer with dropout (its own generator) and a causal mask, as one checkpointed block. */
  @Test
  void transformerBlockWithDropoutGivesBitwiseTheSameGradients() {
    Generator own = new Generator(99);
    TransformerEncoderLayer layer = new TransformerEncoderLayer(16, 2, 32, 0.2, "relu", 1e-5, true, false, true,
        own);
    Linear head = new Linear(16, 5, true, new Generator(4));
    Sequential model = new Sequential(layer, head);
    model.train();
    Tensor mask = Transformer.generateSquareSubsequentMask(6);
    Tensor x = Tensor.randn(new Generator(2), 3, 6, 16).requiresGrad(true);
    UnaryOperator<Tensor> block = t -> layer.forward(t, mask, null, false);
    Object[] plain = step(model, own, x, t -> head.call(block.apply(t)));
    float[] plainInputGrad = x.grad().toFloatArray();
    x.setGrad(null);
    Object[] ckpt = step(model, own, x, t -> head.call(Checkpointing.apply(block, t)));
    assertSameStep(plain, ckpt, "encoder layer");
    assertArrayEquals(plainInputGrad, x.grad().toFloatArray());
  }

  @Test
  void stackedEncoderLayersPerLayer() {
    Generator own = new Generator(99);
    TransformerEncoderLayer proto = new TransformerEncoderLayer(16, 4, 24, 0.1, "gelu", 1e-5, true, true, true, own);
    Sequential model = new Sequential(proto.copy(), proto.copy(), proto.copy(), new Linear(16, 3, true, own));
    Tensor x = Tensor.randn(new Generator(2), 2, 5, 16);
    Object[] plain = step(model, own, x, model::forward);
    boolean[] perLayer = {true, true, true, false};
    assertSameStep(plain, step(model, own, x, t -> CheckpointSequential.apply(model, perLayer, t)), "per layer");
    for (int i = 0; i < 2; i++) { // as Trainer.fit runs steps: each in a memory scope
      try (MemoryScope scope = MemoryScope.open()) {
        assertSameStep(plain, step(model, own, x, t -> CheckpointSequential.apply(model, perLayer, t)), "in a scope");
      }
    }
  }
}
