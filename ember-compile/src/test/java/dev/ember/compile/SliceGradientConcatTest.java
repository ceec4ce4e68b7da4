package dev.ember.compile;

import static dev.ember.compile.TrainingStepTest.batches;
import static dev.ember.compile.TrainingStepTest.checkSteps;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Module;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.nn.functional.F;
import dev.ember.optim.AdamW;
import dev.ember.optim.SGD;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

class SliceGradientConcatTest {
  /** A weight [rows, 3] read as narrows of {@code parts} rows each (along dim 0), one product per narrow, summed. */
  static final class Sliced extends Module {
    private final Tensor w;
    private final int[] parts;

    Sliced(int[] parts, int rows) {
      this.parts = parts;
      w = registerParameter("w", Tensor.randn(rows, 3));
    }

    @Override
    public String name() {
      return "Sliced";
    }

    @Override
    public Tensor forward(Tensor x) {
      Tensor y = null;
      int at = 0;
      for (int p : parts) {
        Tensor h = x.matmul(w.narrow(0, at, p).transpose(0, 1)).sum(1, true);
        y = y == null ? h : y.add(h.mul(at + 1.0));
        at += p;
      }
      return y;
    }
  }

  @Test
  void slicesThatTileTheWeightConcatenateTheirGradientsWithTheSumsBits() {
    TrainingStep step = checkSteps(() -> new Sliced(new int[] {2, 3, 1}, 6), F::mseLoss,
        m -> new SGD(m.parameters(), 0.1), batches(3, () -> Tensor.randn(4, 3), () -> Tensor.randn(4, 1)));
    String g = step.graph();
    assertTrue(g.contains("= cat(") && g.contains("dim=0"), g);
    assertFalse(g.contains("slice_backward("), g);
  }

  @Test
  void slicesThatLeaveRowsOutKeepTheirSliceBackwards() {
    TrainingStep step = checkSteps(() -> new Sliced(new int[] {2, 3}, 6), F::mseLoss,
        m -> new SGD(m.parameters(), 0.1), batches(3, () -> Tensor.randn(4, 3), () -> Tensor.randn(4, 1)));
    String g = step.graph();
    assertFalse(g.contains("= cat("), g);
    assertEquals(2, g.split("= slice_backward\\(", -1).length - 1, g);
  }

  /**
   * Self-attention projects q, k and v as one linear with the packed [3E, E] weight, narrowed into three along its
   * last dim. Through the attention core (one node, eager's) the [N, L, 3E] product's gradient is one tensor, which
   * the core's backward writes whole; with the plain kernel (scaled_dot_product_attention's ops) the three slices'
   * gradients arrive as slice_backwards, concatenated. Either way the weight's gradient is one g^T x [3E, E], with
   * no slices of it.
   */
  @Test
  void attentionsPackedProjectionGetsOneConcatenatedGradient() {
    for (boolean core : new boolean[] {true, false}) {
      TrainingStep step = checkSteps(() -> {
        TransformerEncoderLayer layer = new TransformerEncoderLayer(16, 4, 32, 0.0, "relu", 1e-5, true, false, true,
            new Generator(3));
        if (!core) layer.selfAttn().attentionKernel(dev.ember.nn.functional.Attention.Kernel.plain());
        return layer;
      }, F::mseLoss, m -> new AdamW(m.parameters(), 1e-2),
          batches(3, () -> Tensor.randn(2, 5, 16), () -> Tensor.randn(2, 5, 16)));
      String g = step.graph();
      assertFalse(g.contains("slice_backward("), g);
      if (core) {
        assertFalse(g.contains("= cat("), g);
        assertTrue(g.contains(": f32[2, 5, 48] = attention_core_backward("), g);
      } else {
        assertEquals(1, g.split("= cat\\(", -1).length - 1, "the packed projection's output gradient:\n" + g);
        assertTrue(g.contains(": f32[2, 5, 48] = cat(") && g.contains("dim=2"), g);
      }
      assertTrue(g.contains("= linear(") && g.contains("%self_attn_in_proj_weight, %self_attn_in_proj_bias)"), g);
      assertTrue(g.contains(": f32[48, 16] = mm_tn("), "the packed weight's gradient, whole:\n" + g);
    }
  }

  /**
   * Compiled inside the first step's MemoryScope (as the Trainer and the bench step): the pass's zero constant must
   * outlive that scope; the second step, in a new scope, read a released buffer when it did not.
   */
  @Test
  void aStepCompiledInsideAMemoryScopeRunsInTheNextScopes() {
    Module layer = new TransformerEncoderLayer(16, 4, 32, 0.0, "relu", 1e-5, true, false, true, new Generator(3));
    AdamW opt = new AdamW(layer.parameters(), 1e-2);
    TrainingStep step = Compiler.compileTraining(layer, F::mseLoss);
    Tensor x = Tensor.randn(2, 5, 16);
    Tensor y = Tensor.randn(2, 5, 16);
    double[] losses = new double[3];
    for (int i = 0; i < 3; i++) {
      try (MemoryScope scope = MemoryScope.open()) {
        losses[i] = step.step(x, y, opt).item();
      }
    }
    assertTrue(losses[2] < losses[0], java.util.Arrays.toString(losses));
  }
}
