package dev.ember.nn.quant;

import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import java.util.ArrayList;
import java.util.Map;

/**
 * Post-training quantization of whole models. {@link #dynamic} is {@code torch.ao.quantization.quantize_dynamic}
 * with its default config for Linear (per-channel symmetric qint8 weights, activations quantized per batch).
 */
public final class Quantize {
  private Quantize() {}

  /**
   * Replaces every {@link Linear} in {@code model} (at any depth) by a {@link DynamicQuantizedLinear} made from its
   * current weight and bias, in place (torch's {@code inplace=True}), puts the model in eval mode and returns it.
   * A model that is itself a Linear cannot be replaced in place: the quantized layer is returned instead.
   */
  public static Module dynamic(Module model) {
    if (model instanceof Linear l && l.getClass() == Linear.class) return DynamicQuantizedLinear.from(l);
    replace(model);
    model.eval();
    return model;
  }

  private static void replace(Module parent) {
    for (Map.Entry<String, Module> e : new ArrayList<>(parent.namedChildren().entrySet())) {
      Module m = e.getValue();
      if (m instanceof Linear l && l.getClass() == Linear.class) {
        parent.replaceChild(e.getKey(), DynamicQuantizedLinear.from(l));
      } else {
        replace(m);
      }
    }
  }
}
