package dev.ember.nn.quant;

import dev.ember.nn.Module;
import dev.ember.quant.QParams;
import dev.ember.quant.QTensor;
import dev.ember.tensor.Tensor;
import java.util.Map;

/**
 * What the static int8 layers ({@link QuantizedLinear}, {@link QuantizedConv2d} and their ReLU forms) share: their
 * state in buffers (int8 weight, scales, zero points, bias, input and output parameters; the layout of the package
 * documentation), read back through these accessors and checked on {@code loadStateDict}.
 */
public abstract class StaticQuantizedLayer extends Module {
  /** Set once by the subclass's constructor, after it has checked its arguments. */
  StaticState state;

  StaticQuantizedLayer() {}

  /** The int8 weight with its scales (zero points 0). */
  public QTensor weight() {
    return state.weight(this);
  }

  /** The float32 bias, or null. */
  public Tensor bias() {
    state.refresh(this);
    return state.bias == null ? null : Tensor.of(state.bias.clone(), state.out);
  }

  /** The parameters the input is quantized with. */
  public QParams inputQParams() {
    state.refresh(this);
    return state.input;
  }

  /** The parameters of the int8 output. */
  public QParams outputQParams() {
    state.refresh(this);
    return state.output;
  }

  @Override
  protected void checkState(String prefix, Map<String, Tensor> dict) {
    state.checkState(prefix, dict);
  }
}
