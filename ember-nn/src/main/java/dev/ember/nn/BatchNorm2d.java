package dev.ember.nn;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;

/**
 * Batch normalization over a [N, C, H, W] input, per channel, as {@code nn.BatchNorm2d}; see
 * {@link BatchNormBase} for the statistics, parameters and buffers.
 */
public class BatchNorm2d extends BatchNormBase {
  /** eps 1e-5, momentum 0.1, affine, tracking running statistics (PyTorch's defaults). */
  public BatchNorm2d(int numFeatures) {
    this(numFeatures, 1e-5, 0.1, true, true);
  }

  /** {@code momentum} null gives a cumulative moving average of the batch statistics. */
  public BatchNorm2d(int numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats) {
    super(numFeatures, eps, momentum, affine, trackRunningStats);
  }

  @Override
  protected void checkInputDim(Tensor input) {
    if (input.dim() != 4) {
      throw Check.fail("BatchNorm2d", "expected 4-d input (got " + input.dim() + "-d input)", "input", input);
    }
  }
}
