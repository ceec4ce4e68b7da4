package dev.ember.quant;

import dev.ember.tensor.Tensor;

/**
 * Watches float tensors during calibration and turns the range it saw into {@link QParams}, with PyTorch 1.13's
 * formulas ({@code torch.ao.quantization.observer._ObserverBase._calculate_qparams}), all in float32:
 * <ul>
 *   <li>the range is widened to hold 0: {@code minNeg = min(min, 0)}, {@code maxPos = max(max, 0)};</li>
 *   <li>symmetric: {@code scale = max(-minNeg, maxPos) / ((qmax - qmin) / 2)}, zero point 0 for qint8 and 128
 *       for quint8 (the middle of a custom range, {@code (qmin + qmax) / 2}, when one was given);</li>
 *   <li>affine: {@code scale = (maxPos - minNeg) / (qmax - qmin)},
 *       {@code zeroPoint = clamp(qmin - round(minNeg / scale), qmin, qmax)};</li>
 *   <li>scale is at least float32's machine epsilon (2^-23), so a constant-zero input still quantizes.</li>
 * </ul>
 * The quantized range is the dtype's (-128..127, 0..255), halved by {@code reduceRange} (-64..63, 0..127) as
 * torch's for kernels that need a spare bit, or a custom {@code [quantMin, quantMax]} inside the dtype's range.
 * Before any {@link #observe} the parameters are scale 1, zero point 0, as torch's.
 */
public abstract class Observer {
  /** {@code torch.finfo(torch.float32).eps}. */
  public static final float EPS = Math.ulp(1.0f);

  protected final QScheme scheme;
  protected final int quantMin;
  protected final int quantMax;
  private final boolean customRange;

  protected Observer(QScheme scheme, boolean reduceRange) {
    this.scheme = scheme;
    QDType t = scheme.dtype();
    int min = t.min();
    int max = t.max();
    if (reduceRange && scheme.symmetric() && t == QDType.QUINT8) {
      throw new IllegalArgumentException(getClass().getSimpleName() + ": cannot reduce range for symmetric"
          + " quantization for quint8 (as torch); hint: use qint8 or a custom quant range");
    }
    if (reduceRange) {
      min = t == QDType.QINT8 ? -64 : 0;
      max = t == QDType.QINT8 ? 63 : 127;
    }
    this.quantMin = min;
    this.quantMax = max;
    this.customRange = false;
  }

  protected Observer(QScheme scheme, int quantMin, int quantMax) {
    QDType t = scheme.dtype();
    if (quantMin >= quantMax || quantMin < t.min() || quantMax > t.max()) {
      throw new IllegalArgumentException(getClass().getSimpleName() + ": quant range must satisfy " + t.min()
          + " <= quant_min < quant_max <= " + t.max() + " for " + t.torchName() + ", got quant_min=" + quantMin
          + ", quant_max=" + quantMax);
    }
    if (quantMin > 0 || quantMax < 0) { // torch: "Used-specified quantization range must include 0."
      throw new IllegalArgumentException(getClass().getSimpleName() + ": quant range must include 0 (a zero point"
          + " in it represents 0.0 exactly), got quant_min=" + quantMin + ", quant_max=" + quantMax);
    }
    this.scheme = scheme;
    this.quantMin = quantMin;
    this.quantMax = quantMax;
    this.customRange = true;
  }

  /** Records the range of {@code x} and returns {@code x} unchanged (an observer is an identity in forward). */
  public abstract Tensor observe(Tensor x);

  /** The parameters for what was observed so far. */
  public abstract QParams calculateQParams();

  public QScheme scheme() {
    return scheme;
  }

  public int quantMin() {
    return quantMin;
  }

  public int quantMax() {
    return quantMax;
  }

  /** Parameters from per-channel (or one) running minima and maxima, with torch's formulas. */
  protected final QParams qparams(float[] minVals, float[] maxVals, int axis) {
    int n = minVals.length;
    float[] scales = new float[n];
    int[] zps = new int[n];
    for (int c = 0; c < n; c++) {
      float lo = minVals[c];
      float hi = maxVals[c];
      if (lo == Float.POSITIVE_INFINITY && hi == Float.NEGATIVE_INFINITY) {  // nothing observed
        scales[c] = 1f;
        zps[c] = 0;
        continue;
      }
      float minNeg = Math.min(lo, 0f);
      float maxPos = Math.max(hi, 0f);
      float scale;
      int zp;
      if (scheme.symmetric()) {
        maxPos = Math.max(-minNeg, maxPos);
        scale = maxPos / ((float) (quantMax - quantMin) / 2);
        scale = Math.max(scale, EPS);
        zp = scheme.dtype() == QDType.QUINT8 ? (customRange ? Math.floorDiv(quantMin + quantMax, 2) : 128) : 0;
      } else {
        scale = (maxPos - minNeg) / (float) (quantMax - quantMin);
        scale = Math.max(scale, EPS);
        zp = quantMin - (int) Math.rint(minNeg / scale);
        zp = Math.max(quantMin, Math.min(quantMax, zp));
      }
      scales[c] = scale;
      zps[c] = zp;
    }
    return new QParams(scheme.dtype(), axis, scales, zps);
  }

  static void checkFinite(String op, float v, String what) {
    if (Float.isNaN(v)) throw new IllegalArgumentException(op + ": input contains NaN (" + what + ")");
  }
}
