package dev.ember.data;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;

/**
 * Mirrors an image {@code [..., H, W]} left to right with probability {@code p} (as torchvision's
 * {@code RandomHorizontalFlip}). Draws exactly one {@code gen.nextDouble()} per call and flips when
 * it is below {@code p}; an unflipped image is returned as is.
 */
public final class RandomHorizontalFlip implements Transform {
  private final double p;

  /** Flips with probability {@code p} in [0, 1]. */
  public RandomHorizontalFlip(double p) {
    if (!(p >= 0 && p <= 1)) throw new IllegalArgumentException("RandomHorizontalFlip: p must be in [0, 1], got " + p);
    this.p = p;
  }

  /** Flips with probability 0.5. */
  public RandomHorizontalFlip() {
    this(0.5);
  }

  @Override
  public Tensor apply(Tensor x, Generator gen) {
    Images.checkRank("RandomHorizontalFlip", x, 2, "[..., H, W]");
    if (!(gen.nextDouble() < p)) return x;
    return flip(x);
  }

  /** {@code x} mirrored along its last dimension. */
  static Tensor flip(Tensor x) {
    Tensor src = Images.dense(x);
    int w = x.size(-1);
    int rows = w == 0 ? 0 : (int) (x.numel() / w);
    if (x.dtype() == dev.ember.tensor.DType.F32) {
      float[] b = src.toFloatArray(); // one bulk copy, each row then reversed in place
      for (int r = 0; r < rows; r++) {
        for (int i = r * w, j = i + w - 1; i < j; i++, j--) {
          float t = b[i];
          b[i] = b[j];
          b[j] = t;
        }
      }
      return TensorData.wrap(b, x.shape());
    }
    Tensor out = Tensor.empty(x.dtype(), x.shape());
    Storage s = src.storage(), o = out.storage();
    int so = src.offset();
    for (int r = 0; r < rows; r++) {
      int base = r * w;
      for (int j = 0; j < w; j++) Images.copyOne(s, so + base + w - 1 - j, o, base + j);
    }
    return out;
  }

  @Override
  public String toString() {
    return "RandomHorizontalFlip(p=" + p + ")";
  }
}
