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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The elementwise optimizers (SGD, the Adam family, Adadelta, Adagrad, Lion, RMSprop, SophiaG) take a wide
 * Linear weight's deferred gradient block by block from the GEMM (Kernels.forGradient) instead of reading a
 * computed gradient: parameters and optimizer state must come out bitwise as when every gradient is
 * computed first, for every option set.
 */
class DeferredGradientUpdateTest {
  @AfterEach
  void emptyPool() {
    MemoryScope.trimPool();
  }

  static Stream<Arguments> optimizers() {
    BiFunction<List<Tensor>, Map<String, Object>, Optimizer> sgd = SGD::new;
    BiFunction<List<Tensor>, Map<String, Object>, Optimizer> adam = Adam::new;
    BiFunction<List<Tensor>, Map<String, Object>, Optimizer> adamw = AdamW::new;
    return Stream.of(
        Arguments.of("sgd", sgd, Map.of("lr", 0.05, "momentum", 0.9)),
        Arguments.of("sgd", sgd, Map.of("lr", 0.05, "momentum", 0.9, "dampening", 0.1)),
        Arguments.of("sgd", sgd, Map.of("lr", 0.05, "momentum", 0.9, "nesterov", true)),
        Arguments.of("sgd", sgd, Map.of("lr", 0.05, "momentum", 0.9, "weight_decay", 0.01)),
        Arguments.of("sgd", sgd, Map.of("lr", 0.05, "momentum", 0.9, "maximize", true)),
        Arguments.of("sgd", sgd, Map.of("lr", 0.05)),
        Arguments.of("adam", adam, Map.of("lr", 1e-3)),
        Arguments.of("adam", adam, Map.of("lr", 1e-3, "weight_decay", 0.01, "amsgrad", true)),
        Arguments.of("adamw", adamw, Map.of("lr", 1e-3, "weight_decay", 0.01)),
        Arguments.of("adamw", adamw, Map.of("lr", 1e-3, "maximize", true)),
        Arguments.of("adadelta", (BiFunction<List<Tensor>, Map<String, Object>, Optimizer>) Adadelta::new,
            Map.of("lr", 1.0, "weight_decay", 0.01)),
        Arguments.of("adagrad", (BiFunction<List<Tensor>, Map<String, Object>, Optimizer>) Adagrad::new,
            Map.of("lr", 0.01)),
        Arguments.of("adamax", (BiFunction<List<Tensor>, Map<String, Object>, Optimizer>) Adamax::new,
            Map.of("lr", 2e-3)),
        Arguments.of("lion", (BiFunction<List<Tensor>, Map<String, Object>, Optimizer>) Lion::new,
            Map.of("lr", 1e-4, "weight_decay", 0.1)),
        Arguments.of("nadam", (BiFunction<List<Tensor>, Map<String, Object>, Optimizer>) NAdam::new,
            Map.of("lr", 2e-3)),
        Arguments.of("radam", (BiFunction<List<Tensor>, Map<String, Object>, Optimizer>) RAdam::new,
            Map.of("lr", 1e-3)),
        Arguments.of("rmsprop", (BiFunction<List<Tensor>, Map<String, Object>, Optimizer>) RMSprop::new,
            Map.of("lr", 1e-3, "momentum", 0.9, "centered", true)),
        Arguments.of("sophiag", (BiFunction<List<Tensor>, Map<String, Object>, Optimizer>) SophiaG::new,
            Map.of("lr", 1e-3)));
  }

  private static Sequential model() {
    Generator g = new Generator(11);
    return new Sequential(new Linear(1024, 1030, true, g), new ReLU(), new Linear(1030, 40, true, g));
  }

  /**
   * Four steps of a two-layer MLP, each in its own MemoryScope, then the parameters and every state tensor;
   * {@code readGrads} reads every gradient before the step (which computes it whole).
   */
  private static List<Tensor> train(BiFunction<List<Tensor>, Map<String, Object>, Optimizer> make,
      Map<String, Object> options, boolean readGrads, List<Boolean> deferredAtStep) {
    return train(make, options, readGrads, deferredAtStep, false);
  }

  /** As above; {@code eager}: the backward computes every gradient at once (nothing is declared consumed in blocks). */
  private static List<Tensor> train(BiFunction<List<Tensor>, Map<String, Object>, Optimizer> make,
      Map<String, Object> options, boolean readGrads, List<Boolean> deferredAtStep, boolean eager) {
    Sequential model = model();
    Optimizer opt = make.apply(model.parameters(), options);
    if (eager) for (Tensor p : model.parameters()) Deferred.consumeInBlocks(p, false);
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
    List<Tensor> out = new ArrayList<>(model.parameters());
    for (Tensor p : model.parameters()) {
      for (Tensor s : opt.state(p).values()) out.add(s);
    }
    return out;
  }

  @ParameterizedTest(name = "{0} {2}")
  @MethodSource("optimizers")
  void theBlockwiseUpdateGivesTheBitsOfTheWholeOne(String name,
      BiFunction<List<Tensor>, Map<String, Object>, Optimizer> make, Map<String, Object> options) {
    List<Boolean> deferred = new ArrayList<>();
    List<Tensor> blockwise = train(make, options, false, deferred);
    List<Tensor> whole = train(make, options, true, null);
    List<Tensor> eager = train(make, options, false, null, true);
    assertArrayEquals(new Boolean[] {true, true, true, true}, deferred.toArray(),
        "the first weight's gradient is deferred from the first step on: the optimizer declared it takes it in blocks");
    for (int i = 0; i < whole.size(); i++) {
      assertArrayEquals(whole.get(i).toFloatArray(), blockwise.get(i).toFloatArray(),
          "tensor " + i + " of " + name + " with " + options);
      assertArrayEquals(eager.get(i).toFloatArray(), blockwise.get(i).toFloatArray(),
          "tensor " + i + " of " + name + " with " + options + ", against the gradients computed in the backward");
    }
  }

  @Test
  void aGradientTheStepTookInBlocksCanStillBeRead() {
    Sequential model = model();
    Adam opt = new Adam(model.parameters(), 1e-3);
    Generator g = new Generator(13);
    Tensor w = model.parameters().get(0);
    model.call(Tensor.randn(g, 8, 1024)).sum().backward();
    opt.step();
    opt.zeroGrad();
    model.call(Tensor.randn(g, 8, 1024)).sum().backward();
    Tensor grad = w.grad();
    assertNotNull(grad.storage().deferred());
    float[] expected = new float[(int) grad.numel()];
    grad.storage().deferred().computeInto(expected, 0); // the value, without materializing it
    opt.step();
    assertNotNull(grad.storage().deferred(), "taken in blocks: not computed whole by the step");
    assertArrayEquals(expected, grad.toFloatArray(), "and still the gradient when read");
  }
}
