package dev.ember.nn;

import dev.ember.tensor.Tensor;
import java.util.List;

/**
 * A stack of {@code num_layers} copies of a decoder layer, then an optional final norm, as
 * {@code nn.TransformerDecoder}: children {@code layers} (a {@link ModuleList}) and {@code norm} when
 * given. Every copy starts with the given layer's parameters, as PyTorch's deepcopy.
 */
public class TransformerDecoder extends Module {
  private final ModuleList layers;
  private final Module norm;

  public TransformerDecoder(TransformerDecoderLayer decoderLayer, int numLayers) {
    this(decoderLayer, numLayers, null);
  }

  /** @param norm applied to the last layer's output (a {@link LayerNorm} usually), or null */
  public TransformerDecoder(TransformerDecoderLayer decoderLayer, int numLayers, Module norm) {
    if (numLayers <= 0) throw new IllegalArgumentException(name() + ": num_layers must be positive, got " + numLayers);
    layers = new ModuleList();
    for (int i = 0; i < numLayers; i++) layers.add(decoderLayer.copy());
    registerModule("layers", layers);
    this.norm = norm == null ? null : registerModule("norm", norm);
  }

  public int numLayers() {
    return layers.size();
  }

  public TransformerDecoderLayer layer(int i) {
    return (TransformerDecoderLayer) layers.get(i);
  }

  /** Without masks. */
  public Tensor forward(Tensor tgt, Tensor memory) {
    return forward(tgt, memory, null, null, null, null, false, false);
  }

  /** Each layer with the same masks (see {@link TransformerDecoderLayer}), then the norm. */
  public Tensor forward(Tensor tgt, Tensor memory, Tensor tgtMask, Tensor memoryMask, Tensor tgtKeyPaddingMask,
      Tensor memoryKeyPaddingMask, boolean tgtIsCausal, boolean memoryIsCausal) {
    Tensor x = tgt;
    for (Module m : layers) {
      TransformerDecoderLayer layer = (TransformerDecoderLayer) m;
      Tensor in = x;
      x = layer.call(List.of(in, memory), () -> layer.forward(in, memory, tgtMask, memoryMask, tgtKeyPaddingMask,
          memoryKeyPaddingMask, tgtIsCausal, memoryIsCausal));
    }
    return norm == null ? x : norm.call(x);
  }
}
