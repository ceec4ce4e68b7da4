package dev.ember.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.ember.nn.Linear;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.tensor.Deferred;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * SGD folds a Linear weight's deferred gradient into the momentum buffer with one GEMM (b = g^T x +
 * keep b) instead of reading a computed gradient: the parameters and buffers must come out bitwise as
 * when every gradient is computed first, and the other option sets must fall back to the plain update.
 */
class SgdDeferredGradientTest {
  @AfterEach
  void emptyPool() {
    MemoryScope.trimPool();
  }

  static Stream<Map<String, Object>> options() {
    return Stream.of(
        Map.of("lr", 0.05, "momentum", 0.9),
        Map.of("lr", 0.05, "momentum", 0.9, "dampening", 0.1),
        Map.of("lr", 0.05, "momentum", 0.9, "nesterov", true),
        Map.of("lr", 0.05, "momentum", 0.9, "weight_decay", 0.01),
        Map.of("lr", 0.05, "momentum", 0.9, "maximize", true),
        Map.of("lr", 0.05));
  }

  private static Sequential model() {
    Generator g = new Generator(11);
    return new Sequential(new Linear(1024, 1024, true, g), new ReLU(), new Linear(1024, 40, true, g));
  }

  /** Four SGD steps of a two-layer MLP, each in its own MemoryScope; {@code readGrads} reads every gradient before the step. */
  private static List<Tensor> train(Map<String, Object> options, boolean readGrads, List<Boolean> deferredAtStep) {
    Sequential model = model();
    SGD opt = new SGD(model.parameters(), options);
    Generator g = new Generator(12);
    for (int step = 0; step < 4; step++) {
      Tensor x = Tensor.randn(g, 8, 1024);
      Tensor r = Tensor.randn(g, 8, 40);
      try (MemoryScope scope = MemoryScope.open()) {
        opt.zeroGrad();
        model.call(x).mul(r).sum().backward();
        Tensor w0 = model.parameters().get(0).grad();
        if (deferredAtStep != null) deferredAtStep.add(w0.storage().deferred() != null);
        if (readGrads) for (Tensor p : model.parameters()) p.grad().toFloatArray();
        opt.step();
      }
    }
    List<Tensor> out = new java.util.ArrayList<>(model.parameters());
    for (Tensor p : model.parameters()) {
      Tensor b = opt.state(p).get("momentum_buffer");
      if (b != null) out.add(b);
    }
    return out;
  }

  @ParameterizedTest
  @MethodSource("options")
  void theFoldedUpdateGivesTheBitsOfThePlainOne(Map<String, Object> options) {
    List<Boolean> deferred = new java.util.ArrayList<>();
    List<Tensor> folded = train(options, false, deferred);
    List<Tensor> plain = train(options, true, null);
    boolean folds = options.containsKey("momentum") && !options.containsKey("dampening") && !options.containsKey("nesterov")
        && !options.containsKey("weight_decay") && !options.containsKey("maximize");
    assertArrayEquals(new Boolean[] {false, folds, folds, folds}, deferred.toArray(),
        "the first weight's gradient is deferred from the second step on, when this SGD can fold it");
    for (int i = 0; i < plain.size(); i++) {
      assertArrayEquals(plain.get(i).toFloatArray(), folded.get(i).toFloatArray(), "tensor " + i + " with " + options);
    }
  }

  @org.junit.jupiter.api.Test
  void aGradientFoldedIntoTheBufferCanStillBeRead() {
    Sequential model = model();
    SGD opt = new SGD(model.parameters(), Map.of("lr", 0.05, "momentum", 0.9));
    Generator g = new Generator(13);
    Tensor w = model.parameters().get(0);
    model.call(Tensor.randn(g, 8, 1024)).sum().backward();
    opt.step(); // the first step permits deferral
    opt.zeroGrad();
    Tensor x = Tensor.randn(g, 8, 1024);
    model.call(x).sum().backward();
    Tensor grad = w.grad();
    assertNotNull(grad.storage().deferred());
    float[] expected = new float[(int) grad.numel()];
    grad.storage().deferred().computeInto(expected, 0, 0f); // the value, without materializing it
    opt.step();
    assertNotNull(grad.storage().deferred(), "folded: not computed by the step");
    assertArrayEquals(expected, grad.toFloatArray(), "and still the gradient when read");
  }
}
