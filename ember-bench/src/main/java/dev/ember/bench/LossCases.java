package dev.ember.bench;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The {@code losses} category: forward+backward of one loss call, {@code loss(x, target).backward()}
 * with the default (mean) reduction, in us per call, mirrored by bench/peers/pytorch_ops.py
 * {@code --suite losses}. Only the prediction needs a gradient (a standard-normal leaf whose grad is
 * dropped before each call); targets are fixed tensors made once.
 *
 * <ul>
 *   <li>cross_entropy, nll (on log-probabilities), kl_div (log-probabilities against probabilities,
 *       reduction batchmean, as PyTorch recommends): [128x10] and [128x1000] with class-index or
 *       probability targets;
 *   <li>bce (on probabilities), bce_with_logits: multi-label [128x10] and [128x1000], 0/1 targets;
 *   <li>mse, l1, smooth_l1, huber: regression [128x1] and [4096];
 *   <li>hinge_embedding [4096] and margin_ranking [4096] with +-1 targets; cosine_embedding and
 *       triplet_margin on [128x128] embeddings;
 *   <li>Ember only (torch 1.13 has no such loss): focal and poly (cross-entropy shapes),
 *       sigmoid_focal (torchvision's, bce_with_logits shapes, mean), dice ([128x10] with class
 *       indices).
 * </ul>
 *
 * <p>Each Ember call runs in its own {@link MemoryScope} and hands the dropped gradient back to the pool, as
 * a step of {@code Trainer.fit} does (see {@link OpsCases}).
 */
final class LossCases {
  /** Workloads PyTorch 1.13 has no loss for: their rows carry {@code "pytorch": null}. */
  static final Set<String> EMBER_ONLY = Set.of("focal", "poly", "sigmoid_focal", "dice");
  private static final int BATCH = 128;
  private static final int[] CLASSES = {10, 1000};
  private static final int EMBED = 128;
  private static final int FLAT = 4096;
  private static volatile Object sink;

  private LossCases() {}

  /** One loss call on the prediction (which needs a gradient) and fixed operands. */
  private interface Call {
    Tensor apply(Tensor x);
  }

  static List<BenchCase> cases() {
    List<BenchCase> out = new ArrayList<>();
    for (int c : CLASSES) {
      String shape = "[" + BATCH + "x" + c + "]";
      Tensor labels = Tensor.randint(new Generator(11), 0, c, BATCH);
      Tensor multi = Tensor.randint(new Generator(12), 0, 2, BATCH, c).to(DType.F32);
      Tensor probs = Tensor.randn(new Generator(13), BATCH, c).softmax(1);
      out.add(loss("cross_entropy", shape, BATCH, c, x -> Losses.crossEntropy(x, labels)));
      out.add(loss("nll", shape, BATCH, c, Leaf.LOG_PROBS, x -> Losses.nllLoss(x, labels)));
      out.add(loss("kl_div", shape, BATCH, c, Leaf.LOG_PROBS, x -> Losses.klDiv(x, probs, Reduction.BATCHMEAN)));
      out.add(loss("bce", shape, BATCH, c, Leaf.PROBS, x -> Losses.bceLoss(x, multi)));
      out.add(loss("bce_with_logits", shape, BATCH, c, x -> Losses.bceWithLogits(x, multi)));
      out.add(loss("focal", shape, BATCH, c, x -> Losses.focalLoss(x, labels)));
      out.add(loss("poly", shape, BATCH, c, x -> Losses.polyLoss(x, labels)));
      out.add(loss("sigmoid_focal", shape, BATCH, c, x -> Losses.sigmoidFocalLoss(x, multi, 0.25, 2, Reduction.MEAN)));
    }
    Tensor diceLabels = Tensor.randint(new Generator(14), 0, 10, BATCH);
    out.add(loss("dice", "[" + BATCH + "x10]", BATCH, 10, x -> Losses.diceLoss(x, diceLabels)));
    for (int[] shape : new int[][] {{BATCH, 1}, {FLAT}}) {
      String name = shape.length == 2 ? "[" + shape[0] + "x" + shape[1] + "]" : "[" + shape[0] + "]";
      Tensor target = Tensor.randn(new Generator(15), shape);
      out.add(loss("mse", name, shape, x -> Losses.mseLoss(x, target)));
      out.add(loss("l1", name, shape, x -> Losses.l1Loss(x, target)));
      out.add(loss("smooth_l1", name, shape, x -> Losses.smoothL1Loss(x, target)));
      out.add(loss("huber", name, shape, x -> Losses.huberLoss(x, target)));
    }
    Tensor signs = signs(16, FLAT);
    out.add(loss("hinge_embedding", "[" + FLAT + "]", new int[] {FLAT}, x -> Losses.hingeEmbeddingLoss(x, signs)));
    Tensor other = Tensor.randn(new Generator(17), FLAT);
    out.add(loss("margin_ranking", "[" + FLAT + "]", new int[] {FLAT},
        x -> Losses.marginRankingLoss(x, other, signs)));
    String emb = "[" + BATCH + "x" + EMBED + "]";
    Tensor e2 = Tensor.randn(new Generator(18), BATCH, EMBED);
    Tensor e3 = Tensor.randn(new Generator(19), BATCH, EMBED);
    Tensor rowSigns = signs(20, BATCH);
    out.add(loss("cosine_embedding", emb, BATCH, EMBED, x -> Losses.cosineEmbeddingLoss(x, e2, rowSigns)));
    out.add(loss("triplet_margin", emb, BATCH, EMBED, x -> Losses.tripletMarginLoss(x, e2, e3)));
    return out;
  }

  /** n labels of +1 or -1. */
  private static Tensor signs(long seed, int n) {
    return Tensor.randint(new Generator(seed), 0, 2, n).to(DType.F32).mul(2).sub(1);
  }

  /** The prediction: standard normal logits, or their log_softmax (nll, kl_div), or their sigmoid (bce). */
  private enum Leaf { LOGITS, LOG_PROBS, PROBS }

  private static BenchCase loss(String workload, String shape, int rows, int cols, Call f) {
    return loss(workload, shape, rows, cols, Leaf.LOGITS, f);
  }

  private static BenchCase loss(String workload, String shape, int rows, int cols, Leaf leaf, Call f) {
    Tensor x0 = Tensor.randn(new Generator(21), rows, cols);
    Tensor x = switch (leaf) {
      case LOGITS -> x0;
      case LOG_PROBS -> x0.logSoftmax(1);
      case PROBS -> x0.sigmoid();
    };
    return timed(workload, shape, x.requiresGrad(true), f);
  }

  private static BenchCase loss(String workload, String name, int[] shape, Call f) {
    return timed(workload, name, Tensor.randn(new Generator(22), shape).requiresGrad(true), f);
  }

  private static BenchCase timed(String workload, String shape, Tensor x, Call f) {
    return BenchCase.latency(workload, "fwd+bwd " + shape, "latency_us", "us/call", 1e6, () -> {
      try (MemoryScope call = MemoryScope.open()) {
        OpsCases.dropGrad(x);
        f.apply(x).backward();
        sink = x.grad();
      }
    });
  }
}
