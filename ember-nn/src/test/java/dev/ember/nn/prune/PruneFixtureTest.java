package dev.ember.nn.prune;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.ember.autograd.Grad;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Masks against torch.nn.utils.prune (make_prune_fixtures.py), including how repeated pruning combines them. */
class PruneFixtureTest {
  static final Map<String, Tensor> FIX = Fixtures.read(PruneFixtureTest.class, "prune_fixtures.txt");

  static void load(Module m, String key) {
    try (Grad ignored = Grad.off()) {
      m.param("weight").copy_(FIX.get(key).to(DType.F32));
    }
  }

  static void assertMask(String key, Module m) {
    assertArrayEquals(FIX.get(key).toDoubleArray(), m.buffer("weight_mask").toDoubleArray(), key);
  }

  @Test
  void unstructuredThenStructuredAsTorch() {
    Linear lin = new Linear(6, 5, true, new Generator(0));
    load(lin, "l1.w");
    Prune.l1Unstructured(lin, "weight", 0.3);
    assertMask("l1.mask1", lin);
    Prune.l1Unstructured(lin, "weight", 4);
    assertMask("l1.mask2", lin);
    Prune.lnStructured(lin, "weight", 0.4, 2, 0);
    assertMask("l1.mask3", lin);
  }

  @Test
  void structuredOnConvAsTorch() {
    Conv2d conv = new Conv2d(3, 6, 3);
    load(conv, "ln.w");
    Prune.lnStructured(conv, "weight", 0.5, 1, 0);
    assertMask("ln.mask1", conv);
    Prune.lnStructured(conv, "weight", 1, Double.POSITIVE_INFINITY, 1);
    assertMask("ln.mask2", conv);
    Prune.l1Unstructured(conv, "weight", 0.25);
    assertMask("ln.mask3", conv);
  }

  @Test
  void globalAsTorch() {
    Linear a = new Linear(4, 3, true, new Generator(0));
    Linear b = new Linear(5, 2, true, new Generator(0));
    load(a, "global.a.w");
    load(b, "global.b.w");
    List<Prune.Target> targets = List.of(Prune.target(a, "weight"), Prune.target(b, "weight"));
    Prune.globalUnstructured(targets, 0.35);
    assertMask("global.a.mask1", a);
    assertMask("global.b.mask1", b);
    Prune.globalUnstructured(targets, 0.2);
    assertMask("global.a.mask2", a);
    assertMask("global.b.mask2", b);
  }
}
