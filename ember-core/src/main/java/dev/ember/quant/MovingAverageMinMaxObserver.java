package dev.ember.quant;

/**
 * Per-tensor exponential moving average of each batch's minimum and maximum, as
 * {@code torch.ao.quantization.MovingAverageMinMaxObserver}: the first batch sets the range, each later one moves
 * it by {@code min += c * (batchMin - min)} (and likewise the max) in float32, {@code c = 0.01} by default.
 */
public class MovingAverageMinMaxObserver extends MinMaxObserver {
  private final float averagingConstant;

  public MovingAverageMinMaxObserver() {
    this(0.01, QScheme.perTensorAffine(QDType.QUINT8), false);
  }

  public MovingAverageMinMaxObserver(double averagingConstant, QScheme scheme, boolean reduceRange) {
    super(scheme, reduceRange);
    this.averagingConstant = checkConstant(averagingConstant);
  }

  public MovingAverageMinMaxObserver(double averagingConstant, QScheme scheme, int quantMin, int quantMax) {
    super(scheme, quantMin, quantMax);
    this.averagingConstant = checkConstant(averagingConstant);
  }

  @Override
  protected void update(float lo, float hi) {
    if (minVal == Float.POSITIVE_INFINITY && maxVal == Float.NEGATIVE_INFINITY) {
      minVal = lo;
      maxVal = hi;
    } else {
      minVal = minVal + averagingConstant * (lo - minVal);
      maxVal = maxVal + averagingConstant * (hi - maxVal);
    }
  }

  private static float checkConstant(double c) {
    if (!(c > 0 && c <= 1)) {
      throw new IllegalArgumentException("MovingAverageMinMaxObserver: averaging_constant must be in (0, 1], got " + c);
    }
    return (float) c;
  }
}
