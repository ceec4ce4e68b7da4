package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import dev.ember.testing.Assertions;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Error messages (exact), edge cases PyTorch defines (all targets ignored, empty batches, saturated
 * logits). Gradchecks on degenerate shapes are in NnOpTable; values against PyTorch in LossesFixtureTest.
 */
class LossesTest {
  private static final Generator GEN = new Generator(7);

  private static Tensor labels(long... v) {
    return Tensor.of(v);
  }

  private static Tensor randn(int... shape) {
    return Tensor.randn(GEN, DType.F64, shape);
  }

  private static void assertError(String expected, String op, Supplier<Tensor> call) {
    TensorArgumentException e = assertThrows(TensorArgumentException.class, call::get);
    assertEquals(expected, e.getMessage());
    assertEquals(op, e.op());
  }

  // ------------------------------------------------------------------ error messages

  @Test
  void classIndexOutOfRangeNamesValuePositionAndClassCount() {
    assertError("cross_entropy: class index out of range (target[3] = 7, 5 classes; valid: 0..4 or ignoreIndex -100):"
        + " input=[4, 5], target=[4]", "cross_entropy",
        () -> Losses.crossEntropy(Tensor.zeros(4, 5), labels(1, 0, 4, 7)));
    Tensor t = Tensor.zeros(DType.I64, 2, 4);
    t.storage().setLong(6, -1);
    assertError("cross_entropy: class index out of range (target[1, 2] = -1, 3 classes; valid: 0..2 or ignoreIndex"
        + " -100): input=[2, 3, 4], target=[2, 4]", "cross_entropy",
        () -> Losses.crossEntropy(Tensor.zeros(2, 3, 4), t));
    assertError("nll_loss: class index out of range (target[0] = -100, 3 classes; valid: 0..2 or ignoreIndex 1):"
        + " input=[2, 3], target=[2]", "nll_loss",
        () -> Losses.nllLoss(Tensor.zeros(2, 3), labels(-100, 1), null, 1, Reduction.MEAN));
    assertError("dice_loss: class index out of range (target[1] = 3, 3 classes; valid: 0..2): input=[2, 3],"
        + " target=[2]", "dice_loss", () -> Losses.diceLoss(Tensor.zeros(2, 3), labels(0, 3)));
    assertError("cross_entropy: class index out of range (target = 5, 5 classes; valid: 0..4 or ignoreIndex -100):"
        + " input=[5], target=[]", "cross_entropy",
        () -> Losses.crossEntropy(Tensor.zeros(5), labels(5).reshape()));
  }

  @Test
  void wrongTargetDtypeIsNamed() {
    assertError("nll_loss: class-index target must be int64, got float32: input=[4, 5], target=[4];"
        + " hint: convert with target.to(DType.I64)", "nll_loss",
        () -> Losses.nllLoss(Tensor.zeros(4, 5), Tensor.zeros(4)));
    assertError("cross_entropy: class-index target must be int64, got float32: input=[4, 5], target=[4];"
        + " hint: class probabilities must have the input's shape; indices convert with target.to(DType.I64)",
        "cross_entropy", () -> Losses.crossEntropy(Tensor.zeros(4, 5), Tensor.zeros(4)));
    assertError("cross_entropy: class-index target must be int64, got bool: input=[4, 5], target=[4];"
        + " hint: convert with target.to(DType.I64)", "cross_entropy",
        () -> Losses.crossEntropy(Tensor.zeros(4, 5), Tensor.zeros(DType.BOOL, 4)));
    assertError("cross_entropy: a target with the input's shape holds class probabilities and must be"
        + " floating-point, got int64: input=[4, 5], target=[4, 5]; hint: class indices have the input's shape"
        + " without the class dim 1", "cross_entropy",
        () -> Losses.crossEntropy(Tensor.zeros(4, 5), Tensor.zeros(DType.I64, 4, 5)));
    assertError("mse_loss: target must be floating-point, got int64: input=[3], target=[3]", "mse_loss",
        () -> Losses.mseLoss(Tensor.zeros(3), Tensor.zeros(DType.I64, 3)));
  }

  @Test
  void mismatchedShapesNameBothShapes() {
    assertError("mse_loss: input and target shapes differ ([4, 3] vs [4]): input=[4, 3], target=[4];"
        + " hint: expand one explicitly if broadcasting is meant", "mse_loss",
        () -> Losses.mseLoss(Tensor.zeros(4, 3), Tensor.zeros(4)));
    assertError("cross_entropy: target shape must be the input's shape without the class dim (expected [4], got"
        + " [4, 1]): input=[4, 5], target=[4, 1]", "cross_entropy",
        () -> Losses.crossEntropy(Tensor.zeros(4, 5), Tensor.zeros(DType.I64, 4, 1)));
    assertError("cross_entropy: target shape must be the input's shape without the class dim (expected [], got"
        + " [1]): input=[5], target=[1]", "cross_entropy",
        () -> Losses.crossEntropy(Tensor.zeros(5), labels(2)));
    assertError("cross_entropy: weight must be 1-d with one value per class (5 classes): input=[4, 5],"
        + " weight=[4]", "cross_entropy", () -> Losses.crossEntropy(Tensor.zeros(4, 5), labels(0, 1, 2, 3),
            Tensor.ones(4), Losses.IGNORE_INDEX, Reduction.MEAN, 0));
    assertError("binary_cross_entropy: weight does not broadcast to the input's shape: input=[4, 3], weight=[4]",
        "binary_cross_entropy",
        () -> Losses.bceLoss(Tensor.full(0.5, 4, 3), Tensor.zeros(4, 3), Tensor.ones(4), Reduction.MEAN));
    assertError("triplet_margin_loss: anchor, positive and negative shapes differ: anchor=[5, 4], positive=[5, 4],"
        + " negative=[5, 3]", "triplet_margin_loss",
        () -> Losses.tripletMarginLoss(Tensor.zeros(5, 4), Tensor.zeros(5, 4), Tensor.zeros(5, 3)));
    assertError("cosine_embedding_loss: target shape must be the inputs' shape without the last dim (expected [5],"
        + " got [5, 1]): input1=[5, 4], target=[5, 1]", "cosine_embedding_loss",
        () -> Losses.cosineEmbeddingLoss(Tensor.zeros(5, 4), Tensor.zeros(5, 4), Tensor.ones(5, 1)));
  }

  @Test
  void badArgumentsAreNamed() {
    assertError("mse_loss: reduction BATCHMEAN is only defined for kl_div; hint: use MEAN, SUM or NONE", "mse_loss",
        () -> Losses.mseLoss(Tensor.zeros(3), Tensor.zeros(3), Reduction.BATCHMEAN));
    assertError("binary_cross_entropy: input values must be in [0, 1] (input[1] = 1.5): input=[3], target=[3];"
        + " hint: apply sigmoid first, or use bceWithLogits on logits", "binary_cross_entropy",
        () -> Losses.bceLoss(Tensor.of(new float[] {0.5f, 1.5f, 0.2f}), Tensor.zeros(3)));
    assertError("binary_cross_entropy: input values must be in [0, 1] (input[0, 1] = NaN): input=[1, 2],"
        + " target=[1, 2]; hint: apply sigmoid first, or use bceWithLogits on logits", "binary_cross_entropy",
        () -> Losses.bceLoss(Tensor.of(new double[] {0.5, Double.NaN}, 1, 2), Tensor.zeros(DType.F64, 1, 2)));
    assertError("cross_entropy: labelSmoothing must be in [0, 1], got 1.5", "cross_entropy",
        () -> Losses.crossEntropy(Tensor.zeros(2, 3), labels(0, 1), null, -100, Reduction.MEAN, 1.5));
    assertError("smooth_l1_loss: beta must be non-negative, got -1.0", "smooth_l1_loss",
        () -> Losses.smoothL1Loss(Tensor.zeros(3), Tensor.zeros(3), Reduction.MEAN, -1));
    assertError("cross_entropy: ignoreIndex is not supported for class-probability targets (ignoreIndex 0):"
        + " input=[2, 3], target=[2, 3]; hint: pass IGNORE_INDEX (-100)", "cross_entropy",
        () -> Losses.crossEntropy(Tensor.zeros(2, 3), Tensor.zeros(2, 3), null, 0, Reduction.MEAN, 0));
  }

  // ------------------------------------------------------------------ edge cases PyTorch defines

  @Test
  void allTargetsIgnoredGiveNaNMeanZeroSumAndZeroGradient() {
    Tensor x = randn(3, 4).requiresGrad(true);
    Tensor t = labels(-100, -100, -100);
    assertTrue(Double.isNaN(Losses.crossEntropy(x, t).item()));
    assertTrue(Double.isNaN(Losses.crossEntropy(x, t, Tensor.ones(DType.F64, 4), -100, Reduction.MEAN, 0.1).item()));
    assertTrue(Double.isNaN(Losses.nllLoss(x, t).item()));
    assertTrue(Double.isNaN(Losses.focalLoss(x, t).item()));
    assertTrue(Double.isNaN(Losses.polyLoss(x, t).item()));
    Tensor sum = Losses.crossEntropy(x, t, null, -100, Reduction.SUM, 0.2);
    assertEquals(0.0, sum.item());
    sum.backward();
    Assertions.assertClose(Tensor.zeros(DType.F64, 3, 4), x.grad(), 0, 0, "grad");
    Assertions.assertClose(Tensor.zeros(DType.F64, 3), Losses.crossEntropy(x, t, Reduction.NONE), 0, 0, "none");
  }

  /**
   * All targets ignored with MEAN: 0 / 0 is NaN, but PyTorch writes no gradient for ignored elements, so the
   * gradient is 0 (not NaN into the input and on into the weights of an all-padding micro-batch), on each composed
   * path: weighted, label smoothing, nll_loss, k-dim. PyTorch 1.13, x = (torch.arange(6.) * 0.1).view(2, 3),
   * w = torch.tensor([0.5, 1.0, 1.5]), t = torch.tensor([1, 1]): {@code F.cross_entropy(x, t, w, ignore_index=1)}
   * -> nan, x.grad zeros; the same with label_smoothing=0.3, with F.nll_loss(x, t, ignore_index=1) with and without
   * w, with an input [2, 3, 2] and t [[1, 1], [1, 1]], and with an upstream gradient of inf.
   */
  @Test
  void allTargetsIgnoredMeanIsNaNWithZeroGradient() {
    Tensor w = Tensor.of(new double[] {0.5, 1.0, 1.5}, 3);
    Tensor t = labels(1, 1);
    Tensor t2 = Tensor.of(new long[] {1, 1, 1, 1}, 2, 2);
    List<java.util.function.Function<Tensor, Tensor>> variants = List.of(
        x -> F.crossEntropy(x, t, w, 1, Reduction.MEAN, 0.0),
        x -> F.crossEntropy(x, t, null, 1, Reduction.MEAN, 0.3),
        x -> F.crossEntropy(x, t, w, 1, Reduction.MEAN, 0.3),
        x -> F.nllLoss(x, t, null, 1, Reduction.MEAN),
        x -> F.nllLoss(x, t, w, 1, Reduction.MEAN),
        x -> F.crossEntropy(x, t, null, 1, Reduction.MEAN, 0.0), // the fused path, for comparison
        x -> F.crossEntropy(x.reshape(2, 3, 1).expand(2, 3, 2), t2, null, 1, Reduction.MEAN, 0.0), // k-dim
        x -> F.focalLoss(x, t, w, 2.0, 1, Reduction.MEAN),
        x -> F.polyLoss(x, t, 1.0, 0.1, 1, Reduction.MEAN));
    for (int i = 0; i < variants.size(); i++) {
      for (double upstream : new double[] {1, Double.POSITIVE_INFINITY}) {
        if (i == 5 && upstream != 1) continue; // the fused path scales g by the mask, as for partly ignored targets
        Tensor x = Tensor.arange(6).to(DType.F64).mul(0.1).reshape(2, 3).requiresGrad(true);
        Tensor loss = variants.get(i).apply(x);
        assertTrue(Double.isNaN(loss.item()), "loss " + i);
        loss.backward(Tensor.scalar(upstream, DType.F64));
        assertArrayEquals(new double[6], x.grad().toDoubleArray(), "grad " + i + ", upstream " + upstream);
      }
    }
    // a weight that requires grad (PyTorch's does not: no reference) gets 0 from it too
    Tensor x = Tensor.arange(6).to(DType.F64).mul(0.1).reshape(2, 3).requiresGrad(true);
    Tensor wg = w.detach().requiresGrad(true);
    F.crossEntropy(x, t, wg, 1, Reduction.MEAN, 0.3).backward();
    assertArrayEquals(new double[3], wg.grad().toDoubleArray(), "weight grad");
  }

  @Test
  void ignoredTargetsGetExactlyZeroGradient() {
    Tensor x = randn(4, 3).requiresGrad(true);
    Losses.crossEntropy(x, labels(2, -100, 0, -100), Tensor.ones(DType.F64, 3), -100, Reduction.MEAN, 0.3).backward();
    double[] g = x.grad().toDoubleArray();
    for (int c = 0; c < 3; c++) {
      assertEquals(0.0, g[3 + c]);
      assertEquals(0.0, g[9 + c]);
      assertTrue(g[c] != 0 && g[6 + c] != 0);
    }
  }

  @Test
  void emptyBatchGivesNaNMeanZeroSumAndEmptyGradient() {
    Tensor x = Tensor.zeros(DType.F64, 0, 4).requiresGrad(true);
    Tensor t = Tensor.zeros(DType.I64, 0);
    assertTrue(Double.isNaN(Losses.crossEntropy(x, t).item()));
    assertTrue(Double.isNaN(Losses.mseLoss(x, Tensor.zeros(DType.F64, 0, 4)).item()));
    assertTrue(Double.isNaN(Losses.klDiv(x, Tensor.zeros(DType.F64, 0, 4), Reduction.BATCHMEAN).item()));
    assertArrayEquals(new int[] {0}, Losses.crossEntropy(x, t, Reduction.NONE).shape());
    Tensor sum = Losses.crossEntropy(x, t, null, -100, Reduction.SUM, 0.1);
    assertEquals(0.0, sum.item());
    sum.backward();
    assertArrayEquals(new int[] {0, 4}, x.grad().shape());
    Tensor bce = Losses.bceWithLogits(x, Tensor.zeros(DType.F64, 0, 4), Reduction.SUM);
    assertEquals(0.0, bce.item());
  }

  @Test
  void saturatedLogitsStayFiniteInFloat32() {
    Tensor x = Tensor.of(new float[] {1e4f, 0f, -1e4f, -3e4f, 2e4f, 5f}, 2, 3).requiresGrad(true);
    Tensor loss = Losses.crossEntropy(x, labels(2, 0), Reduction.SUM);
    assertEquals(7e4, loss.item(), 0.05); // -log_softmax at the targets: (1e4 + 1e4) + (2e4 + 3e4)
    loss.backward();
    for (float v : x.grad().toFloatArray()) assertTrue(Float.isFinite(v), "gradient " + v);
    Tensor z = Tensor.of(new float[] {-1000f, 1000f, -90f, 90f}).requiresGrad(true);
    Tensor bce = Losses.bceWithLogits(z, Tensor.of(new float[] {1, 0, 0, 1}), Reduction.NONE);
    Assertions.assertClose(Tensor.of(new double[] {1000, 1000, 0, 0}), bce, 1e-6, 1e-6, "bce_with_logits");
    bce.sum().backward();
    Assertions.assertClose(Tensor.of(new double[] {-1, 1, 0, 0}), z.grad(), 1e-6, 0, "d bce_with_logits");
  }

  @Test
  void klDivBatchMeanDividesBySizeOfDimZero() {
    Tensor x = randn(4, 3);
    Tensor t = randn(4, 3).exp();
    assertEquals(Losses.klDiv(x, t, Reduction.SUM).item() / 4, Losses.klDiv(x, t, Reduction.BATCHMEAN).item(), 1e-12);
    Tensor x0 = randn();
    Tensor t0 = Tensor.scalar(0.3, DType.F64);
    assertEquals(Losses.klDiv(x0, t0, Reduction.SUM).item(), Losses.klDiv(x0, t0, Reduction.BATCHMEAN).item());
  }

  @Test
  void reductionNamesMatchPyTorch() {
    assertEquals(List.of("none", "mean", "sum", "batchmean"),
        java.util.Arrays.stream(Reduction.values()).map(Reduction::torchName).toList());
  }

  // ------------------------------------------------------------------ the fused [N, C] path

  /**
   * The fused cross entropy (class indices, no weight or smoothing) reads and writes CPU storage
   * directly; its loss and gradient must keep the bits of the op-by-op composite it replaced, below
   * and above the size where the backward's row scaling moves from a plain loop to a fused exp-and-scale pass
   * (70 x 1001: over the pool, in 32K-element pieces that cut across rows).
   */
  @Test
  void fusedCrossEntropyKeepsTheCompositesBits() {
    for (DType dt : List.of(DType.F32, DType.F64)) {
      for (int[] nc : new int[][] {{32, 10}, {128, 10}, {3, 1}, {64, 100}, {9, 700}, {70, 1001}}) {
        for (boolean ignore : new boolean[] {false, true}) {
          for (Reduction r : List.of(Reduction.MEAN, Reduction.SUM, Reduction.NONE)) {
            checkFusedBits(dt, nc[0], nc[1], ignore, r);
          }
        }
      }
    }
  }

  private static void checkFusedBits(DType dt, int n, int c, boolean ignore, Reduction r) {
    String what = dt + " [" + n + "x" + c + "] ignore=" + ignore + " " + r;
    Tensor x = Tensor.randn(GEN, DType.F32, n, c).mul(3).to(dt);
    long[] t = new long[n];
    double[] m = new double[n];
    long counted = 0;
    for (int i = 0; i < n; i++) {
      t[i] = ignore && i % 3 == 1 ? -100 : (i * 7L) % c;
      m[i] = t[i] == -100 ? 0 : 1;
      counted += (long) m[i];
    }
    Tensor upstream = r == Reduction.NONE ? Tensor.randn(GEN, DType.F32, n).to(dt) : Tensor.full(0.75, dt);
    Tensor leaf = x.detach().requiresGrad(true);
    Tensor loss = Losses.crossEntropy(leaf, Tensor.of(t), r);
    loss.backward(upstream);

    // the composite, op by op
    long[] safe = t.clone();
    for (int i = 0; i < n; i++) if (safe[i] == -100) safe[i] = 0;
    Tensor index = Tensor.of(safe).reshape(n, 1);
    Tensor mask = ignore ? Tensor.of(m).to(dt) : null;
    Tensor logp = x.logSoftmax(1);
    Tensor per = logp.gather(1, index).reshape(n).neg();
    if (mask != null) per = per.mul(mask);
    Tensor expected = switch (r) {
      case NONE -> per;
      case SUM -> per.sum();
      default -> per.sum().div((double) counted);
    };
    Tensor coef = mask == null ? upstream : mask.mul(upstream);
    if (r == Reduction.MEAN) coef = coef.mul(counted == 0 ? 0 : 1.0 / counted);
    Tensor column = coef.dim() == 0 ? coef.reshape(1, 1).expand(n, 1) : coef.reshape(n, 1);
    Tensor grad = dev.ember.ops.IndexOps.scatterAdd(logp.exp().mul(column), 1, index, column.neg());

    Assertions.assertClose(expected, loss, 0, 0, "loss " + what);
    Assertions.assertClose(grad, leaf.grad(), 0, 0, "grad " + what);
  }
}
