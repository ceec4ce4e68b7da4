package dev.ember.nn;

import dev.ember.autograd.Grad;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * Fusion for inference, as PyTorch's {@code torch.nn.utils.fuse_conv_bn_eval} and
 * {@code torch.ao.quantization.fuse_modules}: a BatchNorm in eval mode is an affine map per channel,
 * {@code y = (x - mean) * gamma / sqrt(var + eps) + beta}, so it folds into the preceding Conv2d or
 * Linear: with {@code s = gamma / sqrt(var + eps)}, the weight rows of output channel o are scaled by
 * {@code s[o]} and the bias becomes {@code (b - mean) * s + beta} (b = 0 for a layer without bias,
 * which then gets one). The folding runs in double and rounds once to the weight's dtype.
 *
 * <p>Only eval-mode modules fuse (a training BatchNorm normalizes by batch statistics, which no
 * fixed weight reproduces), and only BatchNorms that track running statistics. The fused layers are
 * new modules; the originals are left unchanged.
 */
public final class Fuse {
  private Fuse() {}

  /**
   * A Conv2d (bias always present) equal to {@code bn(conv(x))} in eval mode. Any groups, stride,
   * padding (sizes or "same"/"valid"), dilation and padding mode: the fold is per output channel,
   * which every one of them keeps. A transposed convolution is another class and is not accepted.
   */
  public static Conv2d convBn(Conv2d conv, BatchNorm2d bn) {
    checkEval("convBn", conv, bn);
    if (bn.numFeatures() != conv.outChannels()) {
      throw new IllegalArgumentException("Fuse.convBn: BatchNorm2d has " + bn.numFeatures()
          + " features but the Conv2d has " + conv.outChannels() + " output channels: conv=" + conv + ", bn=" + bn);
    }
    Generator unused = new Generator(0); // the fresh layer's initial values are overwritten
    Conv2d fused = conv.paddingString != null
        ? new Conv2d(conv.inChannels, conv.outChannels, conv.kernelSize, conv.stride, conv.paddingString, conv.dilation,
            conv.groups, true, conv.paddingMode, unused)
        : new Conv2d(conv.inChannels, conv.outChannels, conv.kernelSize, conv.stride, conv.padding, conv.dilation,
            conv.groups, true, conv.paddingMode, unused);
    fused.to(conv.weight().dtype()).to(conv.weight().device());
    fold(conv.weight(), conv.bias(), bn, fused.weight(), fused.bias());
    fused.eval();
    return fused;
  }

  /**
   * A Linear (bias always present) equal to {@code bn(linear(x))} in eval mode, for inputs
   * [N, features] (BatchNorm1d normalizes dimension 1, which is Linear's output only for 2-d inputs).
   */
  public static Linear linearBn(Linear linear, BatchNorm1d bn) {
    checkEval("linearBn", linear, bn);
    if (bn.numFeatures() != linear.outFeatures()) {
      throw new IllegalArgumentException("Fuse.linearBn: BatchNorm1d has " + bn.numFeatures()
          + " features but the Linear has " + linear.outFeatures() + " output features: linear=" + linear + ", bn=" + bn);
    }
    Linear fused = new Linear(linear.inFeatures(), linear.outFeatures(), true, new Generator(0));
    fused.to(linear.weight().dtype()).to(linear.weight().device());
    fold(linear.weight(), linear.bias(), bn, fused.weight(), fused.bias());
    fused.eval();
    return fused;
  }

  /**
   * A copy of {@code model} with every run of Conv2d-BatchNorm2d(-ReLU) and Linear-BatchNorm1d(-ReLU)
   * fused, and every Conv2d-ReLU and Linear-ReLU pair too, as {@code fuse_modules}: the run's first
   * position holds the fused layer ({@link ConvReLU2d} / {@link LinearReLU} when a ReLU ends it), the
   * others an {@link Identity}, so positions and state dict prefixes stay where they were. Nested
   * Sequentials are walked too. Modules that are not fused are shared with {@code model}, which is not
   * changed. The copy is in eval mode and meant for inference.
   *
   * @throws IllegalStateException when {@code model} is in training mode
   */
  public static Sequential fuse(Sequential model) {
    if (model.isTraining()) {
      throw new IllegalStateException("Fuse.fuse: the model is in training mode; fusion folds BatchNorm's running"
          + " statistics, which only eval mode uses; hint: call model.eval() first");
    }
    List<Module> in = model.children();
    List<Module> out = new ArrayList<>(in.size());
    for (int i = 0; i < in.size(); ) {
      Module m = in.get(i);
      Module next = i + 1 < in.size() ? in.get(i + 1) : null;
      Module fused = null;
      int used = 1;
      if (m instanceof Conv2d conv && next instanceof BatchNorm2d bn) {
        fused = convBn(conv, bn);
        used = 2;
      } else if (m instanceof Linear lin && next instanceof BatchNorm1d bn) {
        fused = linearBn(lin, bn);
        used = 2;
      } else if (m instanceof Conv2d || m instanceof Linear) {
        fused = m;
      }
      if (fused != null) {
        Module after = i + used < in.size() ? in.get(i + used) : null;
        if (after instanceof ReLU) {
          fused = fused instanceof Conv2d c ? new ConvReLU2d(c) : new LinearReLU((Linear) fused);
          used++;
        }
      }
      if (fused == null || used == 1) {
        out.add(m instanceof Sequential s ? fuse(s) : m);
        i++;
        continue;
      }
      fused.eval();
      out.add(fused);
      for (int k = 1; k < used; k++) out.add(new Identity());
      i += used;
    }
    Sequential result = new Sequential(out);
    result.eval();
    return result;
  }

  private static void checkEval(String op, Module layer, BatchNormBase bn) {
    if (layer.isTraining() || bn.isTraining()) {
      throw new IllegalStateException("Fuse." + op + ": fusion is for eval mode only, but " + (bn.isTraining()
          ? bn.name() : layer.name()) + " is training (a training BatchNorm uses batch statistics, which no fixed"
          + " weight reproduces); hint: call eval() on the model first");
    }
    if (!bn.trackRunningStats()) {
      throw new IllegalArgumentException("Fuse." + op + ": " + bn + " does not track running statistics, so it"
          + " normalizes by batch statistics even in eval mode and cannot be folded");
    }
  }

  /**
   * dstW = w * s per output channel (w's first dimension), dstB = (b - mean) * s + beta, with
   * s = gamma / sqrt(var + eps), in double, rounded once to the destination dtype.
   */
  private static void fold(Tensor w, Tensor b, BatchNormBase bn, Tensor dstW, Tensor dstB) {
    int o = w.size(0);
    double[] mean = bn.runningMean().toDoubleArray();
    double[] var = bn.runningVar().toDoubleArray();
    double[] gamma = bn.weight() == null ? null : bn.weight().toDoubleArray();
    double[] beta = bn.bias() == null ? null : bn.bias().toDoubleArray();
    double[] bias = b == null ? null : b.toDoubleArray();
    double[] wd = w.contiguous().toDoubleArray();
    int per = wd.length / o;
    double[] fb = new double[o];
    for (int c = 0; c < o; c++) {
      double s = (gamma == null ? 1 : gamma[c]) / Math.sqrt(var[c] + bn.eps());
      for (int k = c * per; k < (c + 1) * per; k++) wd[k] *= s;
      fb[c] = ((bias == null ? 0 : bias[c]) - mean[c]) * s + (beta == null ? 0 : beta[c]);
    }
    DType dt = w.dtype();
    try (Grad ignored = Grad.off()) {
      dstW.copy_(Tensor.of(wd, w.shape()).to(dt).to(w.device()));
      dstB.copy_(Tensor.of(fb, o).to(dt).to(w.device()));
    }
  }
}
