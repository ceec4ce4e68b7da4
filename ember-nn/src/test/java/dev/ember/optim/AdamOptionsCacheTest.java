package dev.ember.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Adam reads a group's options once per change of them, not once per parameter: a change between steps (a schedule's
 * {@code setLr}, a {@code set}) takes effect at the next step, and groups with different options each step on their
 * own, with the bits of an optimizer that read every option afresh.
 */
class AdamOptionsCacheTest {
  private static Tensor param(long seed) {
    Tensor p = Tensor.randn(new Generator(seed), 3, 4);
    p.requiresGrad(true);
    return p;
  }

  private static void grad(Tensor p, long seed) {
    p.setGrad(Tensor.randn(new Generator(seed), 3, 4));
  }

  @Test
  void aChangedOptionTakesEffectAtTheNextStep() {
    Tensor a = param(1);
    Tensor b = param(1);
    Adam cached = new Adam(List.of(a), Map.of("lr", 0.1));
    grad(a, 7);
    cached.step();
    cached.paramGroups().get(0).setLr(0.02);
    cached.paramGroups().get(0).set("weight_decay", 0.3);
    cached.paramGroups().get(0).set("betas", new double[] {0.8, 0.99});
    grad(a, 8);
    cached.step();

    // the reference: step 1 as above, then a new optimizer built with the changed options and step 1's state
    Adam first = new Adam(List.of(b), Map.of("lr", 0.1));
    grad(b, 7);
    first.step();
    Adam fresh = new Adam(List.of(b), Map.of("lr", 0.02, "weight_decay", 0.3, "betas", new double[] {0.8, 0.99}));
    fresh.loadStateDict(first.stateDict());
    fresh.paramGroups().get(0).setLr(0.02);
    fresh.paramGroups().get(0).set("weight_decay", 0.3);
    fresh.paramGroups().get(0).set("betas", new double[] {0.8, 0.99});
    grad(b, 8);
    fresh.step();
    assertArrayEquals(b.toFloatArray(), a.toFloatArray());
  }

  @Test
  void groupsWithDifferentOptionsEachUseTheirOwn() {
    Tensor a1 = param(2);
    Tensor a2 = param(3);
    Tensor b1 = param(2);
    Tensor b2 = param(3);
    Adam both = new Adam(List.of(ParamGroup.of(a1).set("lr", 0.05), ParamGroup.of(a2).set("eps", 1e-3).set("amsgrad", true)),
        Map.of("lr", 0.01));
    Adam one = new Adam(List.of(b1), Map.of("lr", 0.05));
    Adam two = new Adam(List.of(b2), Map.of("lr", 0.01, "eps", 1e-3, "amsgrad", true));
    for (int step = 0; step < 3; step++) {
      grad(a1, 10 + step);
      grad(b1, 10 + step);
      grad(a2, 20 + step);
      grad(b2, 20 + step);
      both.step();
      one.step();
      two.step();
    }
    assertArrayEquals(b1.toFloatArray(), a1.toFloatArray());
    assertArrayEquals(b2.toFloatArray(), a2.toFloatArray());
  }
}
