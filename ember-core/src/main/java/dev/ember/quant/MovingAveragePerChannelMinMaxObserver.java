package dev.ember.quant;

/**
 * Per-channel exponential moving average of each batch's minimum and maximum, as
 * {@code torch.ao.quantization.MovingAveragePerChannelMinMaxObserver} (the weight observer of torch's default QAT
 * config): the first batch sets each channel's range, each later one moves it by {@code min += c * (batchMin - min)}
 * (and likewise the max) in float32, {@code c = 0.01} by default.
 */
public class MovingAveragePerChannelMinMaxObserver extends PerChannelMinMaxObserver {
  private final float averagingConstant;
  private boolean first = true;

  public MovingAveragePerChannelMinMaxObserver(double averagingConstant, QScheme scheme, boolean reduceRange) {
    super(scheme, reduceRange);
    if (!(averagingConstant > 0 && averagingConstant <= 1)) {
      throw new IllegalArgumentException("MovingAveragePerChannelMinMaxObserver: averaging_constant must be in (0, 1],"
          + " got " + averagingConstant);
    }
    this.averagingConstant = (float) averagingConstant;
  }

  @Override
  protected void update(float[] minVals, float[] maxVals, float[] lo, float[] hi) {
    for (int c = 0; c < lo.length; c++) {
      if (first) {
        minVals[c] = lo[c];
        maxVals[c] = hi[c];
      } else {
        minVals[c] = minVals[c] + averagingConstant * (lo[c] - minVals[c]);
        maxVals[c] = maxVals[c] + averagingConstant * (hi[c] - maxVals[c]);
      }
    }
    first = false;
  }
}
