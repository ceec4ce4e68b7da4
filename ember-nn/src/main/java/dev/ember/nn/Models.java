package dev.ember.nn;

import dev.ember.tensor.Tensor;

/**
 * The reference architectures that Ember's CLI trains and its benchmarks measure, defined exactly
 * as their PyTorch twins in {@code shared/peers} (same layers, sizes and initialisation rules), so
 * results compare one to one. Weights come from the global generator: seed it first
 * ({@code Generator.manualSeed(seed)}) for a reproducible model.
 */
public final class Models {
  private Models() {}

  /**
   * A multi-layer perceptron on flattened inputs: {@code Flatten}, then {@code Linear} layers of
   * the given widths with ReLU between them (none after the last). {@code mlp(784, 256, 128, 10)}
   * is the Fashion-MNIST MLP.
   */
  public static Sequential mlp(int... widths) {
    if (widths.length < 2) throw new IllegalArgumentException("Models.mlp: need at least an input and an output width, got "
        + java.util.Arrays.toString(widths));
    Sequential s = new Sequential(new Flatten());
    for (int i = 0; i + 1 < widths.length; i++) {
      if (i > 0) s.add(new ReLU());
      s.add(new Linear(widths[i], widths[i + 1]));
    }
    return s;
  }

  /**
   * LeNet-5 for 1x28x28 images (61,706 parameters): {@code features} =
   * Conv2d(1,6,5,padding=2)-ReLU-MaxPool2d(2)-Conv2d(6,16,5)-ReLU-MaxPool2d(2), {@code classifier} =
   * Flatten-Linear(400,120)-ReLU-Linear(120,84)-ReLU-Linear(84,classes).
   */
  public static Module lenet5(int classes) {
    Sequential features = new Sequential(
        new Conv2d(1, 6, 5, 1, 2), new ReLU(), new MaxPool2d(2),
        new Conv2d(6, 16, 5), new ReLU(), new MaxPool2d(2));
    Sequential classifier = new Sequential(new Flatten(), new Linear(400, 120), new ReLU(), new Linear(120, 84), new ReLU(),
        new Linear(84, classes));
    return new LeNet5(features, classifier);
  }

  /**
   * A small VGG-style network for {@code channels x size x size} images (size divisible by 4):
   * two blocks of two 3x3 convolutions (32 then 64 channels) with BatchNorm and ReLU, each block
   * ending in a 2x2 max pool, then Flatten-Linear(64*(size/4)^2, 256)-ReLU-Linear(256, classes).
   * On 3x32x32 it is the benchmark suite's "convnet".
   */
  public static Sequential convnet(int channels, int size, int classes) {
    if (size % 4 != 0) throw new IllegalArgumentException("Models.convnet: image size must be divisible by 4, got " + size);
    int flat = 64 * (size / 4) * (size / 4);
    return new Sequential(
        new Conv2d(channels, 32, 3, 1, 1), new BatchNorm2d(32), new ReLU(),
        new Conv2d(32, 32, 3, 1, 1), new BatchNorm2d(32), new ReLU(), new MaxPool2d(2),
        new Conv2d(32, 64, 3, 1, 1), new BatchNorm2d(64), new ReLU(),
        new Conv2d(64, 64, 3, 1, 1), new BatchNorm2d(64), new ReLU(), new MaxPool2d(2),
        new Flatten(), new Linear(flat, 256), new ReLU(), new Linear(256, classes));
  }

  /** LeNet's two halves under PyTorch's attribute names, so state dict keys read features.0.weight, classifier.1.weight. */
  private static final class LeNet5 extends Module {
    private final Sequential features;
    private final Sequential classifier;

    LeNet5(Sequential features, Sequential classifier) {
      this.features = registerModule("features", features);
      this.classifier = registerModule("classifier", classifier);
    }

    @Override
    public String name() {
      return "LeNet5";
    }

    @Override
    public Tensor forward(Tensor x) {
      return classifier.call(features.call(x));
    }
  }
}
