package dev.ember.nn;

import dev.ember.tensor.Tensor;
import java.util.List;

/**
 * A stack of {@code num_layers} copies of an encoder layer, then an optional final norm, as
 * {@code nn.TransformerEncoder}: children {@code layers} (a {@link ModuleList}, so parameters are
 * {@code layers.0.self_attn.in_proj_weight}, ...) and {@code norm} when given. As PyTorch's deepcopy,
 * every copy starts with the given layer's parameters; the given layer itself is not part of the stack.
 */
public class TransformerEncoder extends Module {
  private final ModuleList layers;
  private final Module norm;

  public TransformerEncoder(TransformerEncoderLayer encoderLayer, int numLayers) {
    this(encoderLayer, numLayers, null);
  }

  /** @param norm applied to the last layer's output (a {@link LayerNorm} usually), or null */
  public TransformerEncoder(TransformerEncoderLayer encoderLayer, int numLayers, Module norm) {
    if (numLayers <= 0) throw new IllegalArgumentException(name() + ": num_layers must be positive, got " + numLayers);
    layers = new ModuleList();
    for (int i = 0; i < numLayers; i++) layers.add(encoderLayer.copy());
    registerModule("layers", layers);
    this.norm = norm == null ? null : registerModule("norm", norm);
  }

  public int numLayers() {
    return layers.size();
  }

  public TransformerEncoderLayer layer(int i) {
    return (TransformerEncoderLayer) layers.get(i);
  }

  @Override
  public Tensor forward(Tensor src) {
    return forward(src, null, null, false);
  }

  /** Each layer with the same masks (see {@link TransformerEncoderLayer#forward(Tensor, Tensor, Tensor, boolean)}), then the norm. */
  public Tensor forward(Tensor src, Tensor mask, Tensor srcKeyPaddingMask, boolean isCausal) {
    Tensor x = src;
    for (Module m : layers) {
      TransformerEncoderLayer layer = (TransformerEncoderLayer) m;
      Tensor in = x;
      x = layer.call(List.of(in), () -> layer.forward(in, mask, srcKeyPaddingMask, isCausal));
    }
    return norm == null ? x : norm.call(x);
  }
}
