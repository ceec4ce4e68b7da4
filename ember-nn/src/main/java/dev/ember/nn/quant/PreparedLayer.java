package dev.ember.nn.quant;

import dev.ember.nn.Conv2d;
import dev.ember.nn.ConvReLU2d;
import dev.ember.nn.Linear;
import dev.ember.nn.LinearReLU;
import dev.ember.nn.Module;
import dev.ember.nn.functional.Convolution;
import dev.ember.nn.functional.F;
import dev.ember.quant.QParams;
import dev.ember.quant.QTensor;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * A Linear, Conv2d, LinearReLU or ConvReLU2d (child "0") prepared for static quantization by {@link Quantize#prepare}
 * or {@link Quantize#prepareQat}: {@link FakeQuantize} modules on its input ("input_quant"), output ("output_quant")
 * and, for QAT, weight ("weight_fake_quant"). After prepare they only observe (post-training calibration); after
 * prepareQat they also round, so training sees the quantization error. {@link Quantize#convert} replaces this module
 * by the quantized layer.
 *
 * <p>Chaining: on the first forward the layer checks whether its input was made from the output of the prepared layer
 * that ran just before it in the same model forward by ops that keep values on a grid (ReLU, MaxPool2d, Flatten,
 * Dropout in eval: every input value is 0 or one of that output's values). If so, that layer is its producer: the
 * quantized layer reads its input with the producer's output parameters (the int8 values pass through unchanged, as
 * in torch's int8 pipeline) and, in QAT, the input is not rounded a second time. Otherwise (the model input, or
 * after an op such as an add) the layer quantizes its input with the parameters its own input observer chose: that is
 * the model-input quantize step.
 */
public final class PreparedLayer extends Module {
  /** State shared by the prepared layers of one model: the last one that ran in the current forward. */
  static final class Chain {
    PreparedLayer last;
    Tensor lastOutput;
    float[] lastSorted;
    dev.ember.nn.HookHandle hook;
  }

  private final Module layer;
  private final String path;
  private final QConfig qconfig;
  private final boolean qat;
  private final Chain chain;
  private final FakeQuantize inputQuant;
  private final FakeQuantize outputQuant;
  private final FakeQuantize weightQuant;
  private boolean linkDecided;
  private PreparedLayer producer;
  private long batches;

  PreparedLayer(Module layer, String path, QConfig qconfig, boolean qat, Chain chain) {
    this.layer = registerModule("0", layer);
    this.path = path;
    this.qconfig = qconfig;
    this.qat = qat;
    this.chain = chain;
    this.inputQuant = registerModule("input_quant", new FakeQuantize(qconfig.activation().get(), qat));
    this.weightQuant = qat ? registerModule("weight_fake_quant", new FakeQuantize(qconfig.weight().get(), true)) : null;
    this.outputQuant = registerModule("output_quant", new FakeQuantize(qconfig.activation().get(), qat));
  }

  static boolean supports(Module m) {
    return (m instanceof Linear && m.getClass() == Linear.class) || (m instanceof Conv2d && m.getClass() == Conv2d.class)
        || m instanceof LinearReLU || m instanceof ConvReLU2d;
  }

  Chain chain() {
    return chain;
  }

  /** The float layer. */
  public Module layer() {
    return layer;
  }

  /** Where the layer sits in the model (its dotted name, "" for the model itself). */
  public String path() {
    return path;
  }

  /** The prepared layer whose output this one's input is made from (see the class documentation), or null. */
  public PreparedLayer producer() {
    return producer;
  }

  public FakeQuantize inputQuant() {
    return inputQuant;
  }

  public FakeQuantize outputQuant() {
    return outputQuant;
  }

  /** The weight's fake quantization (QAT), or null after a post-training prepare. */
  public FakeQuantize weightFakeQuant() {
    return weightQuant;
  }

  @Override
  public Tensor forward(Tensor x) {
    if (!linkDecided) {
      producer = chain.last != null && chain.last != this && madeFrom(x) ? chain.last : null;
      linkDecided = true;
    }
    if (producer == null) x = inputQuant.call(x);
    Tensor y = qat ? fakeQuantForward(x) : layer.call(x);
    y = outputQuant.call(y);
    batches++;
    chain.last = this;
    chain.lastOutput = y;
    chain.lastSorted = null;
    return y;
  }

  /** Whether every value of x is 0 or a value of the last prepared layer's output. */
  private boolean madeFrom(Tensor x) {
    if (chain.lastSorted == null) {
      chain.lastSorted = chain.lastOutput.toFloatArray();
      Arrays.sort(chain.lastSorted);
    }
    float[] sorted = chain.lastSorted;
    for (float f : x.toFloatArray()) {
      if (f != 0 && Arrays.binarySearch(sorted, f) < 0) return false;
    }
    return true;
  }

  private Tensor fakeQuantForward(Tensor x) {
    if (layer instanceof Linear l) return F.linear(x, weightQuant.call(l.weight()), l.bias());
    if (layer instanceof LinearReLU lr) {
      return F.linear(x, weightQuant.call(lr.linear().weight()), lr.linear().bias()).relu();
    }
    Conv2d c = layer instanceof ConvReLU2d cr ? cr.conv() : (Conv2d) layer;
    Tensor w = weightQuant.call(c.weight());
    boolean relu = layer instanceof ConvReLU2d;
    if (c.paddingString() != null) {
      return relu
          ? Convolution.conv2dRelu(x, w, c.bias(), c.stride(), c.paddingString(), c.dilation(), c.groups(), c.paddingMode())
          : Convolution.conv2d(x, w, c.bias(), c.stride(), c.paddingString(), c.dilation(), c.groups(), c.paddingMode());
    }
    return relu
        ? Convolution.conv2dRelu(x, w, c.bias(), c.stride(), c.padding(), c.dilation(), c.groups(), c.paddingMode())
        : Convolution.conv2d(x, w, c.bias(), c.stride(), c.padding(), c.dilation(), c.groups(), c.paddingMode());
  }

  /** The quantized layer (see {@link Quantize#convert}). */
  Module convert() {
    checkCalibrated();
    return quantized();
  }

  void checkCalibrated() {
    if (batches == 0) {
      throw new IllegalStateException("Quantize.convert: layer '" + path + "' (" + layer.getClass().getSimpleName()
          + ") saw no calibration data; run forward passes of calibration data through the prepared model before"
          + " convert");
    }
  }

  private Module quantized() {
    QParams in = producer != null ? producer.outputQuant.qparams() : inputQuant.qparams();
    QParams out = outputQuant.qparams();
    String op = "Quantize.convert (layer '" + path + "')";
    if (in == null || out == null) {
      throw new IllegalStateException(op + ": an activation observer was disabled before it observed anything");
    }
    Conv2d conv = layer instanceof ConvReLU2d cr ? cr.conv() : layer instanceof Conv2d c ? c : null;
    Linear lin = layer instanceof LinearReLU lr ? lr.linear() : layer instanceof Linear l ? l : null;
    Tensor weight = conv != null ? conv.weight() : lin.weight();
    Tensor bias = conv != null ? conv.bias() : lin.bias();
    QTensor wq = QuantizedLinear.quantizeWeight(weight, qat ? weightQuant.observer() : qconfig.weight().get());
    Tensor b = bias == null ? null : bias.detach();
    if (lin != null) {
      return layer instanceof LinearReLU ? new QuantizedLinearReLU(wq, b, in, out) : new QuantizedLinear(wq, b, in, out);
    }
    if (!conv.paddingMode().equals("zeros")) {
      throw new IllegalArgumentException(op + ": quantized Conv2d supports padding_mode 'zeros' only, got '"
          + conv.paddingMode() + "'");
    }
    int[] pad = QuantizedConv2d.padding(conv);
    return layer instanceof ConvReLU2d
        ? new QuantizedConvReLU2d(wq, b, conv.stride(), pad, conv.dilation(), conv.groups(), in, out)
        : new QuantizedConv2d(wq, b, conv.stride(), pad, conv.dilation(), conv.groups(), in, out);
  }

  @Override
  protected String extraRepr() {
    return (qat ? "qat" : "observed") + (producer != null ? ", input from '" + producer.path + "'" : "");
  }
}
