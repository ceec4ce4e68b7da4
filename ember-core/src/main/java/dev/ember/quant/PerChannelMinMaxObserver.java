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
    int inner = 1;
    for (int d = axis + 1; d < shape.length; d++) inner *= shape[d];
    for (int i = 0; i < v.length; i++) {
      float f = v[i];
      if (f != f) checkFinite("PerChannelMinMaxObserver", f, "while observing");
      int c = (i / inner) % channels;
      if (f < minVals[c]) minVals[c] = f;
      if (f > maxVals[c]) maxVals[c] = f;
    }
    return x;
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
