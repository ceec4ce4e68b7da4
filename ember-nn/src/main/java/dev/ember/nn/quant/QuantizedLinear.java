package dev.ember.nn.quant;

import dev.ember.backend.Backend;
import dev.ember.quant.Observer;
import dev.ember.quant.QDType;
import dev.ember.quant.QParams;
import dev.ember.quant.QTensor;
import dev.ember.quant.Quantization;
import dev.ember.tensor.Check;
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;

/**
 * A Linear of static quantized inference, as {@code torch.ao.nn.quantized.Linear}: int8 weight (symmetric qint8, per
 * output channel or per tensor), fixed input and output quantization parameters chosen by calibration. Forward
 * quantizes the float input with the input parameters, multiplies int8 x int8 summing in int32, and in the GEMM's
 * output loop dequantizes, adds the float32 bias and requantizes with the output parameters
 * ({@link Backend#int8LinearRequantize}); the float32 result is that int8 output dequantized, so every value lies on
 * the output grid {@code (q - zeroPoint) * scale} and the next quantized layer recovers q exactly (see the package
 * documentation). Inference only: no parameters, no gradient. The state lives in buffers (see the package
 * documentation's layout), so {@code stateDict()} carries it.
 */
public class QuantizedLinear extends StaticQuantizedLayer {
  private final String op;
  private final int inFeatures;
  private final int outFeatures;
  private final boolean relu;

  /**
   * A layer from an int8 weight [out, in], a float bias [out] (or null) and the per-tensor parameters of its input
   * and output.
   */
  public QuantizedLinear(QTensor weight, Tensor bias, QParams input, QParams output) {
    this("QuantizedLinear", weight, bias, input, output, false);
  }

  QuantizedLinear(String op, QTensor weight, Tensor bias, QParams input, QParams output, boolean relu) {
    this.op = op;
    StaticInt8.weight(op, weight);
    if (weight.dim() != 2) throw new IllegalArgumentException(op + ": weight must be 2-d [out, in], got " + weight);
    this.outFeatures = weight.shape()[0];
    this.inFeatures = weight.shape()[1];
    if (bias != null && (bias.dim() != 1 || bias.size(0) != outFeatures)) {
      throw Check.fail(op, "bias must be [out_features] (" + outFeatures + ")", "bias", bias);
    }
    if (inFeatures > Backend.INT8_MAX_K) {
      throw new IllegalArgumentException(op + ": in_features must be <= " + Backend.INT8_MAX_K
          + " (int32 accumulation), got " + inFeatures);
    }
    StaticInt8.activation(op, "input", input);
    StaticInt8.activation(op, "output", output);
    this.state = StaticState.register(this, weight, bias, input, output);
    this.relu = relu;
    eval();
  }

  /** Quantizes a float weight with a weight observer that sees only it (as torch's convert does). */
  static QTensor quantizeWeight(Tensor weight, Observer observer) {
    Tensor w = weight.detach();
    observer.observe(w);
    return Quantization.quantize(w, observer.calculateQParams());
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
      throw Check.fail(op, "input's last dimension must be in_features (" + inFeatures + ")", "input", x);
    }
    StaticInt8.checkInput(op, x);
    float[] v = x.toFloatArray();
    int m = inFeatures == 0 ? 0 : v.length / inFeatures;
    int[] outShape = x.shape();
    outShape[outShape.length - 1] = outFeatures;
    StaticState st = state;
    st.refresh(this);
    QParams input = st.input;
    QParams output = st.output;
    byte[] a = StaticInt8.quantizeSigned(v, input);
    byte[] q = new byte[m * outFeatures];
    int outZero = output.zeroPoints()[0];
    Device.CPU.backend().int8LinearRequantize(a, StaticInt8.signedZero(input), input.scales()[0], st.wm, st.rowSum,
        st.rowScale, st.bias, output.scales()[0], outZero, StaticInt8.outMin(output, relu), output.dtype().max(), q, m);
    float s = output.scales()[0];
    QDType t = output.dtype();
    float[] out = new float[q.length];
    for (int i = 0; i < q.length; i++) out[i] = (t.read(q[i]) - outZero) * s;
    return Tensor.of(out, outShape);
  }

  @Override
  protected String extraRepr() {
    state.refresh(this);
    return "in_features=" + inFeatures + ", out_features=" + outFeatures + ", scale=" + state.output.scales()[0]
        + ", zero_point=" + state.output.zeroPoints()[0] + ", qscheme=" + (state.wScales.length == outFeatures
        && outFeatures > 1 ? "per_channel_symmetric" : "per_tensor_symmetric");
  }
}
