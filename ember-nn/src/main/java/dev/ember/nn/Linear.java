package dev.ember.nn;

import dev.ember.nn.init.Init;
import dev.ember.ops.LinalgOps;
import dev.ember.tensor.Check;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * y = x W^T + b, as {@code nn.Linear}: weight [out, in], bias [out]; the input's last dimension
 * is {@code in} and any leading dimensions are kept. Initialised as PyTorch: weight by
 * kaiming_uniform(a = sqrt 5), i.e. U(-1/sqrt(in), 1/sqrt(in)), and the bias from the same range.
 * The product and the bias are one fused GEMM (the transpose of W is a packing order, not a copy).
 */
public class Linear extends Module {
  private final int inFeatures;
  private final int outFeatures;

  public Linear(int inFeatures, int outFeatures) {
    this(inFeatures, outFeatures, true, Generator.global());
  }

  public Linear(int inFeatures, int outFeatures, boolean bias) {
    this(inFeatures, outFeatures, bias, Generator.global());
  }

  public Linear(int inFeatures, int outFeatures, boolean bias, Generator gen) {
    if (inFeatures < 0 || outFeatures < 0) {
      throw new IllegalArgumentException("Linear: feature counts must be >= 0, got in_features=" + inFeatures
          + ", out_features=" + outFeatures);
    }
    this.inFeatures = inFeatures;
    this.outFeatures = outFeatures;
    Tensor w = Tensor.empty(outFeatures, inFeatures);
    Init.kaimingUniform_(w, Math.sqrt(5), Init.FanMode.FAN_IN, "leaky_relu", gen);
    registerParameter("weight", w);
    if (bias) {
      double bound = inFeatures > 0 ? 1 / Math.sqrt(inFeatures) : 0;
      registerParameter("bias", Init.uniform_(Tensor.empty(outFeatures), -bound, bound, gen));
    } else {
      registerParameter("bias", null);
    }
  }

  public Tensor weight() {
    return param("weight");
  }

  /** The bias, or null when the layer was built without one. */
  public Tensor bias() {
    return param("bias");
  }

  public int inFeatures() {
    return inFeatures;
  }

  public int outFeatures() {
    return outFeatures;
  }

  @Override
  public Tensor forward(Tensor x) {
    if (x.dim() == 0 || x.size(x.dim() - 1) != inFeatures) {
      throw Check.fail("Linear", "input's last dimension must be in_features (" + inFeatures + ")", "input", x,
          "weight", weight());
    }
    return LinalgOps.linearOfCheckedShapes(x, weight(), bias());  // weight and bias are ours: [out, in] and [out]
  }

  @Override
  protected String extraRepr() {
    return "in_features=" + inFeatures + ", out_features=" + outFeatures + ", bias=" + (hasParam("bias") ? "True" : "False");
  }
}
