package dev.ember.quant;

import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Running minimum and maximum per index of the channel axis (over all other axes), as
 * {@code torch.ao.quantization.PerChannelMinMaxObserver} (default there: axis 0, per-channel affine quint8; for
 * weights use per-channel symmetric qint8). Every batch must have the same number of channels.
 */
public class PerChannelMinMaxObserver extends Observer {
  private float[] minVals;
  private float[] maxVals;

  public PerChannelMinMaxObserver(QScheme scheme, boolean reduceRange) {
    super(requirePerChannel(scheme), reduceRange);
  }

  public PerChannelMinMaxObserver(QScheme scheme, int quantMin, int quantMax) {
    super(requirePerChannel(scheme), quantMin, quantMax);
  }

  @Override
  public Tensor observe(Tensor x) {
    int axis = scheme.axis();
    int[] shape = x.shape();
    if (axis >= shape.length) {
      throw new IllegalArgumentException("PerChannelMinMaxObserver: channel axis " + axis + " out of range for rank "
          + shape.length + ": x=" + Arrays.toString(shape));
    }
    int channels = shape[axis];
    if (minVals == null) {
      minVals = new float[channels];
      maxVals = new float[channels];
      Arrays.fill(minVals, Float.POSITIVE_INFINITY);
      Arrays.fill(maxVals, Float.NEGATIVE_INFINITY);
    } else if (minVals.length != channels) {
      throw new IllegalArgumentException("PerChannelMinMaxObserver: saw " + minVals.length + " channels before, now "
          + channels + " along axis " + axis + ": x=" + Arrays.toString(shape));
    }
    float[] v = x.toFloatArray();
    if (v.length == 0) return x;
    int inner = 1;
    for (int d = axis + 1; d < shape.length; d++) inner *= shape[d];
    float[] lo = new float[channels];
    float[] hi = new float[channels];
    Arrays.fill(lo, Float.POSITIVE_INFINITY);
    Arrays.fill(hi, Float.NEGATIVE_INFINITY);
    for (int i = 0; i < v.length; i++) {
      float f = v[i];
      if (f != f) checkFinite(getClass().getSimpleName(), f, "while observing");
      int c = (i / inner) % channels;
      if (f < lo[c]) lo[c] = f;
      if (f > hi[c]) hi[c] = f;
    }
    update(minVals, maxVals, lo, hi);
    return x;
  }

  /**
   * Folds one batch's per-channel range ({@code lo}, {@code hi}) into the running one ({@code minVals},
   * {@code maxVals}, +-infinity before the first batch), in place; here: the running min and max.
   */
  protected void update(float[] minVals, float[] maxVals, float[] lo, float[] hi) {
    for (int c = 0; c < lo.length; c++) {
      minVals[c] = Math.min(minVals[c], lo[c]);
      maxVals[c] = Math.max(maxVals[c], hi[c]);
    }
  }

  public float[] minVals() {
    return minVals == null ? new float[0] : minVals.clone();
  }

  public float[] maxVals() {
    return maxVals == null ? new float[0] : maxVals.clone();
  }

  @Override
  public QParams calculateQParams() {
    if (minVals == null) return qparams(new float[] {Float.POSITIVE_INFINITY}, new float[] {Float.NEGATIVE_INFINITY}, scheme.axis());
    return qparams(minVals, maxVals, scheme.axis());
  }

  private static QScheme requirePerChannel(QScheme s) {
    if (!s.perChannel()) {
      throw new IllegalArgumentException("PerChannelMinMaxObserver: needs a per-channel scheme, got " + s
          + "; hint: use MinMaxObserver");
    }
    return s;
  }
}
