package dev.ember.quant;

import dev.ember.tensor.Tensor;

/**
 * Per-tensor running minimum and maximum over every batch observed, as {@code torch.ao.quantization.MinMaxObserver}
 * (the default scheme there is per-tensor affine quint8).
 */
public class MinMaxObserver extends Observer {
  protected float minVal = Float.POSITIVE_INFINITY;
  protected float maxVal = Float.NEGATIVE_INFINITY;

  public MinMaxObserver() {
    this(QScheme.perTensorAffine(QDType.QUINT8), false);
  }

  public MinMaxObserver(QScheme scheme, boolean reduceRange) {
    super(requirePerTensor(scheme), reduceRange);
  }

  public MinMaxObserver(QScheme scheme, int quantMin, int quantMax) {
    super(requirePerTensor(scheme), quantMin, quantMax);
  }

  @Override
  public Tensor observe(Tensor x) {
    if (x.numel() == 0) return x;
    float[] mm = minMax(x.toFloatArray(), getClass().getSimpleName());
    update(mm[0], mm[1]);
    return x;
  }

  /**
   * Folds a range computed elsewhere (by a kernel that already walked the data, as dynamic quantization does) into
   * the running one, as {@link #observe} would for a batch with that minimum and maximum.
   */
  public void observeRange(float lo, float hi) {
    if (Float.isNaN(lo) || Float.isNaN(hi) || lo > hi) {
      throw new IllegalArgumentException(getClass().getSimpleName() + ": range must be lo <= hi without NaN, got lo="
          + lo + ", hi=" + hi);
    }
    update(lo, hi);
  }

  /** Folds one batch's range into the running one (here: the running min and max). */
  protected void update(float lo, float hi) {
    minVal = Math.min(minVal, lo);
    maxVal = Math.max(maxVal, hi);
  }

  public float minVal() {
    return minVal;
  }

  public float maxVal() {
    return maxVal;
  }

  @Override
  public QParams calculateQParams() {
    return qparams(new float[] {minVal}, new float[] {maxVal}, -1);
  }

  static float[] minMax(float[] v, String op) {
    float lo = Float.POSITIVE_INFINITY;
    float hi = Float.NEGATIVE_INFINITY;
    for (float f : v) {
      if (f != f) checkFinite(op, f, "while observing");
      lo = Math.min(lo, f);
      hi = Math.max(hi, f);
    }
    return new float[] {lo, hi};
  }

  private static QScheme requirePerTensor(QScheme s) {
    if (s.perChannel()) {
      throw new IllegalArgumentException("MinMaxObserver: needs a per-tensor scheme, got " + s
          + "; hint: use PerChannelMinMaxObserver");
    }
    return s;
  }
}
