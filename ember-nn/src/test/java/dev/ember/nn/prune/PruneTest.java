package dev.ember.nn.prune;

import static dev.ember.testing.Assertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.io.SafeTensors;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PruneTest {
  /** A 2x3 Linear with weight [[0.5, -0.1, 0.3], [-0.4, 0.2, 0.05]] (distinct magnitudes, no ties). */
  static Linear linear() {
    Linear lin = new Linear(3, 2, true, new Generator(0));
    set(lin.weight(), new double[] {0.5, -0.1, 0.3, -0.4, 0.2, 0.05});
    return lin;
  }

  static void set(Tensor t, double[] values) {
    try (Grad ignored = Grad.off()) {
      t.copy_(Tensor.of(values, t.shape()).to(t.dtype()));
    }
  }

  static double[] mask(Module m, String name) {
    return m.buffer(name + "_mask").toDoubleArray();
  }

  @Test
  void l1UnstructuredPrunesTheSmallestMagnitudes() {
    // round(0.5 * 6) = 3 smallest |w|: 0.05 (5), -0.1 (1), 0.2 (4)
    Linear lin = Prune.l1Unstructured(linear(), "weight", 0.5);
    assertArrayEquals(new double[] {1, 0, 1, 1, 0, 0}, mask(lin, "weight"));
    assertArrayEquals(new double[] {0.5, 0, 0.3, -0.4, 0, 0}, lin.weight().toDoubleArray(), 1e-7);
    // an int amount is a count
    assertArrayEquals(new double[] {1, 1, 1, 1, 1, 0}, mask(Prune.l1Unstructured(linear(), "weight", 1), "weight"));
    // 0.4 * 6 = 2.4 rounds to 2; 1.0 prunes everything; 0 prunes nothing
    assertArrayEquals(new double[] {1, 0, 1, 1, 1, 0}, mask(Prune.l1Unstructured(linear(), "weight", 0.4), "weight"));
    assertArrayEquals(new double[6], mask(Prune.l1Unstructured(linear(), "weight", 1.0), "weight"));
    assertArrayEquals(new double[] {1, 1, 1, 1, 1, 1}, mask(Prune.l1Unstructured(linear(), "weight", 0.0), "weight"));
  }

  @Test
  void fractionsRoundHalfToEvenAsPython() {
    // torch: round(0.25 * 10) = round(2.5) = 2 and round(0.35 * 10) = round(3.5) = 4 (Python rounds half to even)
    Linear lin = new Linear(10, 1, false, new Generator(1));
    set(lin.weight(), new double[] {10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
    Prune.l1Unstructured(lin, "weight", 0.25);
    assertArrayEquals(new double[] {1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, mask(lin, "weight"));
    Linear other = new Linear(10, 1, false, new Generator(1));
    set(other.weight(), new double[] {10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
    Prune.l1Unstructured(other, "weight", 0.35);
    assertArrayEquals(new double[] {1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, mask(other, "weight"));
  }

  @Test
  void tiesAreTakenInIndexOrder() {
    Linear lin = new Linear(4, 1, false, new Generator(1));
    set(lin.weight(), new double[] {0.5, 0.5, 0.5, 0.5});
    Prune.l1Unstructured(lin, "weight", 2);
    assertArrayEquals(new double[] {0, 0, 1, 1}, mask(lin, "weight"));
  }

  @Test
  void reparametrizesAsPyTorch() {
    Linear lin = linear();
    Tensor weight = lin.weight();
    Tensor bias = lin.bias();
    Prune.l1Unstructured(lin, "weight", 0.5);
    // the parameter moved to weight_orig (the same tensor, so an optimizer built before still trains it)
    assertSame(weight, lin.param("weight_orig"));
    assertEquals(List.of("bias", "weight_orig"), List.copyOf(lin.namedParameters().keySet()));
    assertEquals(List.of("bias", "weight_orig", "weight_mask"), List.copyOf(lin.stateDict().keySet()));
    assertTrue(Prune.isPruned(lin, "weight"));
    assertFalse(Prune.isPruned(lin, "bias"));
    assertTrue(Prune.isPruned(new Sequential(new ReLU(), lin)));
    assertFalse(Prune.isPruned(new Sequential(linear())));
    assertTrue(lin.hasParam("weight"));
    assertTrue(lin.toString().contains("in_features=3, out_features=2, bias=True"), lin.toString());
    assertArrayEquals(new double[] {0.5, -0.1, 0.3, -0.4, 0.2, 0.05}, weight.toDoubleArray(), 1e-7);

    Tensor x = Tensor.of(new double[] {1, 2, 3, -1, 0.5, 2}, 2, 3).to(DType.F32);
    Tensor y = lin.forward(x);
    double[] w = {0.5, 0, 0.3, -0.4, 0, 0};
    double[] b = bias.toDoubleArray();
    double[] xv = x.toDoubleArray();
    double[] expected = new double[4];
    for (int r = 0; r < 2; r++) {
      for (int o = 0; o < 2; o++) {
        double s = b[o];
        for (int i = 0; i < 3; i++) s += xv[r * 3 + i] * w[o * 3 + i];
        expected[r * 2 + o] = s;
      }
    }
    assertArrayEquals(expected, y.toDoubleArray(), 1e-6);
  }

  @Test
  void gradientsOfTheOriginalAreMasked() {
    Linear lin = Prune.l1Unstructured(linear(), "weight", 0.5);
    Tensor x = Tensor.of(new double[] {1, 2, 3, -1, 0.5, 2}, 2, 3).to(DType.F32);
    lin.forward(x).sum().backward();
    // d sum(x W^T) / dW[o, i] = sum_r x[r, i], times the mask
    double[] colSums = {0, 2.5, 5};
    double[] m = {1, 0, 1, 1, 0, 0};
    double[] expected = new double[6];
    for (int o = 0; o < 2; o++) for (int i = 0; i < 3; i++) expected[o * 3 + i] = colSums[i] * m[o * 3 + i];
    assertArrayEquals(expected, lin.param("weight_orig").grad().toDoubleArray(), 1e-6);

    // an optimizer built before pruning keeps training weight_orig; pruned entries do not move
    Linear trained = linear();
    SGD sgd = new SGD(trained.parameters(), 0.1);
    Prune.l1Unstructured(trained, "weight", 0.5);
    trained.forward(x).sum().backward();
    sgd.step();
    double[] orig = trained.param("weight_orig").toDoubleArray();
    assertEquals(-0.1, orig[1], 1e-7);
    assertEquals(0.2, orig[4], 1e-7);
    assertEquals(0.05, orig[5], 1e-7);
    assertEquals(0.3 - 0.1 * 5, orig[2], 1e-6);
    assertEquals(0, trained.weight().toDoubleArray()[4]);
  }

  @Test
  void prunedLinearPassesTheFloat64GradientCheck() {
    Linear lin = new Linear(4, 3, true, new Generator(3));
    lin.to(DType.F64);
    Prune.l1Unstructured(lin, "weight", 0.5);
    Tensor x = Tensor.randn(new Generator(4), DType.F64, 2, 4).requiresGrad(true);
    GradCheck.check("pruned linear", in -> lin.forward(in.get(0)),
        List.of(x, lin.param("weight_orig"), lin.bias()));
  }

  @Test
  void aPrunedModuleChangesDtypeWithItsMask() {
    Linear lin = Prune.l1Unstructured(linear(), "weight", 0.5);
    lin.to(DType.F64);
    assertEquals(DType.F64, lin.param("weight_orig").dtype());
    assertEquals(DType.F64, lin.buffer("weight_mask").dtype());
    assertArrayEquals(new double[] {0.5, 0, 0.3, -0.4, 0, 0}, lin.weight().toDoubleArray(), 1e-7);
    lin.to(DType.BF16);
    Tensor y = lin.forward(Tensor.ones(1, 3).to(DType.BF16));
    assertEquals(DType.BF16, y.dtype());
    // bf16 of 0.5 + 0.3 + bias and -0.4 + bias: the pruned entries do not count
    double[] b = lin.bias().toDoubleArray();
    assertArrayEquals(new double[] {0.8 + b[0], -0.4 + b[1]}, y.toDoubleArray(), 1e-2);
  }

  @Test
  void pruningTwiceOnlyConsidersTheUnprunedEntries() {
    Linear lin = new Linear(8, 1, false, new Generator(1));
    set(lin.weight(), new double[] {0.8, -0.7, 0.6, 0.5, -0.4, 0.3, 0.2, 0.1});
    Prune.l1Unstructured(lin, "weight", 0.5);  // prunes 0.4 0.3 0.2 0.1
    assertArrayEquals(new double[] {1, 1, 1, 1, 0, 0, 0, 0}, mask(lin, "weight"));
    // half of the 4 left, not half of 8: the zeroed entries are not candidates again
    Prune.l1Unstructured(lin, "weight", 0.5);
    assertArrayEquals(new double[] {1, 1, 0, 0, 0, 0, 0, 0}, mask(lin, "weight"));
    assertEquals(0.75, Prune.sparsity(lin, "weight"), 1e-12);
    // combining a custom mask multiplies
    double[] custom = {0, 1, 1, 1, 1, 1, 1, 1};
    Prune.customFromMask(lin, "weight", Tensor.of(custom, 1, 8));
    assertArrayEquals(new double[] {0, 1, 0, 0, 0, 0, 0, 0}, mask(lin, "weight"));
    // a count above the 1 entry left
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Prune.l1Unstructured(lin, "weight", 2));
    assertEquals("l1Unstructured: amount=2 is more than the 1 unpruned entries of Linear.weight", e.getMessage());
  }

  @Test
  void removeMakesThePruningPermanent() {
    Linear lin = linear();
    Tensor weight = lin.weight();
    Prune.l1Unstructured(lin, "weight", 0.5);
    Prune.remove(lin, "weight");
    assertSame(weight, lin.weight());
    assertFalse(Prune.isPruned(lin, "weight"));
    assertFalse(lin.hasBuffer("weight_mask"));
    assertEquals(List.of("bias", "weight"), List.copyOf(lin.stateDict().keySet()));
    assertArrayEquals(new double[] {0.5, 0, 0.3, -0.4, 0, 0}, lin.weight().toDoubleArray(), 1e-7);
    assertTrue(lin.weight().requiresGrad());
    // it can be pruned again from scratch
    Prune.l1Unstructured(lin, "weight", 1);
    assertArrayEquals(new double[] {1, 0, 1, 1, 1, 1}, mask(lin, "weight"));
  }

  @Test
  void masksRoundTripThroughTheStateDictAndSafetensors(@TempDir Path dir) throws Exception {
    Sequential a = new Sequential(new Linear(4, 3, true, new Generator(5)), new ReLU(), new Linear(3, 2, true, new Generator(6)));
    Prune.l1Unstructured(a.child("0"), "weight", 0.5);
    Prune.lnStructured(a.child("2"), "weight", 1, 2, 0);
    Path file = dir.resolve("pruned.safetensors");
    SafeTensors.save(a.stateDict(), file);
    assertTrue(Files.size(file) > 0);

    // a model pruned the same way (any mask) loads the masks and the original weights
    Sequential b = new Sequential(new Linear(4, 3, true, new Generator(7)), new ReLU(), new Linear(3, 2, true, new Generator(8)));
    Prune.customFromMask(b.child("0"), "weight", Tensor.ones(3, 4));
    Prune.customFromMask(b.child("2"), "weight", Tensor.ones(2, 3));
    b.loadStateDict(SafeTensors.load(file));
    assertArrayEquals(mask(a.child("0"), "weight"), mask(b.child("0"), "weight"));
    assertArrayEquals(mask(a.child("2"), "weight"), mask(b.child("2"), "weight"));
    Tensor x = Tensor.randn(new Generator(9), DType.F32, 5, 4);
    assertClose(a.forward(x), b.forward(x), 0, 0, "pruned model after loading");
    // an unpruned model does not take a pruned state dict (as torch: the keys differ)
    Sequential dense = new Sequential(new Linear(4, 3), new ReLU(), new Linear(3, 2));
    assertThrows(dev.ember.nn.StateDictException.class, () -> dense.loadStateDict(a.stateDict()));
  }

  @Test
  void lnStructuredPrunesWholeRowsAndChannels() {
    Linear lin = new Linear(3, 4, false, new Generator(1));
    // row L2 norms: 1, 5, 0.5, 3 -> keep the 2 largest (rows 1 and 3)
    set(lin.weight(), new double[] {1, 0, 0, 3, 4, 0, 0, 0.3, 0.4, 0, 3, 0});
    Prune.lnStructured(lin, "weight", 0.5, 2, 0);
    assertArrayEquals(new double[] {0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1}, mask(lin, "weight"));
    // again: only the 2 rows left are candidates; the L2 norm of row 1 (5) beats row 3 (3)
    Prune.lnStructured(lin, "weight", 1, 2, 0);
    assertArrayEquals(new double[] {0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0}, mask(lin, "weight"));

    // columns (dim 1 = -1) by L1 norm: column sums of |w| are 4.3, 7.4, 0 -> prune column 2
    Linear cols = new Linear(3, 4, false, new Generator(1));
    set(cols.weight(), new double[] {1, 0, 0, 3, 4, 0, 0, 0.3, 0, 0.3, 3.1, 0});
    Prune.lnStructured(cols, "weight", 1, 1, -1);
    assertArrayEquals(new double[] {1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0}, mask(cols, "weight"));

    // Conv2d output channels by the max norm: channel 1 holds the largest |w|
    Conv2d conv = new Conv2d(1, 2, 2);
    set(conv.weight(), new double[] {1, 1, 1, 1, 0.5, 0.5, 0.5, -2});
    Prune.lnStructured(conv, "weight", 0.5, Double.POSITIVE_INFINITY, 0);
    assertArrayEquals(new double[] {0, 0, 0, 0, 1, 1, 1, 1}, mask(conv, "weight"));
    assertEquals(0.5, Prune.sparsity(conv, "weight"));
  }

  @Test
  void globalUnstructuredRanksAcrossParameters() {
    Linear a = new Linear(2, 2, false, new Generator(1));
    Linear b = new Linear(3, 1, false, new Generator(1));
    set(a.weight(), new double[] {0.9, -0.2, 0.05, 0.6});
    set(b.weight(), new double[] {0.1, -0.7, 0.3});
    // 7 entries, round(0.4 * 7) = 3 smallest overall: 0.05 (a), 0.1 (b), -0.2 (a)
    Prune.globalUnstructured(List.of(Prune.target(a, "weight"), Prune.target(b, "weight")), 0.4);
    assertArrayEquals(new double[] {1, 0, 0, 1}, mask(a, "weight"));
    assertArrayEquals(new double[] {0, 1, 1}, mask(b, "weight"));
    // again: 1 more of the 4 unpruned (0.3 in b)
    Prune.globalUnstructured(List.of(Prune.target(a, "weight"), Prune.target(b, "weight")), 1);
    assertArrayEquals(new double[] {1, 0, 0, 1}, mask(a, "weight"));
    assertArrayEquals(new double[] {0, 1, 0}, mask(b, "weight"));
  }

  @Test
  void randomUnstructuredPrunesTheAmountReproducibly() {
    Linear a = Prune.randomUnstructured(new Linear(10, 10, true, new Generator(1)), "weight", 0.3, new Generator(11));
    Linear b = Prune.randomUnstructured(new Linear(10, 10, true, new Generator(1)), "weight", 0.3, new Generator(11));
    assertEquals(0.3, Prune.sparsity(a, "weight"), 1e-12);
    assertArrayEquals(mask(a, "weight"), mask(b, "weight"));
    Prune.randomUnstructured(a, "weight", 7, new Generator(12));
    assertEquals(0.37, Prune.sparsity(a, "weight"), 1e-12);
    // the bias is a parameter too
    Prune.randomUnstructured(a, "bias", 0.5, new Generator(13));
    assertEquals(0.5, Prune.sparsity(a, "bias"), 1e-12);
  }

  @Test
  void badInputNamesTheModuleAndTheValues() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Prune.l1Unstructured(linear(), "weight", 1.5));
    assertEquals("l1Unstructured: amount must be a fraction in [0, 1] or a count >= 0, got 1.5", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Prune.l1Unstructured(linear(), "weight", -1));
    assertEquals("l1Unstructured: amount must be a fraction in [0, 1] or a count >= 0, got -1", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Prune.l1Unstructured(linear(), "weight", 7));
    assertEquals("l1Unstructured: amount=7 is more than the 6 unpruned entries of Linear.weight", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Prune.l1Unstructured(linear(), "wieght", 0.5));
    assertEquals("l1Unstructured: Linear has no parameter 'wieght'; has [weight, bias]", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Prune.lnStructured(linear(), "bias", 0.5, 2, 0));
    assertEquals("lnStructured: structured pruning needs a tensor of 2 or more dims, got 1: Linear.bias=[2]",
        e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Prune.lnStructured(linear(), "weight", 0.5, 2, 2));
    assertEquals("lnStructured: dim 2 out of range for rank 2 (valid: -2..1): Linear.weight=[2, 3]", e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> Prune.customFromMask(linear(), "weight", Tensor.ones(3, 2)));
    assertEquals("customFromMask: mask shape differs from the parameter's ([3, 2] vs [2, 3]): Linear.weight=[2, 3], "
        + "mask=[3, 2]", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Prune.remove(linear(), "weight"));
    assertEquals("Prune.remove: parameter 'weight' of Linear is not pruned; prune it before removing the pruning",
        e.getMessage());
    // a failed pruning leaves the module as it was
    Linear lin = linear();
    assertThrows(IllegalArgumentException.class, () -> Prune.l1Unstructured(lin, "weight", 9));
    assertFalse(Prune.isPruned(lin));
    assertEquals(List.of("weight", "bias"), List.copyOf(lin.stateDict().keySet()));
  }
}
