package dev.ember.nn.functional;

import static dev.ember.ops.OpInfo.op;

import dev.ember.ops.OpInfo;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Arr;
import dev.ember.testing.Ref;
import java.util.List;
import java.util.function.DoubleBinaryOperator;
import java.util.function.IntToDoubleFunction;

/**
 * nn op-table entries for the losses. Class-index targets and +-1 labels are fixed functions of the input's
 * shape (not sampled inputs), so they are the same on every call. Losses without an oracle here (class weights,
 * smoothing, focal, poly, dice) are checked against PyTorch in LossesFixtureTest.
 */
final class LossEntries {
  private LossEntries() {}

  /** Class indices for an input [N, C, *] or [C]: target[i] = (3 i + 1) mod C, shaped as the input less dim 1. */
  static long[] classIndices(int[] inputShape) {
    int c = inputShape.length == 1 ? inputShape[0] : inputShape[1];
    long n = 1;
    for (int d = 0; d < inputShape.length; d++) if (d != (inputShape.length == 1 ? 0 : 1)) n *= inputShape[d];
    long[] t = new long[(int) n];
    for (int i = 0; i < t.length; i++) t[i] = (3L * i + 1) % c;
    return t;
  }

  static int[] targetShape(int[] inputShape) {
    if (inputShape.length == 1) return new int[0];
    int[] s = new int[inputShape.length - 1];
    s[0] = inputShape[0];
    System.arraycopy(inputShape, 2, s, 1, inputShape.length - 2);
    return s;
  }

  static Tensor targets(Tensor input) {
    return Tensor.of(classIndices(input.shape())).reshape(targetShape(input.shape())); // of(long[]) alone is 1-d
  }

  /** +-1 labels of the given shape, in the input's dtype. */
  static Tensor signs(Tensor like, int... shape) {
    long n = 1;
    for (int d : shape) n *= d;
    double[] v = new double[(int) n];
    for (int i = 0; i < v.length; i++) v[i] = sign(i);
    return Tensor.of(v, shape).to(like.dtype()).to(like.device()); // where the op's inputs are
  }

  private static Arr meanOf(Arr a, Arr b, DoubleBinaryOperator f) {
    return Ref.mean(Ref.zip(a, b, f), null, false);
  }

  /** -(mean over targets) of {@code pick(input row, class)}, for [N, C, *] / [C] inputs and no weights. */
  private static Arr nll(Arr x, boolean logSoftmax) {
    int[] s = x.shape();
    int classDim = s.length == 1 ? 0 : 1;
    int c = s[classDim];
    int inner = 1;
    for (int d = classDim + 1; d < s.length; d++) inner *= s[d];
    long[] t = classIndices(s);
    double sum = 0;
    for (int i = 0; i < t.length; i++) {
      int n = i / inner;
      int j = i % inner;
      double max = Double.NEGATIVE_INFINITY;
      for (int k = 0; k < c; k++) max = Math.max(max, x.data()[(n * c + k) * inner + j]);
      double z = 0;
      for (int k = 0; k < c; k++) z += Math.exp(x.data()[(n * c + k) * inner + j] - max);
      double picked = x.data()[(n * c + (int) t[i]) * inner + j];
      sum -= logSoftmax ? picked - max - Math.log(z) : picked;
    }
    return new Arr(new double[] {sum / t.length}, new int[0]);
  }

  private static double sign(int i) {
    return i % 3 == 1 ? -1 : 1;
  }

  /** Per-row loss of [N, D] or [D] inputs, averaged ({@code mean}) or not. */
  private static Arr rows(Arr a, boolean mean, IntToDoubleFunction row) {
    int n = a.rank() == 1 ? 1 : a.shape()[0];
    double[] o = new double[n];
    for (int i = 0; i < n; i++) o[i] = row.applyAsDouble(i);
    Arr out = new Arr(o, a.rank() == 1 ? new int[0] : new int[] {n});
    return mean ? Ref.mean(out, null, false) : out;
  }

  /** (sum_j |a_ij - b_ij + eps|^p)^(1/p), PyTorch's pairwise_distance. */
  private static double distance(Arr a, Arr b, int i, double p) {
    int d = a.shape()[a.rank() - 1];
    double s = 0;
    for (int j = 0; j < d; j++) s += Math.pow(Math.abs(a.data()[i * d + j] - b.data()[i * d + j] + 1e-6), p);
    return Math.pow(s, 1 / p);
  }

  private static double cosine(Arr a, Arr b, int i) {
    int d = a.shape()[a.rank() - 1];
    double dot = 0, na = 0, nb = 0;
    for (int j = 0; j < d; j++) {
      dot += a.data()[i * d + j] * b.data()[i * d + j];
      na += a.data()[i * d + j] * a.data()[i * d + j];
      nb += b.data()[i * d + j] * b.data()[i * d + j];
    }
    return dot / Math.sqrt((na + 1e-12) * (nb + 1e-12));
  }

  /** Elementwise loss with the +-1 label of each flat position ({@link #signs}), averaged. */
  private static Arr meanWithSigns(Arr a, Arr b, DoubleBinaryOperator f) {
    double s = 0;
    for (int i = 0; i < a.numel(); i++) {
      double y = sign(i);
      s += f.applyAsDouble(y, a.data()[i] - (b == null ? 0 : b.data()[i]));
    }
    return new Arr(new double[] {s / a.numel()}, new int[0]);
  }

  static void add(List<OpInfo> t) {
    String[] pointwise = {"[3, 4] x [3, 4]", "[5] x [5]", "[] x []"};
    t.add(op("mse_loss").binary(Losses::mseLoss).ref(l -> meanOf(l.get(0), l.get(1), (x, y) -> (x - y) * (x - y)))
        .shapes(pointwise)
        .error(l -> Losses.mseLoss(l.get(0), l.get(1)), "[4, 3] x [4]", "mse_loss: input and target shapes differ "
            + "([4, 3] vs [4]): input=[4, 3], target=[4]; hint: expand one explicitly if broadcasting is meant")
        .error(l -> Losses.mseLoss(l.get(0), l.get(1).to(DType.I64)), "[3] x [3]",
            "mse_loss: target must be floating-point, got int64: input=[3], target=[3]"));
    t.add(op("mse_loss:none").binary((x, y) -> Losses.mseLoss(x, y, Reduction.NONE))
        .ref(l -> Ref.zip(l.get(0), l.get(1), (x, y) -> (x - y) * (x - y))).shapes("[3, 4] x [3, 4]"));
    t.add(op("l1_loss").binary(Losses::l1Loss).ref(l -> meanOf(l.get(0), l.get(1), (x, y) -> Math.abs(x - y)))
        .shapes(pointwise));
    t.add(op("l1_loss:sum").binary((x, y) -> Losses.l1Loss(x, y, Reduction.SUM))
        .ref(l -> Ref.sum(Ref.zip(l.get(0), l.get(1), (x, y) -> Math.abs(x - y)), null, false))
        .shapes("[3, 4] x [3, 4]"));
    t.add(op("smooth_l1_loss").binary((x, y) -> Losses.smoothL1Loss(x, y, Reduction.MEAN, 0.5))
        .ref(l -> meanOf(l.get(0), l.get(1), (x, y) -> {
          double d = Math.abs(x - y);
          return d < 0.5 ? 0.5 * d * d / 0.5 : d - 0.25;
        })).shapes(pointwise));
    t.add(op("huber_loss").binary((x, y) -> Losses.huberLoss(x, y, Reduction.MEAN, 0.7))
        .ref(l -> meanOf(l.get(0), l.get(1), (x, y) -> {
          double d = Math.abs(x - y);
          return d < 0.7 ? 0.5 * d * d : 0.7 * (d - 0.35);
        })).shapes(pointwise));
    t.add(op("binary_cross_entropy").binary(Losses::bceLoss)
        .ref(l -> meanOf(l.get(0), l.get(1), (x, y) -> -(y * Math.log(x) + (1 - y) * Math.log(1 - x))))
        .shapes("[] x []", "[3, 4] x [3, 4]").domain(0.05, 0.95));
    t.add(op("binary_cross_entropy_with_logits").binary(Losses::bceWithLogits)
        .ref(l -> meanOf(l.get(0), l.get(1), (x, y) -> Math.max(x, 0) - x * y + Math.log1p(Math.exp(-Math.abs(x)))))
        .shapes("[3, 4] x [3, 4]", "[] x []").domain(0, -6, 6).domain(1, 0, 1));
    t.add(op("kl_div").binary(Losses::klDiv).ref(l -> meanOf(l.get(0), l.get(1), (x, y) -> y * (Math.log(y) - x)))
        .shapes("[2, 3] x [2, 3]").domain(1, 0.05, 1));
    t.add(op("kl_div:log_target_batchmean").binary((x, y) -> Losses.klDiv(x, y, Reduction.BATCHMEAN, true))
        .ref(l -> {
          Arr s = Ref.sum(Ref.zip(l.get(0), l.get(1), (x, y) -> Math.exp(y) * (y - x)), null, false);
          return Ref.map(s, v -> v / l.get(0).shape()[0]);
        }).shapes("[2, 3] x [2, 3]"));

    // ---------------------------------------------------------------- class-index losses
    t.add(op("cross_entropy").unary(x -> Losses.crossEntropy(x, targets(x))).ref(l -> nll(l.get(0), true))
        .shapes("[4, 5]", "[5]", "[2, 3, 4]")
        .error(l -> Losses.crossEntropy(l.get(0), Tensor.of(new long[] {1, 0, 4, 7}, 4)), "[4, 5]",
            "cross_entropy: class index out of range (target[3] = 7, 5 classes; valid: 0..4 or ignoreIndex -100):"
                + " input=[4, 5], target=[4]")
        .error(l -> Losses.crossEntropy(l.get(0), Tensor.zeros(DType.I64, 4, 1)), "[4, 5]",
            "cross_entropy: target shape must be the input's shape without the class dim (expected [4], got"
                + " [4, 1]): input=[4, 5], target=[4, 1]"));
    // class weights (kept positive) and label smoothing on degenerate shapes
    String[] edges = {"[1, 1] x [1]", "[1, 3] x [3]", "[3, 1, 2] x [1]", "[2, 3, 1, 1] x [3]"};
    t.add(op("cross_entropy:weight_smoothing").binary((x, w) -> Losses.crossEntropy(x, targets(x), w, -100,
        Reduction.MEAN, 0.2)).shapes(edges).domain(1, 0.5, 1.5));
    t.add(op("nll_loss").unary(x -> Losses.nllLoss(x, targets(x))).ref(l -> nll(l.get(0), false))
        .shapes("[4, 5]", "[2, 3, 4]")
        .error(l -> Losses.nllLoss(l.get(0), l.get(1)), "[4, 5] x [4]", "nll_loss: class-index target must be int64,"
            + " got float32: input=[4, 5], target=[4]; hint: convert with target.to(DType.I64)"));
    t.add(op("focal_loss").binary((x, w) -> Losses.focalLoss(x, targets(x), w, 2.0, -100, Reduction.SUM))
        .shapes(edges).domain(1, 0.5, 1.5));
    t.add(op("poly_loss").unary(x -> Losses.polyLoss(x, targets(x), 1.0, 0.1, -100, Reduction.NONE))
        .shapes("[1, 1]", "[1, 3]", "[3, 1, 2]", "[2, 3, 1, 1]"));
    t.add(op("dice_loss").unary(x -> Losses.diceLoss(x, targets(x), 1.0, Reduction.NONE))
        .shapes("[1, 1]", "[1, 3]", "[3, 1, 2]", "[2, 3, 1, 1]")
        .error(l -> Losses.diceLoss(l.get(0), Tensor.of(new long[] {0, 3}, 2)), "[2, 3]",
            "dice_loss: class index out of range (target[1] = 3, 3 classes; valid: 0..2): input=[2, 3], target=[2]"));

    // ---------------------------------------------------------------- binary, ranking and embedding losses
    t.add(op("sigmoid_focal_loss").binary((x, y) -> Losses.sigmoidFocalLoss(x, y, 0.25, 2, Reduction.SUM))
        .ref(l -> Ref.sum(Ref.zip(l.get(0), l.get(1), (x, y) -> {
          double ce = Math.max(x, 0) - x * y + Math.log1p(Math.exp(-Math.abs(x)));
          double p = NnRef.sigmoid(x);
          double pt = p * y + (1 - p) * (1 - y);
          return ce * (1 - pt) * (1 - pt) * (0.25 * y + 0.75 * (1 - y));
        }), null, false))
        .shapes("[2, 5] x [2, 5]").domain(0, -4, 4).domain(1, 0, 1));
    t.add(op("triplet_margin_loss").fn(l -> Losses.tripletMarginLoss(l.get(0), l.get(1), l.get(2), 3.0, 1.5, 1e-6,
        true, Reduction.NONE))
        .ref(l -> rows(l.get(0), false, i -> Math.max(distance(l.get(0), l.get(1), i, 1.5)
            - Math.min(distance(l.get(0), l.get(2), i, 1.5), distance(l.get(1), l.get(2), i, 1.5)) + 3, 0)))
        .shapes("[3, 4] x [3, 4] x [3, 4]"));
    t.add(op("cosine_embedding_loss").binary((x, y) -> Losses.cosineEmbeddingLoss(x, y, signs(x, x.size(0)), 0.2,
        Reduction.MEAN))
        .ref(l -> rows(l.get(0), true, i -> sign(i) == 1 ? 1 - cosine(l.get(0), l.get(1), i)
            : Math.max(0, cosine(l.get(0), l.get(1), i) - 0.2)))
        .shapes("[5, 4] x [5, 4]"));
    t.add(op("margin_ranking_loss").binary((x, y) -> Losses.marginRankingLoss(x, y, signs(x, x.shape()), 0.1,
        Reduction.MEAN)).ref(l -> meanWithSigns(l.get(0), l.get(1), (y, d) -> Math.max(0, -y * d + 0.1)))
        .shapes("[6] x [6]", "[2, 3] x [2, 3]"));
    t.add(op("hinge_embedding_loss").unary(x -> Losses.hingeEmbeddingLoss(x, signs(x, x.shape()), 1.0,
        Reduction.MEAN)).ref(l -> meanWithSigns(l.get(0), null, (y, x) -> y == 1 ? x : Math.max(0, 1 - x)))
        .shapes("[3, 4]", "[7]"));
  }
}
