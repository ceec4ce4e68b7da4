package dev.ember.nn.functional;

import dev.ember.ops.LinalgOps;
import dev.ember.tensor.Check;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * The functional API in one place, as {@code torch.nn.functional}: {@code F.relu(x)},
 * {@code F.crossEntropy(logits, labels)}, {@code F.conv2d(...)}. Each method delegates to the
 * class that implements its family (and documents it): {@link Activations}, {@link Losses},
 * {@link Normalization}, {@link Dropouts}, {@link Embeddings}, {@link Attention},
 * {@link Recurrent}, {@link Pooling}, {@link Upsampling}, {@link Convolution} and {@link Padding}.
 * A test checks that every public function of those classes is reachable here with the same
 * signature.
 */
public final class F {
  private F() {}

  /**
   * y = x W^T + b as F.linear: weight [out, in], bias [out] or null; any leading dimensions of x
   * are kept. The product and bias are one GEMM (W^T is a packing order, not a copy).
   */
  public static Tensor linear(Tensor input, Tensor weight, Tensor bias) {
    if (weight.dim() != 2 || input.dim() == 0 || input.size(-1) != weight.size(1)) {
      throw Check.fail("linear", "input's last dimension must equal weight's second (weight is [out, in])",
          "input", input, "weight", weight);
    }
    if (bias != null && (bias.dim() != 1 || bias.size(0) != weight.size(0))) {
      throw Check.fail("linear", "bias must be [out_features] = [" + weight.size(0) + "]", "bias", bias, "weight",
          weight);
    }
    return LinalgOps.linearOfCheckedShapes(input, weight, bias);  // the shapes are checked here only
  }

  /**
   * y = x1^T A x2 + b as F.bilinear: input1 [..., in1] and input2 [..., in2] with the same leading dims, weight
   * [out, in1, in2], bias [out] or null; the result is [..., out]. Under autocast its product takes low-precision
   * operands; on BF16/F16 operands it computes in F32 and rounds once.
   */
  public static Tensor bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor bias) {
    String op = "bilinear";
    Tensor[] a = HalfCompute.lowered(op, input1, input2, weight, bias);
    Tensor x1 = a[0], x2 = a[1], w = a[2], b = a[3];
    Check.floating(op, x1);
    if (w.dim() != 3 || x1.dim() == 0 || x2.dim() == 0 || x1.size(-1) != w.size(1) || x2.size(-1) != w.size(2)
        || !Arrays.equals(Arrays.copyOf(x1.shapeRef(), x1.dim() - 1), Arrays.copyOf(x2.shapeRef(), x2.dim() - 1))) {
      throw Check.fail(op, "inputs must be [..., in1_features] and [..., in2_features] with the same leading dims,"
          + " weight [out_features, in1_features, in2_features]", "input1", x1, "input2", x2, "weight", w);
    }
    if (b != null && (b.dim() != 1 || b.size(0) != w.size(0))) {
      throw Check.fail(op, "bias must be [out_features] = [" + w.size(0) + "]", "bias", b, "weight", w);
    }
    HalfCompute.requireSame(op, "input1", x1, "input2", x2, "weight", w, "bias", b);
    if (HalfCompute.applies(a)) return HalfCompute.like(op, x1, t -> bilinear(t[0], t[1], t[2], t[3]), a);
    int out = w.size(0);
    int in1 = w.size(1);
    int in2 = w.size(2);
    int[] lead = Arrays.copyOf(x1.shapeRef(), x1.dim() - 1);
    // one GEMM: x1 [M, in1] x A viewed as [in1, out * in2], then the product with x2 summed over in2
    Tensor wm = w.permute(1, 0, 2).reshape(in1, out * in2);
    Tensor y = x1.reshape(-1, in1).matmul(wm).reshape(-1, out, in2).mul(x2.reshape(-1, in2).unsqueeze(1)).sum(2, false);
    if (b != null) y = y.add(b);
    int[] shape = Arrays.copyOf(lead, lead.length + 1);
    shape[lead.length] = out;
    return y.reshape(shape);
  }

  /** F.linear without a bias. */
  public static Tensor linear(Tensor input, Tensor weight) {
    return linear(input, weight, null);
  }

  /** See {@link Activations#relu(Tensor)}. */
  public static Tensor relu(Tensor x) {
    return Activations.relu(x);
  }
  /** See {@link Activations#relu(Tensor, boolean)}. */
  public static Tensor relu(Tensor x, boolean inplace) {
    return Activations.relu(x, inplace);
  }

  /** See {@link Activations#relu_(Tensor)}. */
  public static Tensor relu_(Tensor x) {
    return Activations.relu_(x);
  }


  /** See {@link Activations#leakyRelu(Tensor, double)}. */
  public static Tensor leakyRelu(Tensor x, double negativeSlope) {
    return Activations.leakyRelu(x, negativeSlope);
  }
  /** See {@link Activations#leakyRelu(Tensor, double, boolean)}. */
  public static Tensor leakyRelu(Tensor x, double negativeSlope, boolean inplace) {
    return Activations.leakyRelu(x, negativeSlope, inplace);
  }

  /** See {@link Activations#leakyRelu_(Tensor, double)}. */
  public static Tensor leakyRelu_(Tensor x, double negativeSlope) {
    return Activations.leakyRelu_(x, negativeSlope);
  }


  /** See {@link Activations#leakyRelu(Tensor)}. */
  public static Tensor leakyRelu(Tensor x) {
    return Activations.leakyRelu(x);
  }

  /** See {@link Activations#elu(Tensor, double)}. */
  public static Tensor elu(Tensor x, double alpha) {
    return Activations.elu(x, alpha);
  }
  /** See {@link Activations#elu(Tensor, double, boolean)}. */
  public static Tensor elu(Tensor x, double alpha, boolean inplace) {
    return Activations.elu(x, alpha, inplace);
  }

  /** See {@link Activations#elu_(Tensor, double)}. */
  public static Tensor elu_(Tensor x, double alpha) {
    return Activations.elu_(x, alpha);
  }


  /** See {@link Activations#elu(Tensor)}. */
  public static Tensor elu(Tensor x) {
    return Activations.elu(x);
  }

  /** See {@link Activations#gelu(Tensor, boolean)}. */
  public static Tensor gelu(Tensor x, boolean tanhApproximation) {
    return Activations.gelu(x, tanhApproximation);
  }

  /** See {@link Activations#gelu(Tensor)}. */
  public static Tensor gelu(Tensor x) {
    return Activations.gelu(x);
  }

  /** See {@link Activations#silu(Tensor)}. */
  public static Tensor silu(Tensor x) {
    return Activations.silu(x);
  }
  /** See {@link Activations#silu(Tensor, boolean)}. */
  public static Tensor silu(Tensor x, boolean inplace) {
    return Activations.silu(x, inplace);
  }


  /** See {@link Activations#mish(Tensor)}. */
  public static Tensor mish(Tensor x) {
    return Activations.mish(x);
  }
  /** See {@link Activations#mish(Tensor, boolean)}. */
  public static Tensor mish(Tensor x, boolean inplace) {
    return Activations.mish(x, inplace);
  }


  /** See {@link Activations#sigmoid(Tensor)}. */
  public static Tensor sigmoid(Tensor x) {
    return Activations.sigmoid(x);
  }

  /** See {@link Activations#tanh(Tensor)}. */
  public static Tensor tanh(Tensor x) {
    return Activations.tanh(x);
  }

  /** See {@link Activations#softplus(Tensor, double, double)}. */
  public static Tensor softplus(Tensor x, double beta, double threshold) {
    return Activations.softplus(x, beta, threshold);
  }

  /** See {@link Activations#softplus(Tensor)}. */
  public static Tensor softplus(Tensor x) {
    return Activations.softplus(x);
  }

  /** See {@link Activations#hardswish(Tensor)}. */
  public static Tensor hardswish(Tensor x) {
    return Activations.hardswish(x);
  }
  /** See {@link Activations#hardswish(Tensor, boolean)}. */
  public static Tensor hardswish(Tensor x, boolean inplace) {
    return Activations.hardswish(x, inplace);
  }

  /** See {@link Activations#hardswish_(Tensor)}. */
  public static Tensor hardswish_(Tensor x) {
    return Activations.hardswish_(x);
  }


  /** See {@link Activations#softmax(Tensor, int)}. */
  public static Tensor softmax(Tensor x, int dim) {
    return Activations.softmax(x, dim);
  }

  /** See {@link Activations#logSoftmax(Tensor, int)}. */
  public static Tensor logSoftmax(Tensor x, int dim) {
    return Activations.logSoftmax(x, dim);
  }

  /** See {@link Losses#mseLoss(Tensor, Tensor)}. */
  public static Tensor mseLoss(Tensor input, Tensor target) {
    return Losses.mseLoss(input, target);
  }

  /** See {@link Losses#mseLoss(Tensor, Tensor, Reduction)}. */
  public static Tensor mseLoss(Tensor input, Tensor target, Reduction reduction) {
    return Losses.mseLoss(input, target, reduction);
  }

  /** See {@link Losses#l1Loss(Tensor, Tensor)}. */
  public static Tensor l1Loss(Tensor input, Tensor target) {
    return Losses.l1Loss(input, target);
  }

  /** See {@link Losses#l1Loss(Tensor, Tensor, Reduction)}. */
  public static Tensor l1Loss(Tensor input, Tensor target, Reduction reduction) {
    return Losses.l1Loss(input, target, reduction);
  }

  /** See {@link Losses#smoothL1Loss(Tensor, Tensor)}. */
  public static Tensor smoothL1Loss(Tensor input, Tensor target) {
    return Losses.smoothL1Loss(input, target);
  }

  /** See {@link Losses#smoothL1Loss(Tensor, Tensor, Reduction)}. */
  public static Tensor smoothL1Loss(Tensor input, Tensor target, Reduction reduction) {
    return Losses.smoothL1Loss(input, target, reduction);
  }

  /** See {@link Losses#smoothL1Loss(Tensor, Tensor, Reduction, double)}. */
  public static Tensor smoothL1Loss(Tensor input, Tensor target, Reduction reduction, double beta) {
    return Losses.smoothL1Loss(input, target, reduction, beta);
  }

  /** See {@link Losses#huberLoss(Tensor, Tensor)}. */
  public static Tensor huberLoss(Tensor input, Tensor target) {
    return Losses.huberLoss(input, target);
  }

  /** See {@link Losses#huberLoss(Tensor, Tensor, Reduction)}. */
  public static Tensor huberLoss(Tensor input, Tensor target, Reduction reduction) {
    return Losses.huberLoss(input, target, reduction);
  }

  /** See {@link Losses#huberLoss(Tensor, Tensor, Reduction, double)}. */
  public static Tensor huberLoss(Tensor input, Tensor target, Reduction reduction, double delta) {
    return Losses.huberLoss(input, target, reduction, delta);
  }

  /** See {@link Losses#bceLoss(Tensor, Tensor)}. */
  public static Tensor bceLoss(Tensor input, Tensor target) {
    return Losses.bceLoss(input, target);
  }

  /** See {@link Losses#bceLoss(Tensor, Tensor, Reduction)}. */
  public static Tensor bceLoss(Tensor input, Tensor target, Reduction reduction) {
    return Losses.bceLoss(input, target, reduction);
  }

  /** See {@link Losses#bceLoss(Tensor, Tensor, Tensor, Reduction)}. */
  public static Tensor bceLoss(Tensor input, Tensor target, Tensor weight, Reduction reduction) {
    return Losses.bceLoss(input, target, weight, reduction);
  }

  /** See {@link Losses#bceWithLogits(Tensor, Tensor)}. */
  public static Tensor bceWithLogits(Tensor input, Tensor target) {
    return Losses.bceWithLogits(input, target);
  }

  /** See {@link Losses#bceWithLogits(Tensor, Tensor, Reduction)}. */
  public static Tensor bceWithLogits(Tensor input, Tensor target, Reduction reduction) {
    return Losses.bceWithLogits(input, target, reduction);
  }

  /** See {@link Losses#bceWithLogits(Tensor, Tensor, Tensor, Reduction, Tensor)}. */
  public static Tensor bceWithLogits(Tensor input, Tensor target, Tensor weight, Reduction reduction,
      Tensor posWeight) {
    return Losses.bceWithLogits(input, target, weight, reduction, posWeight);
  }

  /** See {@link Losses#crossEntropy(Tensor, Tensor)}. */
  public static Tensor crossEntropy(Tensor input, Tensor target) {
    return Losses.crossEntropy(input, target);
  }

  /** See {@link Losses#crossEntropy(Tensor, Tensor, Reduction)}. */
  public static Tensor crossEntropy(Tensor input, Tensor target, Reduction reduction) {
    return Losses.crossEntropy(input, target, reduction);
  }

  /** See {@link Losses#crossEntropy(Tensor, Tensor, Tensor, int, Reduction, double)}. */
  public static Tensor crossEntropy(Tensor input, Tensor target, Tensor weight, int ignoreIndex, Reduction reduction,
      double labelSmoothing) {
    return Losses.crossEntropy(input, target, weight, ignoreIndex, reduction, labelSmoothing);
  }

  /** See {@link Losses#nllLoss(Tensor, Tensor)}. */
  public static Tensor nllLoss(Tensor input, Tensor target) {
    return Losses.nllLoss(input, target);
  }

  /** See {@link Losses#nllLoss(Tensor, Tensor, Reduction)}. */
  public static Tensor nllLoss(Tensor input, Tensor target, Reduction reduction) {
    return Losses.nllLoss(input, target, reduction);
  }

  /** See {@link Losses#nllLoss(Tensor, Tensor, Tensor, int, Reduction)}. */
  public static Tensor nllLoss(Tensor input, Tensor target, Tensor weight, int ignoreIndex, Reduction reduction) {
    return Losses.nllLoss(input, target, weight, ignoreIndex, reduction);
  }

  /** See {@link Losses#klDiv(Tensor, Tensor)}. */
  public static Tensor klDiv(Tensor input, Tensor target) {
    return Losses.klDiv(input, target);
  }

  /** See {@link Losses#klDiv(Tensor, Tensor, Reduction)}. */
  public static Tensor klDiv(Tensor input, Tensor target, Reduction reduction) {
    return Losses.klDiv(input, target, reduction);
  }

  /** See {@link Losses#klDiv(Tensor, Tensor, Reduction, boolean)}. */
  public static Tensor klDiv(Tensor input, Tensor target, Reduction reduction, boolean logTarget) {
    return Losses.klDiv(input, target, reduction, logTarget);
  }

  /** See {@link Losses#cosineEmbeddingLoss(Tensor, Tensor, Tensor)}. */
  public static Tensor cosineEmbeddingLoss(Tensor input1, Tensor input2, Tensor target) {
    return Losses.cosineEmbeddingLoss(input1, input2, target);
  }

  /** See {@link Losses#cosineEmbeddingLoss(Tensor, Tensor, Tensor, double)}. */
  public static Tensor cosineEmbeddingLoss(Tensor input1, Tensor input2, Tensor target, double margin) {
    return Losses.cosineEmbeddingLoss(input1, input2, target, margin);
  }

  /** See {@link Losses#cosineEmbeddingLoss(Tensor, Tensor, Tensor, double, Reduction)}. */
  public static Tensor cosineEmbeddingLoss(Tensor input1, Tensor input2, Tensor target, double margin,
      Reduction reduction) {
    return Losses.cosineEmbeddingLoss(input1, input2, target, margin, reduction);
  }

  /** See {@link Losses#marginRankingLoss(Tensor, Tensor, Tensor)}. */
  public static Tensor marginRankingLoss(Tensor input1, Tensor input2, Tensor target) {
    return Losses.marginRankingLoss(input1, input2, target);
  }

  /** See {@link Losses#marginRankingLoss(Tensor, Tensor, Tensor, double)}. */
  public static Tensor marginRankingLoss(Tensor input1, Tensor input2, Tensor target, double margin) {
    return Losses.marginRankingLoss(input1, input2, target, margin);
  }

  /** See {@link Losses#marginRankingLoss(Tensor, Tensor, Tensor, double, Reduction)}. */
  public static Tensor marginRankingLoss(Tensor input1, Tensor input2, Tensor target, double margin,
      Reduction reduction) {
    return Losses.marginRankingLoss(input1, input2, target, margin, reduction);
  }

  /** See {@link Losses#hingeEmbeddingLoss(Tensor, Tensor)}. */
  public static Tensor hingeEmbeddingLoss(Tensor input, Tensor target) {
    return Losses.hingeEmbeddingLoss(input, target);
  }

  /** See {@link Losses#hingeEmbeddingLoss(Tensor, Tensor, double)}. */
  public static Tensor hingeEmbeddingLoss(Tensor input, Tensor target, double margin) {
    return Losses.hingeEmbeddingLoss(input, target, margin);
  }

  /** See {@link Losses#hingeEmbeddingLoss(Tensor, Tensor, double, Reduction)}. */
  public static Tensor hingeEmbeddingLoss(Tensor input, Tensor target, double margin, Reduction reduction) {
    return Losses.hingeEmbeddingLoss(input, target, margin, reduction);
  }

  /** See {@link Losses#tripletMarginLoss(Tensor, Tensor, Tensor)}. */
  public static Tensor tripletMarginLoss(Tensor anchor, Tensor positive, Tensor negative) {
    return Losses.tripletMarginLoss(anchor, positive, negative);
  }

  /** See {@link Losses#tripletMarginLoss(Tensor, Tensor, Tensor, double)}. */
  public static Tensor tripletMarginLoss(Tensor anchor, Tensor positive, Tensor negative, double margin) {
    return Losses.tripletMarginLoss(anchor, positive, negative, margin);
  }

  /** See {@link Losses#tripletMarginLoss(Tensor, Tensor, Tensor, double, double, double, boolean, Reduction)}. */
  public static Tensor tripletMarginLoss(Tensor anchor, Tensor positive, Tensor negative, double margin, double p,
      double eps, boolean swap, Reduction reduction) {
    return Losses.tripletMarginLoss(anchor, positive, negative, margin, p, eps, swap, reduction);
  }

  /** See {@link Losses#sigmoidFocalLoss(Tensor, Tensor)}. */
  public static Tensor sigmoidFocalLoss(Tensor input, Tensor target) {
    return Losses.sigmoidFocalLoss(input, target);
  }

  /** See {@link Losses#sigmoidFocalLoss(Tensor, Tensor, double, double, Reduction)}. */
  public static Tensor sigmoidFocalLoss(Tensor input, Tensor target, double alpha, double gamma,
      Reduction reduction) {
    return Losses.sigmoidFocalLoss(input, target, alpha, gamma, reduction);
  }

  /** See {@link Losses#focalLoss(Tensor, Tensor)}. */
  public static Tensor focalLoss(Tensor input, Tensor target) {
    return Losses.focalLoss(input, target);
  }

  /** See {@link Losses#focalLoss(Tensor, Tensor, double)}. */
  public static Tensor focalLoss(Tensor input, Tensor target, double gamma) {
    return Losses.focalLoss(input, target, gamma);
  }

  /** See {@link Losses#focalLoss(Tensor, Tensor, Tensor, double, int, Reduction)}. */
  public static Tensor focalLoss(Tensor input, Tensor target, Tensor alpha, double gamma, int ignoreIndex,
      Reduction reduction) {
    return Losses.focalLoss(input, target, alpha, gamma, ignoreIndex, reduction);
  }

  /** See {@link Losses#diceLoss(Tensor, Tensor)}. */
  public static Tensor diceLoss(Tensor input, Tensor target) {
    return Losses.diceLoss(input, target);
  }

  /** See {@link Losses#diceLoss(Tensor, Tensor, double, Reduction)}. */
  public static Tensor diceLoss(Tensor input, Tensor target, double smooth, Reduction reduction) {
    return Losses.diceLoss(input, target, smooth, reduction);
  }

  /** See {@link Losses#polyLoss(Tensor, Tensor)}. */
  public static Tensor polyLoss(Tensor input, Tensor target) {
    return Losses.polyLoss(input, target);
  }

  /** See {@link Losses#polyLoss(Tensor, Tensor, double)}. */
  public static Tensor polyLoss(Tensor input, Tensor target, double epsilon) {
    return Losses.polyLoss(input, target, epsilon);
  }

  /** See {@link Losses#polyLoss(Tensor, Tensor, double, double, int, Reduction)}. */
  public static Tensor polyLoss(Tensor input, Tensor target, double epsilon, double labelSmoothing, int ignoreIndex,
      Reduction reduction) {
    return Losses.polyLoss(input, target, epsilon, labelSmoothing, ignoreIndex, reduction);
  }

  /** See {@link Normalization#batchNorm(Tensor, Tensor, Tensor, Tensor, Tensor, boolean, double, double)}. */
  public static Tensor batchNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
      boolean training, double momentum, double eps) {
    return Normalization.batchNorm(input, runningMean, runningVar, weight, bias, training, momentum, eps);
  }

  /** See {@link Normalization#batchNorm(Tensor, Tensor, Tensor, Tensor, Tensor, boolean)}. */
  public static Tensor batchNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
      boolean training) {
    return Normalization.batchNorm(input, runningMean, runningVar, weight, bias, training);
  }

  /** See {@link Normalization#layerNorm(Tensor, int[], Tensor, Tensor, double)}. */
  public static Tensor layerNorm(Tensor input, int[] normalizedShape, Tensor weight, Tensor bias, double eps) {
    return Normalization.layerNorm(input, normalizedShape, weight, bias, eps);
  }

  /** See {@link Normalization#layerNorm(Tensor, int[], Tensor, Tensor)}. */
  public static Tensor layerNorm(Tensor input, int[] normalizedShape, Tensor weight, Tensor bias) {
    return Normalization.layerNorm(input, normalizedShape, weight, bias);
  }

  /** See {@link Normalization#rmsNorm(Tensor, int[], Tensor, Double)}. */
  public static Tensor rmsNorm(Tensor input, int[] normalizedShape, Tensor weight, Double eps) {
    return Normalization.rmsNorm(input, normalizedShape, weight, eps);
  }

  /** See {@link Normalization#groupNorm(Tensor, int, Tensor, Tensor, double)}. */
  public static Tensor groupNorm(Tensor input, int numGroups, Tensor weight, Tensor bias, double eps) {
    return Normalization.groupNorm(input, numGroups, weight, bias, eps);
  }

  /** See {@link Normalization#groupNorm(Tensor, int, Tensor, Tensor)}. */
  public static Tensor groupNorm(Tensor input, int numGroups, Tensor weight, Tensor bias) {
    return Normalization.groupNorm(input, numGroups, weight, bias);
  }

  /** See {@link Dropouts#dropout(Tensor, double, boolean, Generator)}. */
  public static Tensor dropout(Tensor input, double p, boolean training, Generator gen) {
    return Dropouts.dropout(input, p, training, gen);
  }
  /** See {@link Dropouts#dropout(Tensor, double, boolean, boolean, Generator)}. */
  public static Tensor dropout(Tensor input, double p, boolean training, boolean inplace, Generator gen) {
    return Dropouts.dropout(input, p, training, inplace, gen);
  }


  /** See {@link Dropouts#dropout(Tensor)}. */
  public static Tensor dropout(Tensor input) {
    return Dropouts.dropout(input);
  }

  /** See {@link Dropouts#dropout2d(Tensor, double, boolean, Generator)}. */
  public static Tensor dropout2d(Tensor input, double p, boolean training, Generator gen) {
    return Dropouts.dropout2d(input, p, training, gen);
  }
  /** See {@link Dropouts#dropout2d(Tensor, double, boolean, boolean, Generator)}. */
  public static Tensor dropout2d(Tensor input, double p, boolean training, boolean inplace, Generator gen) {
    return Dropouts.dropout2d(input, p, training, inplace, gen);
  }


  /** See {@link Dropouts#dropout1d(Tensor, double, boolean, Generator)}. */
  public static Tensor dropout1d(Tensor input, double p, boolean training, Generator gen) {
    return Dropouts.dropout1d(input, p, training, gen);
  }
  /** See {@link Dropouts#dropout1d(Tensor, double, boolean, boolean, Generator)}. */
  public static Tensor dropout1d(Tensor input, double p, boolean training, boolean inplace, Generator gen) {
    return Dropouts.dropout1d(input, p, training, inplace, gen);
  }


  /** See {@link Dropouts#alphaDropout(Tensor, double, boolean, Generator)}. */
  public static Tensor alphaDropout(Tensor input, double p, boolean training, Generator gen) {
    return Dropouts.alphaDropout(input, p, training, gen);
  }
  /** See {@link Dropouts#alphaDropout(Tensor, double, boolean, boolean, Generator)}. */
  public static Tensor alphaDropout(Tensor input, double p, boolean training, boolean inplace, Generator gen) {
    return Dropouts.alphaDropout(input, p, training, inplace, gen);
  }


  /** See {@link Embeddings#embedding(Tensor, Tensor)}. */
  public static Tensor embedding(Tensor input, Tensor weight) {
    return Embeddings.embedding(input, weight);
  }

  /** See {@link Embeddings#embedding(Tensor, Tensor, Integer, Double, double)}. */
  public static Tensor embedding(Tensor input, Tensor weight, Integer paddingIdx, Double maxNorm, double normType) {
    return Embeddings.embedding(input, weight, paddingIdx, maxNorm, normType);
  }

  /** See {@link Attention#scaledDotProductAttention(Tensor, Tensor, Tensor)}. */
  public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v) {
    return Attention.scaledDotProductAttention(q, k, v);
  }

  /** See {@link Attention#scaledDotProductAttention}. */
  public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP,
      boolean isCausal, Double scale, Generator gen) {
    return Attention.scaledDotProductAttention(q, k, v, attnMask, dropoutP, isCausal, scale, gen);
  }

  /** See {@link Attention#scaledDotProductAttention}. */
  public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP,
      boolean isCausal, Double scale, int window, Generator gen, Attention.Kernel kernel) {
    return Attention.scaledDotProductAttention(q, k, v, attnMask, dropoutP, isCausal, scale, window, gen, kernel);
  }

  /** See {@link Recurrent#lstmCell(Tensor, Tensor)}. */
  public static Tensor lstmCell(Tensor gates, Tensor c) {
    return Recurrent.lstmCell(gates, c);
  }

  /** See {@link Recurrent#gruCell(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)}. */
  public static Tensor gruCell(Tensor input, Tensor hx, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh) {
    return Recurrent.gruCell(input, hx, wIh, wHh, bIh, bHh);
  }

  /** See {@link Recurrent#lstm(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, boolean)}. */
  public static Tensor lstm(Tensor input, Tensor h0, Tensor c0, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh,
      boolean reverse) {
    return Recurrent.lstm(input, h0, c0, wIh, wHh, bIh, bHh, reverse);
  }

  /** See {@link Recurrent#gru(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, boolean)}. */
  public static Tensor gru(Tensor input, Tensor h0, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh, boolean reverse) {
    return Recurrent.gru(input, h0, wIh, wHh, bIh, bHh, reverse);
  }

  /** See {@link Recurrent#rnnCell(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, String)}. */
  public static Tensor rnnCell(Tensor input, Tensor hx, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh,
      String nonlinearity) {
    return Recurrent.rnnCell(input, hx, wIh, wHh, bIh, bHh, nonlinearity);
  }

  /** See {@link Pooling#maxPool2d(Tensor, int)}. */
  public static Tensor maxPool2d(Tensor input, int kernelSize) {
    return Pooling.maxPool2d(input, kernelSize);
  }

  /** See {@link Pooling#maxPool2d(Tensor, int[], int[], int[], int[], boolean)}. */
  public static Tensor maxPool2d(Tensor input, int[] kernelSize, int[] stride, int[] padding, int[] dilation,
      boolean ceilMode) {
    return Pooling.maxPool2d(input, kernelSize, stride, padding, dilation, ceilMode);
  }

  /** See {@link Pooling#maxPool2dWithIndices(Tensor, int[], int[], int[], int[], boolean)}. */
  public static Pooling.WithIndices maxPool2dWithIndices(Tensor input, int[] kernelSize, int[] stride, int[] padding,
      int[] dilation, boolean ceilMode) {
    return Pooling.maxPool2dWithIndices(input, kernelSize, stride, padding, dilation, ceilMode);
  }

  /** See {@link Pooling#maxPool1d(Tensor, int)}. */
  public static Tensor maxPool1d(Tensor input, int kernelSize) {
    return Pooling.maxPool1d(input, kernelSize);
  }

  /** See {@link Pooling#maxPool1d(Tensor, int, Integer, int, int, boolean)}. */
  public static Tensor maxPool1d(Tensor input, int kernelSize, Integer stride, int padding, int dilation,
      boolean ceilMode) {
    return Pooling.maxPool1d(input, kernelSize, stride, padding, dilation, ceilMode);
  }

  /** See {@link Pooling#maxPool1dWithIndices(Tensor, int, Integer, int, int, boolean)}. */
  public static Pooling.WithIndices maxPool1dWithIndices(Tensor input, int kernelSize, Integer stride, int padding,
      int dilation, boolean ceilMode) {
    return Pooling.maxPool1dWithIndices(input, kernelSize, stride, padding, dilation, ceilMode);
  }

  /** See {@link Pooling#avgPool2d(Tensor, int)}. */
  public static Tensor avgPool2d(Tensor input, int kernelSize) {
    return Pooling.avgPool2d(input, kernelSize);
  }

  /** See {@link Pooling#avgPool2d(Tensor, int[], int[], int[], boolean, boolean, Integer)}. */
  public static Tensor avgPool2d(Tensor input, int[] kernelSize, int[] stride, int[] padding, boolean ceilMode,
      boolean countIncludePad, Integer divisorOverride) {
    return Pooling.avgPool2d(input, kernelSize, stride, padding, ceilMode, countIncludePad, divisorOverride);
  }

  /** See {@link Pooling#avgPool1d(Tensor, int)}. */
  public static Tensor avgPool1d(Tensor input, int kernelSize) {
    return Pooling.avgPool1d(input, kernelSize);
  }

  /** See {@link Pooling#avgPool1d(Tensor, int, Integer, int, boolean, boolean)}. */
  public static Tensor avgPool1d(Tensor input, int kernelSize, Integer stride, int padding, boolean ceilMode,
      boolean countIncludePad) {
    return Pooling.avgPool1d(input, kernelSize, stride, padding, ceilMode, countIncludePad);
  }

  /** See {@link Pooling#adaptiveAvgPool2d(Tensor, int)}. */
  public static Tensor adaptiveAvgPool2d(Tensor input, int outputSize) {
    return Pooling.adaptiveAvgPool2d(input, outputSize);
  }

  /** See {@link Pooling#adaptiveAvgPool2d(Tensor, Integer, Integer)}. */
  public static Tensor adaptiveAvgPool2d(Tensor input, Integer outH, Integer outW) {
    return Pooling.adaptiveAvgPool2d(input, outH, outW);
  }

  /** See {@link Pooling#adaptiveMaxPool2d(Tensor, int)}. */
  public static Tensor adaptiveMaxPool2d(Tensor input, int outputSize) {
    return Pooling.adaptiveMaxPool2d(input, outputSize);
  }

  /** See {@link Pooling#adaptiveMaxPool2d(Tensor, Integer, Integer)}. */
  public static Tensor adaptiveMaxPool2d(Tensor input, Integer outH, Integer outW) {
    return Pooling.adaptiveMaxPool2d(input, outH, outW);
  }

  /** See {@link Pooling#adaptiveMaxPool2dWithIndices(Tensor, Integer, Integer)}. */
  public static Pooling.WithIndices adaptiveMaxPool2dWithIndices(Tensor input, Integer outH, Integer outW) {
    return Pooling.adaptiveMaxPool2dWithIndices(input, outH, outW);
  }

  /** See {@link Upsampling#interpolate(Tensor, int[], String)}. */
  public static Tensor interpolate(Tensor input, int[] size, String mode) {
    return Upsampling.interpolate(input, size, mode);
  }

  /** See {@link Upsampling#interpolate(Tensor, double, String)}. */
  public static Tensor interpolate(Tensor input, double scaleFactor, String mode) {
    return Upsampling.interpolate(input, scaleFactor, mode);
  }

  /** See {@link Upsampling#interpolate(Tensor, int[], double[], String, Boolean, Boolean)}. */
  public static Tensor interpolate(Tensor input, int[] size, double[] scaleFactor, String mode, Boolean alignCorners,
      Boolean recomputeScaleFactor) {
    return Upsampling.interpolate(input, size, scaleFactor, mode, alignCorners, recomputeScaleFactor);
  }

  /** See {@link Convolution#conv2d(Tensor, Tensor, Tensor)}. */
  public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias) {
    return Convolution.conv2d(input, weight, bias);
  }

  /** See {@link Convolution#conv2d(Tensor, Tensor, Tensor, int[], int[], int[], int)}. */
  public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation,
      int groups) {
    return Convolution.conv2d(input, weight, bias, stride, padding, dilation, groups);
  }

  /** See {@link Convolution#conv2d(Tensor, Tensor, Tensor, int[], String, int[], int)}. */
  public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, String padding, int[] dilation,
      int groups) {
    return Convolution.conv2d(input, weight, bias, stride, padding, dilation, groups);
  }

  /** See {@link Convolution#conv2d(Tensor, Tensor, Tensor, int[], int[], int[], int, String)}. */
  public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation,
      int groups, String paddingMode) {
    return Convolution.conv2d(input, weight, bias, stride, padding, dilation, groups, paddingMode);
  }

  /** See {@link Convolution#conv2d(Tensor, Tensor, Tensor, int[], String, int[], int, String)}. */
  public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, String padding, int[] dilation,
      int groups, String paddingMode) {
    return Convolution.conv2d(input, weight, bias, stride, padding, dilation, groups, paddingMode);
  }

  /** See {@link Convolution#conv2dRelu(Tensor, Tensor, Tensor, int[], int[], int[], int, String)}. */
  public static Tensor conv2dRelu(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding,
      int[] dilation, int groups, String paddingMode) {
    return Convolution.conv2dRelu(input, weight, bias, stride, padding, dilation, groups, paddingMode);
  }

  /** See {@link Convolution#conv2dRelu(Tensor, Tensor, Tensor, int[], String, int[], int, String)}. */
  public static Tensor conv2dRelu(Tensor input, Tensor weight, Tensor bias, int[] stride, String padding,
      int[] dilation, int groups, String paddingMode) {
    return Convolution.conv2dRelu(input, weight, bias, stride, padding, dilation, groups, paddingMode);
  }

  /** See {@link Convolution#conv1d(Tensor, Tensor, Tensor)}. */
  public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias) {
    return Convolution.conv1d(input, weight, bias);
  }

  /** See {@link Convolution#conv1d(Tensor, Tensor, Tensor, int, int, int, int)}. */
  public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, int padding, int dilation,
      int groups) {
    return Convolution.conv1d(input, weight, bias, stride, padding, dilation, groups);
  }

  /** See {@link Convolution#conv1d(Tensor, Tensor, Tensor, int, int, int, int, String)}. */
  public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, int padding, int dilation,
      int groups, String paddingMode) {
    return Convolution.conv1d(input, weight, bias, stride, padding, dilation, groups, paddingMode);
  }

  /** See {@link Convolution#conv1d(Tensor, Tensor, Tensor, int, String, int, int)}. */
  public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, String padding, int dilation,
      int groups) {
    return Convolution.conv1d(input, weight, bias, stride, padding, dilation, groups);
  }

  /** See {@link Convolution#conv1d(Tensor, Tensor, Tensor, int, String, int, int, String)}. */
  public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, String padding, int dilation,
      int groups, String paddingMode) {
    return Convolution.conv1d(input, weight, bias, stride, padding, dilation, groups, paddingMode);
  }

  /** See {@link Convolution#convTranspose2d(Tensor, Tensor, Tensor)}. */
  public static Tensor convTranspose2d(Tensor input, Tensor weight, Tensor bias) {
    return Convolution.convTranspose2d(input, weight, bias);
  }

  /** See {@link Convolution#convTranspose2d(Tensor, Tensor, Tensor, int[], int[], int[], int, int[])}. */
  public static Tensor convTranspose2d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding,
      int[] outputPadding, int groups, int[] dilation) {
    return Convolution.convTranspose2d(input, weight, bias, stride, padding, outputPadding, groups, dilation);
  }

  /** See {@link Padding#pad(Tensor, int[])}. */
  public static Tensor pad(Tensor input, int[] pad) {
    return Padding.pad(input, pad);
  }

  /** See {@link Padding#pad(Tensor, int[], String)}. */
  public static Tensor pad(Tensor input, int[] pad, String mode) {
    return Padding.pad(input, pad, mode);
  }

  /** See {@link Padding#pad(Tensor, int[], String, double)}. */
  public static Tensor pad(Tensor input, int[] pad, String mode, double value) {
    return Padding.pad(input, pad, mode, value);
  }

}
