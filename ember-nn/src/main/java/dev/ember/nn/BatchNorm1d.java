package dev.ember.nn;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;

/**
 * Batch normalization over a [N, C] or [N, C, L] input, as {@code nn.BatchNorm1d}; see
 * {@link BatchNormBase} for the statistics, parameters and buffers.
 */
public class BatchNorm1d extends BatchNormBase {
  /** eps 1e-5, momentum 0.1, affine, tracking running statistics (PyTorch's defaults). */
  public BatchNorm1d(int numFeatures) {
    this(numFeatures, 1e-5, 0.1, true, true);
  }

  /** {@code momentum} null gives a cumulative moving average of the batch statistics. */
  public BatchNorm1d(int numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats) {
    super(numFeatures, eps, momentum, affine, trackRunningStats);
  }

  @Override
  protected void checkInputDim(Tensor input) {
    if (input.dim() != 2 && input.dim() != 3) {
      throw Check.fail("BatchNorm1d", "expected 2-d or 3-d input (got " + input.dim() + "-d input)", "input", input);
    }
  }
}
