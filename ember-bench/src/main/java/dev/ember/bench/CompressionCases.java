package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.nn.BatchNorm2d;
import dev.ember.nn.BatchNormBase;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Fuse;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.prune.Prune;
import dev.ember.nn.quant.QConfig;
import dev.ember.nn.quant.Quantize;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code compression} category, mirrored by bench/peers/pytorch_compression.py: inference without the tape of a
 * model and of its compressed form, on the same input, in microseconds per batch (lower is better):
 * <ul>
 *   <li>{@code mlp_infer}: the Fashion-MNIST MLP 784-256-128-10 at batch 1 and 128, F32 against {@link
 *       Quantize#dynamic} (int8 weights per channel, activations quantized per batch) and against static
 *       post-training int8 ({@link #staticInt8}); torch: {@code torch.ao.quantization.quantize_dynamic} of the same
 *       model, and eager-mode static PTQ with the same observers (fuse_modules, QuantStub/DeQuantStub, prepare, the
 *       same 4 calibration batches, convert), both on one quantized engine (onednn by default);
 *   <li>{@code lenet_infer}: LeNet-5 on 1x28x28 at batch 1 and 128, unpruned against 50% structured pruning that
 *       shrinks: {@link Prune#lnStructured} (L1, dim 0, amount 0.5) of both convolutions' output channels and both
 *       hidden Linear layers' neurons, each followed by {@link Prune#shrinkOutputs} (conv 1-&gt;3-&gt;8 channels, Linear
 *       200-60-42-10). torch's {@code ln_structured} only zeroes, so its peer is the equally smaller model built
 *       directly; and static int8 as the MLP's;
 *   <li>{@code convnet_infer}: the VGG-style {@code Models.convnet(3, 32, 10)} at batch 64 (FuseBench's model),
 *       unfused, BatchNorm folded ({@link Fuse#convBn}) and BatchNorm folded with Conv+ReLU and Linear+ReLU fused
 *       ({@link Fuse#fuse}); torch: {@code fuse_modules} of conv+bn, and of conv+bn+relu and linear+relu (in float
 *       its ConvReLU2d still runs the ReLU as its own op).
 * </ul>
 * Weights come from {@code Generator.manualSeed(0)} as in torch's {@code torch.manual_seed(0)}, inputs from
 * {@code Generator(1)}, as the peer's; the convnet's BatchNorms get random statistics so that folding is not the
 * identity. Each call runs in its own {@link MemoryScope} with the tape off.
 */
final class CompressionCases {
  static final int[] MLP_BATCHES = {1, 128};
  static final int[] LENET_BATCHES = {1, 128};
  static final int CONVNET_BATCH = 64;
  private static volatile Object sink;

  private CompressionCases() {}

  /** The cases; models and inputs are built here, outside every scope (a few MB in all). */
  static List<BenchCase> cases() {
    List<BenchCase> out = new ArrayList<>();
    Module mlp = mlp();
    Module mlpInt8 = Quantize.dynamic(mlp());
    Module mlpStatic = staticInt8(mlp(), 784);
    for (int b : MLP_BATCHES) {
      Tensor x = Tensor.randn(new Generator(1), b, 784);
      out.add(infer("mlp_infer", "784-256-128-10 b=" + b + " f32", mlp, x));
      out.add(infer("mlp_infer", "784-256-128-10 b=" + b + " int8_dynamic", mlpInt8, x));
      out.add(infer("mlp_infer", "784-256-128-10 b=" + b + " int8_static", mlpStatic, x));
    }
    Module lenet = lenet();
    Module pruned = pruneAndShrink(lenet(), 0.5);
    Module lenetStatic = staticInt8(lenet(), 1, 28, 28);
    for (int b : LENET_BATCHES) {
      Tensor x = Tensor.randn(new Generator(1), b, 1, 28, 28);
      out.add(infer("lenet_infer", "b=" + b + " unpruned", lenet, x));
      out.add(infer("lenet_infer", "b=" + b + " pruned50_shrunk", pruned, x));
      out.add(infer("lenet_infer", "b=" + b + " int8_static", lenetStatic, x));
    }
    Sequential convnet = convnet();
    Tensor cx = Tensor.randn(new Generator(1), CONVNET_BATCH, 3, 32, 32);
    String cb = "b=" + CONVNET_BATCH;
    out.add(infer("convnet_infer", cb + " unfused", convnet, cx));
    out.add(infer("convnet_infer", cb + " bn_folded", foldOnly(convnet), cx));
    out.add(infer("convnet_infer", cb + " bn_relu_fused", Fuse.fuse(convnet), cx));
    return out;
  }

  /** Models.mlp(784, 256, 128, 10) from seed 0, in eval mode. */
  static Module mlp() {
    Generator.manualSeed(0);
    return Models.mlp(784, 256, 128, 10).eval();
  }

  /** Models.lenet5(10) from seed 0, in eval mode. */
  static Module lenet() {
    Generator.manualSeed(0);
    return Models.lenet5(10).eval();
  }

  /**
   * The layers of LeNet-5 that structured pruning shrinks, in the order they run: both convolutions and both hidden
   * Linear layers (not the classifier's output).
   */
  static final List<String> LENET_PRUNED = List.of("features.0", "features.3", "classifier.1", "classifier.3");

  /**
   * {@code model} (LeNet-5) with the fraction {@code amount} of the output channels or neurons of each layer of
   * {@link #LENET_PRUNED} removed by {@link Prune#shrinkStructured} (L1 norm), layer by layer in order (shrinking a
   * layer rebuilds the next one's input side). In place; returns {@code model}.
   */
  static Module pruneAndShrink(Module model, double amount) {
    for (String name : LENET_PRUNED) {
      Prune.shrinkStructured(model, name, amount, 1);
    }
    return model;
  }

  /**
   * Static post-training int8 of {@code model} (the MLP or LeNet-5): its Linear/Conv2d + ReLU pairs fused ({@link
   * Fuse#fuse}; LeNet-5 becomes the Sequential of its fused halves), {@link Quantize#prepare} with {@link
   * QConfig#ptqDefault()} (per-tensor affine quint8 activations, per-channel symmetric qint8 weights), 4 calibration
   * batches of 32 standard-normal inputs of shape {@code inShape} from {@code Generator(3)}, then {@link
   * Quantize#convert}.
   */
  static Module staticInt8(Module model, int... inShape) {
    Sequential fused = model instanceof Sequential s ? Fuse.fuse(s)
        : new Sequential(Fuse.fuse((Sequential) model.child("features")),
            Fuse.fuse((Sequential) model.child("classifier")));
    Module prepared = Quantize.prepare(fused, QConfig.ptqDefault());
    int[] shape = new int[inShape.length + 1];
    shape[0] = 32;
    System.arraycopy(inShape, 0, shape, 1, inShape.length);
    Generator gen = new Generator(3);
    try (Grad ignored = Grad.off()) {
      for (int i = 0; i < 4; i++) prepared.call(Tensor.randn(gen, shape));
    }
    return Quantize.convert(prepared);
  }

  /** FuseBench's model: Models.convnet(3, 32, 10) from seed 0 with random BatchNorm statistics, in eval mode. */
  static Sequential convnet() {
    return convnet(new Generator(2));
  }

  /**
   * Models.convnet(3, 32, 10) from seed 0, its BatchNorm statistics and affine parameters drawn from {@code gen}
   * (so folding them has something to do), in eval mode.
   */
  static Sequential convnet(Generator gen) {
    Generator.manualSeed(0);
    Sequential model = Models.convnet(3, 32, 10);
    try (Grad ignored = Grad.off()) {
      for (Module m : model.modules()) {
        if (m instanceof BatchNormBase bn) {
          int c = bn.numFeatures();
          bn.runningMean().copy_(Tensor.rand(gen, c).sub(0.5));
          bn.runningVar().copy_(Tensor.rand(gen, c).mul(1.5).add(0.5));
          bn.weight().copy_(Tensor.rand(gen, c).mul(1.5).add(0.25));
          bn.bias().copy_(Tensor.rand(gen, c).sub(0.5));
        }
      }
    }
    model.eval();
    return model;
  }

  /** The model with each Conv2d-BatchNorm2d pair folded and everything else (the ReLUs too) as it was. */
  static Sequential foldOnly(Sequential model) {
    List<Module> out = new ArrayList<>();
    for (int i = 0; i < model.size(); i++) {
      Module m = model.get(i);
      if (m instanceof Conv2d c && i + 1 < model.size() && model.get(i + 1) instanceof BatchNorm2d bn) {
        out.add(Fuse.convBn(c, bn));
        i++;
      } else {
        out.add(m);
      }
    }
    Sequential s = new Sequential(out);
    s.eval();
    return s;
  }

  private static BenchCase infer(String workload, String name, Module model, Tensor x) {
    return BenchCase.latency(workload, name, "latency", "us/batch", 1e6, () -> {
      try (MemoryScope call = MemoryScope.open(); Grad ignored = Grad.off()) {
        sink = model.call(x);
      }
    });
  }
}
