package dev.ember.data;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.util.Arrays;

/**
 * {@code (x - mean[c]) / std[c]} for each channel {@code c} of a floating-point image
 * {@code [..., C, H, W]} (as torchvision's {@code Normalize}); computed in the input's precision.
 * Deterministic: the generator is not used.
 */
public final class Normalize implements Transform {
  private final double[] mean;
  private final double[] std;

  /** One mean and one (positive) standard deviation per channel. */
  public Normalize(double[] mean, double[] std) {
    if (mean == null || std == null) throw new IllegalArgumentException("Normalize: mean and std must not be null");
    if (mean.length == 0 || mean.length != std.length) {
      throw new IllegalArgumentException("Normalize: expected one mean and one std per channel, got " + mean.length
          + " means and " + std.length + " stds");
    }
    for (int c = 0; c < std.length; c++) {
      if (!(std[c] > 0) || !Double.isFinite(std[c]) || !Double.isFinite(mean[c])) {
        throw new IllegalArgumentException("Normalize: std must be positive and finite and mean finite, got mean="
            + Arrays.toString(mean) + ", std=" + Arrays.toString(std) + " (channel " + c + ")");
      }
    }
    this.mean = mean.clone();
    this.std = std.clone();
  }

  @Override
  public Tensor apply(Tensor x, Generator gen) {
    Images.checkRank("Normalize", x, 3, "[..., C, H, W]");
    if (!x.dtype().isFloatingPoint()) {
      throw new IllegalArgumentException("Normalize: expected a floating-point image, got " + x.dtype().torchName()
          + ": x=" + Arrays.toString(x.shape()) + "; hint: apply ToTensor first");
    }
    int[] shape = x.shape();
    int channels = shape[shape.length - 3];
    if (channels != mean.length) {
      throw new IllegalArgumentException("Normalize: image has " + channels + " channels but " + mean.length
          + " means/stds were given: x=" + Arrays.toString(shape));
    }
    int plane = shape[shape.length - 2] * shape[shape.length - 1];
    int planes = (int) (x.numel() / Math.max(plane, 1));
    // The elements copied out in one bulk copy, normalised in place, and handed over as the result.
    if (x.dtype() == dev.ember.tensor.DType.F32) {
      float[] o = Images.dense(x).toFloatArray();
      for (int p = 0; p < planes; p++) {
        float m = (float) mean[p % channels];
        float s = (float) std[p % channels];
        for (int i = p * plane, end = i + plane; i < end; i++) o[i] = (o[i] - m) / s; // as torch: sub, then div, in f32
      }
      return TensorData.wrap(o, shape);
    }
    double[] o = Images.dense(x).toDoubleArray();
    for (int p = 0; p < planes; p++) {
      double m = mean[p % channels];
      double s = std[p % channels];
      for (int i = p * plane, end = i + plane; i < end; i++) o[i] = (o[i] - m) / s;
    }
    return TensorData.wrap(o, shape);
  }

  @Override
  public String toString() {
    return "Normalize(mean=" + Arrays.toString(mean) + ", std=" + Arrays.toString(std) + ")";
  }
}
