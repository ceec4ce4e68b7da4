package dev.ember.nn.quant;

import dev.ember.nn.LSTM;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import java.util.ArrayList;
import java.util.Map;

/**
 * Post-training quantization of whole models. {@link #dynamic} is {@code torch.ao.quantization.quantize_dynamic}
 * for Linear and LSTM (per-channel symmetric qint8 weights, activations quantized per call).
 */
public final class Quantize {
  private Quantize() {}

  /**
   * Replaces every {@link Linear} in {@code model} (at any depth) by a {@link DynamicQuantizedLinear} and every
   * {@link LSTM} by a {@link DynamicQuantizedLSTM}, made from their current weights, in place (torch's
   * {@code inplace=True}), puts the model in eval mode and returns it. A model that is itself a Linear or an LSTM
   * cannot be replaced in place: the quantized layer is returned instead. Subclasses of either are left alone (their
   * forward may differ).
   */
  public static Module dynamic(Module model) {
    Module q = quantized(model);
    if (q != null) return q;
    replace(model);
    model.eval();
    return model;
  }

  private static void replace(Module parent) {
    for (Map.Entry<String, Module> e : new ArrayList<>(parent.namedChildren().entrySet())) {
      Module m = e.getValue();
      Module q = quantized(m);
      if (q != null) parent.replaceChild(e.getKey(), q);
      else replace(m);
    }
  }

  /** The dynamically quantized replacement of m, or null when m is not a layer that has one. */
  private static Module quantized(Module m) {
    if (m instanceof Linear l && l.getClass() == Linear.class) return DynamicQuantizedLinear.from(l);
    if (m instanceof LSTM l && l.getClass() == LSTM.class) return DynamicQuantizedLSTM.from(l);
    return null;
  }
}
