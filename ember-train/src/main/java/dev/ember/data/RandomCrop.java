package dev.ember.data;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.util.Arrays;

/**
 * Pads an image {@code [..., H, W]} with {@code padding} zeros on every side, then cuts a
 * {@code height x width} window at a random position (as torchvision's {@code RandomCrop} with
 * zero padding). The top row is drawn first ({@code gen.nextLong(H + 2p - height + 1)}), then the
 * left column.
 */
public final class RandomCrop implements Transform {
  private final int height;
  private final int width;
  private final int padding;

  /** A square {@code size x size} crop after {@code padding} zeros on each side. */
  public RandomCrop(int size, int padding) {
    this(size, size, padding);
  }

  /** A {@code height x width} crop after {@code padding} zeros on each side. */
  public RandomCrop(int height, int width, int padding) {
    if (height < 1 || width < 1 || padding < 0) {
      throw new IllegalArgumentException("RandomCrop: size must be positive and padding non-negative, got height="
          + height + ", width=" + width + ", padding=" + padding);
    }
    this.height = height;
    this.width = width;
    this.padding = padding;
  }

  @Override
  public Tensor apply(Tensor x, Generator gen) {
    Images.checkRank("RandomCrop", x, 2, "[..., H, W]");
    int[] shape = x.shape();
    int r = shape.length;
    int h = shape[r - 2], w = shape[r - 1];
    int ph = h + 2 * padding, pw = w + 2 * padding;
    if (ph < height || pw < width) {
      throw new IllegalArgumentException("RandomCrop: crop " + height + "x" + width + " is larger than the padded image "
          + ph + "x" + pw + " (padding " + padding + "): x=" + Arrays.toString(shape));
    }
    int top = (int) gen.nextLong(ph - height + 1);
    int left = (int) gen.nextLong(pw - width + 1);
    return crop(x, top - padding, left - padding);
  }

  /** The window whose top-left corner is at ({@code y0}, {@code x0}) in unpadded coordinates; outside is zero. */
  private Tensor crop(Tensor x, int y0, int x0) {
    Tensor src = Images.dense(x);
    int[] shape = x.shape();
    int r = shape.length;
    int h = shape[r - 2], w = shape[r - 1];
    int[] outShape = shape.clone();
    outShape[r - 2] = height;
    outShape[r - 1] = width;
    Tensor out = Tensor.empty(x.dtype(), outShape); // zero-filled: the padding
    int planes = 1;
    for (int d = 0; d < r - 2; d++) planes *= shape[d];
    int c0 = Math.max(0, x0), c1 = Math.min(w, x0 + width); // source columns inside the window
    for (int p = 0; p < planes; p++) {
      for (int y = 0; y < height; y++) {
        int sy = y0 + y;
        if (sy < 0 || sy >= h || c1 <= c0) continue;
        TensorData.copy(src, (p * h + sy) * w + c0, out, (p * height + y) * width + (c0 - x0), c1 - c0);
      }
    }
    return out;
  }

  @Override
  public String toString() {
    return "RandomCrop(" + height + "x" + width + ", padding=" + padding + ")";
  }
}
