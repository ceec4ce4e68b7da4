package dev.ember.nn;

import dev.ember.nn.functional.F;
import dev.ember.nn.init.Init;
import dev.ember.tensor.Check;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o], as {@code nn.Bilinear}; weight and bias
 * initialised U(-1/sqrt(in1), 1/sqrt(in1)). Computed as one GEMM of x1 against W laid out as
 * [in1, out * in2], then a row-wise product with x2 and a sum ({@link F#bilinear}).
 */
public class Bilinear extends Module {
  private final int in1;
  private final int in2;
  private final int out;

  public Bilinear(int in1Features, int in2Features, int outFeatures) {
    this(in1Features, in2Features, outFeatures, true, Generator.global());
  }

  public Bilinear(int in1Features, int in2Features, int outFeatures, boolean bias, Generator gen) {
    if (in1Features <= 0 || in2Features <= 0 || outFeatures < 0) {
      throw new IllegalArgumentException("Bilinear: need in1_features > 0, in2_features > 0, out_features >= 0, got "
          + in1Features + ", " + in2Features + ", " + outFeatures);
    }
    this.in1 = in1Features;
    this.in2 = in2Features;
    this.out = outFeatures;
    double bound = 1 / Math.sqrt(in1Features);
    registerParameter("weight", Init.uniform_(Tensor.empty(outFeatures, in1Features, in2Features), -bound, bound, gen));
    registerParameter("bias", bias ? Init.uniform_(Tensor.empty(outFeatures), -bound, bound, gen) : null);
  }

  public Tensor weight() {
    return param("weight");
  }

  public Tensor bias() {
    return param("bias");
  }

  public Tensor forward(Tensor x1, Tensor x2) {
    if (x1.dim() == 0 || x1.size(x1.dim() - 1) != in1 || x2.dim() == 0 || x2.size(x2.dim() - 1) != in2
        || !Arrays.equals(Arrays.copyOf(x1.shape(), x1.dim() - 1), Arrays.copyOf(x2.shape(), Math.max(0, x2.dim() - 1)))) {
      throw Check.fail("Bilinear", "inputs must be [..., in1_features (" + in1 + ")] and [..., in2_features ("
          + in2 + ")] with the same leading dims", "input1", x1, "input2", x2);
    }
    return F.bilinear(x1, x2, weight(), hasParam("bias") ? bias() : null);
  }

  @Override
  protected String extraRepr() {
    return "in1_features=" + in1 + ", in2_features=" + in2 + ", out_features=" + out + ", bias="
        + Reprs.bool(hasParam("bias"));
  }
}
