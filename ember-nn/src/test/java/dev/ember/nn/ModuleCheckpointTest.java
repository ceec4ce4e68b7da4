package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Checkpointing;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.ScopeMemory;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Module.checkpoint: the same gradients as the plain call, fewer bytes held by the step. */
class ModuleCheckpointTest {
  static Sequential block(Generator g) {
    return new Sequential(new Linear(64, 256, true, g), new ReLU(), new Dropout(0.1), new Linear(256, 64, true, g),
        new ReLU());
  }

  static Sequential model() {
    Generator g = new Generator(11);
    return new Sequential(block(g), block(g), block(g), new Linear(64, 10, true, g));
  }

  /** One forward and backward in a scope; returns the gradients (copied out) and the scope's peak. */
  static List<float[]> step(Sequential m, Tensor x, long[] peak) {
    Generator.manualSeed(3);
    List<float[]> grads = new ArrayList<>();
    long start = ScopeMemory.resetPeak();
    try (MemoryScope s = MemoryScope.open()) {
      m.call(x).square().mean().backward();
      for (Tensor p : m.parameters()) {
        grads.add(p.grad().contiguous().toFloatArray());
        p.setGrad(null);
      }
    }
    peak[0] = ScopeMemory.peak() - start;
    return grads;
  }

  @Test
  void checkpointedBlocksGiveBitwiseGradientsWithLessMemory() {
    Sequential m = model();
    Tensor x = Tensor.randn(new Generator(5), 128, 64);
    long[] plainPeak = new long[1];
    List<float[]> plain = step(m, x, plainPeak);
    for (int i = 0; i < 3; i++) assertSame(m.child(Integer.toString(i)), m.child(Integer.toString(i)).checkpoint(true));
    assertTrue(m.child("0").isCheckpointed());
    long[] ckptPeak = new long[1];
    List<float[]> ckpt = step(m, x, ckptPeak);
    assertEquals(plain.size(), ckpt.size());
    for (int i = 0; i < plain.size(); i++) assertArrayEquals(plain.get(i), ckpt.get(i), "parameter " + i);
    // each block holds 2 x [128, 256] hidden buffers, a dropout mask and the outputs: checkpointing keeps the outputs
    assertTrue(ckptPeak[0] < plainPeak[0] * 0.7, ckptPeak[0] + " vs " + plainPeak[0]);
    try (var r = dev.ember.autograd.Grad.on(); MemoryScope s = MemoryScope.open()) {
      assertTrue(Checkpointing.isCheckpoint(m.child("1").call(x.requiresGrad(true))));
    }
    m.child("0").checkpoint(false);
    assertFalse(m.child("0").isCheckpointed());
  }
}
