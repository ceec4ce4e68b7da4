package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.loss.CrossEntropyLoss;
import dev.ember.optim.Adam;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Training steps inside {@link MemoryScope}s (pooled buffers, gradients handed back during the
 * backward pass, parameter gradients recycled by zeroGrad) give bitwise the parameters of the same
 * steps without scopes, on models whose graphs share and alias gradients: residual branches, a
 * weight used twice, views and reshapes, attention, convolutions with batch norm, an LSTM.
 */
class MemoryScopeTrainingTest {
  @BeforeEach
  @AfterEach
  void emptyPool() { // the pool is per thread and outlives test classes: start and leave it empty
    MemoryScope.trimPool();
  }

  /** A model, its batch, its loss and optimizer, built the same way for both runs. */
  private record Setup(Module model, Tensor x, Tensor y, BiFunction<Module, Tensor, Tensor> forward, Optimizer opt) {}

  private static List<float[]> train(Function<Generator, Setup> make, boolean scoped, int steps) {
    Setup s = make.apply(new Generator(5));
    CrossEntropyLoss loss = new CrossEntropyLoss();
    for (int i = 0; i < steps; i++) {
      MemoryScope scope = scoped ? MemoryScope.open() : null;
      try {
        s.opt().zeroGrad();
        Tensor l = loss.forward(s.forward().apply(s.model(), s.x()), s.y());
        l.backward();
        s.opt().step();
      } finally {
        if (scope != null) scope.close();
      }
    }
    return s.model().parameters().stream().map(Tensor::toFloatArray).toList();
  }

  private static void assertSameTraining(String what, Function<Generator, Setup> make) {
    List<float[]> plain = train(make, false, 3);
    List<float[]> scoped = train(make, true, 3);
    assertEquals(plain.size(), scoped.size());
    for (int p = 0; p < plain.size(); p++) {
      float[] a = plain.get(p);
      float[] b = scoped.get(p);
      for (int i = 0; i < a.length; i++) {
        if (Float.floatToRawIntBits(a[i]) != Float.floatToRawIntBits(b[i])) {
          throw new AssertionError(what + ": parameter " + p + " element " + i + ": " + a[i] + " without scopes, "
              + b[i] + " with");
        }
      }
    }
  }

  /** A residual MLP whose first weight is used twice (two gradient contributions to one leaf). */
  private static final class Residual2 extends Module {
    final Linear a;
    final Linear b;

    Residual2(Generator g) {
      a = registerModule("a", new Linear(12, 12, true, g));
      b = registerModule("b", new Linear(12, 5, true, g));
    }

    @Override
    public Tensor forward(Tensor x) {
      Tensor h = a.call(x).relu();
      h = h.add(a.call(h).tanh()).reshape(2, -1).reshape(-1, 12); // residual, reshapes pass gradients as views
      return b.call(h.mul(h.sigmoid()));
    }
  }

  @Test
  void scopedStepsTrainBitwiseLikePlainOnes() {
    assertSameTraining("residual MLP with a shared layer", g -> {
      Residual2 m = new Residual2(g);
      return new Setup(m, Tensor.randn(g, 6, 12), Tensor.randint(g, 0, 5, 6), Module::call,
          new SGD(m.parameters(), Map.of("lr", 0.1, "momentum", 0.9)));
    });
    assertSameTraining("small VGG (conv, batch norm, pool)", g -> {
      Generator.manualSeed(3);
      Module m = Models.convnet(3, 8, 4);
      return new Setup(m, Tensor.randn(g, 4, 3, 8, 8), Tensor.randint(g, 0, 4, 4), Module::call,
          new SGD(m.parameters(), Map.of("lr", 0.05, "momentum", 0.9)));
    });
    assertSameTraining("transformer encoder layer", g -> {
      Module m = new Sequential(new TransformerEncoderLayer(16, 2, 32, 0.0, "gelu", 1e-5, true, false, true, g),
          new Flatten(), new Linear(5 * 16, 3, true, g));
      return new Setup(m, Tensor.randn(g, 4, 5, 16), Tensor.randint(g, 0, 3, 4), Module::call,
          new Adam(m.parameters(), 1e-2));
    });
    assertSameTraining("LSTM", g -> {
      Generator.manualSeed(4);
      LSTM lstm = new LSTM(6, 8);
      Linear head = new Linear(8, 3, true, g);
      Module m = new Sequential(lstm, head);
      return new Setup(m, Tensor.randn(g, 7, 2, 6), Tensor.randint(g, 0, 3, 2),
          (mod, x) -> head.call(lstm.forward(x).select(0, 6)), new Adam(m.parameters(), 1e-2));
    });
  }

  @Test
  void aBackwardPassReusesTheGradientsItHasConsumed() {
    Tensor w = Tensor.randn(new Generator(1), 256).requiresGrad(true);
    long pooled;
    try (MemoryScope step = MemoryScope.open()) {
      Tensor h = w;
      for (int i = 0; i < 20; i++) h = h.mul(1.01).tanh(); // 40 saved activations of 256 floats
      h.sum().backward();
    }
    pooled = MemoryScope.pooledBytes() / (256 * DType.F32.itemSize());
    // 40 activations and, were nothing handed back during the pass, about 40 gradients as well
    assertTrue(pooled <= 46, "buffers of 256 floats left in the pool after the step: " + pooled);
    assertEquals(256, w.grad().numel());
  }
}
