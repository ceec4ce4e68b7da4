package dev.ember.nn.quant;

import dev.ember.nn.ForwardHook;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Quantization of whole models. {@link #dynamic} is {@code torch.ao.quantization.quantize_dynamic} with its default
 * config for Linear (per-channel symmetric qint8 weights, activations quantized per batch). {@link #prepare},
 * calibration forwards and {@link #convert} are static post-training quantization
 * ({@code torch.ao.quantization.prepare} / {@code convert}); {@link #prepareQat}, training and {@link #convert} are
 * quantization-aware training. See the package documentation for how values travel between quantized layers.
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

  /**
   * Prepares {@code model} for static post-training quantization, in place: every Linear, Conv2d, LinearReLU and
   * ConvReLU2d (at any depth) is wrapped in a {@link PreparedLayer} whose observers (from {@code qconfig}'s activation
   * factory) record the range of its input and output in each forward; run calibration data through the returned
   * model (eval mode, as it is set here), then {@link #convert} it. A model that is itself such a layer is wrapped and
   * the wrapper returned. Use {@link dev.ember.nn.Fuse#fuse} first to get the fused ReLU variants.
   *
   * @throws IllegalArgumentException when the model has no layer to quantize
   */
  public static Module prepare(Module model, QConfig qconfig) {
    Module m = prepare(model, qconfig, false);
    m.eval();
    return m;
  }

  /**
   * Prepares {@code model} for quantization-aware training, in place: as {@link #prepare}, but the wrapped layers'
   * weights, inputs and outputs pass through {@link FakeQuantize} (rounding on, observers on), so training (e.g. with
   * {@code Trainer}) sees the quantization error and learns around it; then {@link #convert}. The model is left in
   * training mode; its parameters are the float layers' own.
   */
  public static Module prepareQat(Module model, QConfig qconfig) {
    Module m = prepare(model, qconfig, true);
    m.train();
    return m;
  }

  private static Module prepare(Module model, QConfig qconfig, boolean qat) {
    if (qconfig == null) throw new IllegalArgumentException("Quantize.prepare: qconfig must not be null");
    PreparedLayer.Chain chain = new PreparedLayer.Chain();
    Module root;
    if (PreparedLayer.supports(model)) {
      root = new PreparedLayer(model, "", qconfig, qat, chain);
    } else {
      if (wrap(model, "", qconfig, qat, chain) == 0) {
        throw new IllegalArgumentException("Quantize.prepare" + (qat ? "Qat" : "") + ": no Linear, Conv2d, LinearReLU"
            + " or ConvReLU2d to quantize in " + model.getClass().getSimpleName());
      }
      root = model;
    }
    chain.hook = root.registerForwardHook(new ForwardHook() {
      @Override
      public void beforeForward(Module module, List<Tensor> inputs) {
        chain.last = null;
        chain.lastOutput = null;
        chain.lastSorted = null;
      }

      @Override
      public void afterForward(Module module, List<Tensor> inputs, Tensor output) {
        chain.last = null;
        chain.lastOutput = null;
        chain.lastSorted = null;
      }
    });
    return root;
  }

  private static int wrap(Module parent, String prefix, QConfig qconfig, boolean qat, PreparedLayer.Chain chain) {
    int n = 0;
    for (Map.Entry<String, Module> e : new ArrayList<>(parent.namedChildren().entrySet())) {
      Module m = e.getValue();
      String path = prefix.isEmpty() ? e.getKey() : prefix + "." + e.getKey();
      if (m instanceof PreparedLayer) {
        throw new IllegalArgumentException("Quantize.prepare: layer '" + path + "' is already prepared");
      }
      if (PreparedLayer.supports(m)) {
        parent.replaceChild(e.getKey(), new PreparedLayer(m, path, qconfig, qat, chain));
        n++;
      } else {
        n += wrap(m, path, qconfig, qat, chain);
      }
    }
    return n;
  }

  /**
   * Replaces every {@link PreparedLayer} of a model made by {@link #prepare} (after calibration) or
   * {@link #prepareQat} (after training) by its quantized layer, in place: {@link QuantizedLinear},
   * {@link QuantizedLinearReLU}, {@link QuantizedConv2d}, {@link QuantizedConvReLU2d}, with int8 weights (quantized now
   * by the weight observer: a fresh one from the qconfig after prepare, the trained fake quantization's after
   * prepareQat) and the observed input and output parameters. Puts the model in eval mode and returns it (the
   * quantized layer itself when the model was a single prepared layer).
   *
   * @throws IllegalStateException naming the layer when a prepared layer saw no data
   * @throws IllegalArgumentException when the model has no prepared layer
   */
  public static Module convert(Module model) {
    if (model instanceof PreparedLayer p) {
      p.chain().hook.remove();
      return p.convert();
    }
    for (Module m : model.modules()) if (m instanceof PreparedLayer p) p.checkCalibrated();  // all or nothing
    List<PreparedLayer.Chain> chains = new ArrayList<>();
    if (convert(model, chains) == 0) {
      throw new IllegalArgumentException("Quantize.convert: no prepared layer in " + model.getClass().getSimpleName()
          + "; hint: call Quantize.prepare or prepareQat first");
    }
    for (PreparedLayer.Chain c : chains) c.hook.remove();
    model.eval();
    return model;
  }

  private static int convert(Module parent, List<PreparedLayer.Chain> chains) {
    int n = 0;
    for (Map.Entry<String, Module> e : new ArrayList<>(parent.namedChildren().entrySet())) {
      if (e.getValue() instanceof PreparedLayer p) {
        parent.replaceChild(e.getKey(), p.convert());
        if (!chains.contains(p.chain())) chains.add(p.chain());
        n++;
      } else {
        n += convert(e.getValue(), chains);
      }
    }
    return n;
  }
}
