package dev.ember.train.summary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.optim.Adam;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.ScopeMemory;
import dev.ember.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

class MemoryProfileTest {
  static Sequential mlp() {
    Generator g = new Generator(7);
    return new Sequential(new Linear(784, 100, true, g), new ReLU(), new Linear(100, 10, true, g));
  }

  // Linear(784,100)-ReLU-Linear(100,10) at batch 32, float32. The graph keeps each op's inputs and output:
  //   linear 0: x [32,784] = 100,352 B and its output [32,100] = 12,800 B (weight and bias are parameters)
  //   relu 1:   its input is linear 0's output (counted there), its output [32,100] = 12,800 B
  //   linear 2: its input is relu's output (counted there), its output [32,10] = 1,280 B
  static final long X = 32 * 784 * 4;
  static final long H = 32 * 100 * 4;
  static final long OUT = 32 * 10 * 4;

  @Test
  void activationBytesPerLayerMatchHandCounts() {
    Module model = mlp();
    ModelSummary s = ModelSummary.withMemory(model, 32, 784);
    MemoryProfile m = s.memory();
    assertEquals(List.of(0L, X + H, H, OUT), m.layers().stream().map(MemoryProfile.Layer::activationBytes).toList());
    assertEquals(List.of(-1L, X + H, H, OUT).subList(1, 4),
        s.layers().stream().skip(1).map(LayerSummary::activationBytes).toList());
    assertEquals(X + 2 * H + OUT, m.activationBytes());
    assertEquals(X + 2 * H + OUT, m.layer("").subtreeActivationBytes());
    assertEquals(X, m.inputBytes());
    long params = (784 * 100 + 100 + 100 * 10 + 10) * 4L;
    assertEquals(params, m.paramBytes());
    assertEquals(params, m.gradBytes());
    assertEquals((784 * 100 + 100) * 4L, m.layer("0").gradBytes());
    assertEquals(0, m.optimizerStateBytes());
    // the step holds at least the parameters, the activations that are not the input (made in the step's scope)
    // and the gradients; the input was made outside the scope
    long floor = params + 2 * H + OUT + params;
    assertTrue(m.peakStepBytes() >= floor, m.peakStepBytes() + " < " + floor);
    assertTrue(m.peakStepBytes() < floor + 4 * X, m.peakStepBytes() + " >= " + (floor + 4 * X));
    String table = s.toString();
    assertTrue(table.contains("Saved act."), table);
    assertTrue(table.contains("Peak live bytes in one training step"), table);
    assertNull(ModelSummary.of(model, 32, 784).memory());
  }

  @Test
  void viewsAndSharedBuffersCountOnce() {
    // a model whose forward reshapes (a view on the same buffer) and reuses one tensor twice
    Module model = new Module() {
      final Linear lin = registerModule("lin", new Linear(8, 8, true, new Generator(1)));

      @Override
      public Tensor forward(Tensor x) {
        Tensor h = lin.call(x);
        Tensor v = h.reshape(4, 16).reshape(8, 8);
        return v.mul(v);
      }
    };
    Tensor x = Tensor.randn(new Generator(2), 8, 8);
    MemoryProfile m = ModelSummary.withMemory(model, x).memory();
    long b = 8 * 8 * 4;
    assertEquals(2 * b, m.layer("lin").activationBytes()); // x and the linear output
    assertEquals(b, m.layer("").activationBytes()); // the product; the views share the linear's buffer
  }

  @Test
  void optimizerStateIsCountedPerLayer() {
    Module model = mlp();
    Adam adam = new Adam(model.parameters(), 1e-3);
    Tensor x = Tensor.randn(new Generator(3), 32, 784);
    try (MemoryScope s = MemoryScope.open()) {
      model.call(x).sum().backward();
      adam.step();
      adam.zeroGrad();
    }
    MemoryProfile.Recorder r = MemoryProfile.record(model);
    try (Grad g = Grad.on(); MemoryScope s = MemoryScope.open()) {
      model.call(x);
    } finally {
      r.close();
    }
    MemoryProfile m = r.profile(adam, -1);
    // exp_avg and exp_avg_sq per parameter, and a float64 step counter each
    assertEquals(2 * (784 * 100 + 100) * 4L + 2 * 8, m.layer("0").optimizerStateBytes());
    assertEquals(2 * m.paramBytes() + 4 * 8, m.optimizerStateBytes());
  }

  @Test
  void scopeCounterFollowsTakeAndGive() {
    long before = ScopeMemory.live();
    try (MemoryScope s = MemoryScope.open()) {
      Tensor t = Tensor.zeros(1000);
      assertEquals(before + 4000, ScopeMemory.live());
      ScopeMemory.resetPeak();
      Tensor u = t.add(t);
      assertEquals(before + 8000, ScopeMemory.peak());
    }
    assertEquals(before, ScopeMemory.live());
  }
}
