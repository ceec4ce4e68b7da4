package dev.ember.nn.quant;

import dev.ember.autograd.Autograd;
import dev.ember.nn.Module;
import dev.ember.quant.Observer;
import dev.ember.quant.QParams;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Simulated quantization for quantization-aware training, as {@code torch.ao.quantization.FakeQuantize}: each forward
 * (while the observer is enabled) shows the detached input to its {@link Observer}, takes the observer's current
 * parameters and returns {@code (clamp(rint(x * (1 / scale)) + zeroPoint, qmin, qmax) - zeroPoint) * scale} (while
 * fake quantization is enabled; otherwise x itself). The backward is the straight-through estimator of
 * {@code torch.fake_quantize_per_tensor_affine} / {@code per_channel_affine}: the gradient passes unchanged where
 * {@code rint(x * (1 / scale)) + zeroPoint} lies in [qmin, qmax] and is 0 where it was clamped. It is not the
 * derivative of the forward (a step function, 0 almost everywhere): it is the estimator that makes training through
 * rounding work.
 */
public class FakeQuantize extends Module {
  private final Observer observer;
  private boolean observerEnabled = true;
  private boolean fakeQuantEnabled;
  private QParams params;

  /** Observer and fake quantization both enabled. */
  public FakeQuantize(Observer observer) {
    this(observer, true);
  }

  FakeQuantize(Observer observer, boolean fakeQuantEnabled) {
    if (observer == null) throw new IllegalArgumentException("FakeQuantize: observer must not be null");
    this.observer = observer;
    this.fakeQuantEnabled = fakeQuantEnabled;
  }

  public Observer observer() {
    return observer;
  }

  /** The parameters of the last forward (the observer's, recomputed whenever it observes), or null before any. */
  public QParams qparams() {
    return params;
  }

  /** Turns observation on or off (off freezes the parameters, as torch's {@code disable_observer}). */
  public FakeQuantize enableObserver(boolean on) {
    observerEnabled = on;
    return this;
  }

  /** Turns the rounding on or off (off makes forward the identity, as torch's {@code disable_fake_quant}). */
  public FakeQuantize enableFakeQuant(boolean on) {
    fakeQuantEnabled = on;
    return this;
  }

  public boolean observerEnabled() {
    return observerEnabled;
  }

  public boolean fakeQuantEnabled() {
    return fakeQuantEnabled;
  }

  @Override
  public Tensor forward(Tensor x) {
    if (observerEnabled) {
      observer.observe(x.detach());
      params = observer.calculateQParams();
    }
    if (!fakeQuantEnabled) return x;
    if (params == null) {
      throw Check.fail("FakeQuantize", "no parameters yet: the observer is disabled and has never observed", "input", x);
    }
    if (params.perChannel()) {
      return perChannelAffine(x, params.scales(), params.zeroPoints(), params.axis(), observer.quantMin(),
          observer.quantMax());
    }
    return perTensorAffine(x, params.scales()[0], params.zeroPoints()[0], observer.quantMin(), observer.quantMax());
  }

  /**
   * {@code torch.fake_quantize_per_tensor_affine}: {@code (clamp(rint(x * (1 / scale)) + zeroPoint, qmin, qmax) -
   * zeroPoint) * scale}, float32 arithmetic for float32 x (as torch), float64 for float64 x times the float32
   * reciprocal of the scale (as torch's kernels); straight-through
   * gradient (see the class documentation).
   */
  public static Tensor perTensorAffine(Tensor x, float scale, int zeroPoint, int quantMin, int quantMax) {
    return fakeQuantize("fake_quantize_per_tensor_affine", x, new float[] {scale}, new int[] {zeroPoint}, -1, quantMin,
        quantMax);
  }

  /** {@code torch.fake_quantize_per_channel_affine}: {@link #perTensorAffine} with the scale and zero point of each
   * index of {@code axis}. */
  public static Tensor perChannelAffine(Tensor x, float[] scales, int[] zeroPoints, int axis, int quantMin,
      int quantMax) {
    return fakeQuantize("fake_quantize_per_channel_affine", x, scales, zeroPoints, axis, quantMin, quantMax);
  }

  private static Tensor fakeQuantize(String op, Tensor x, float[] scales, int[] zps, int axis, int qmin, int qmax) {
    if (x.dtype() != DType.F32 && x.dtype() != DType.F64) {
      throw Check.fail(op, "input must be float32 or float64, got " + x.dtype().torchName(), "input", x);
    }
    if (qmin > qmax) throw Check.fail(op, "quant_min " + qmin + " must be <= quant_max " + qmax, "input", x);
    int[] shape = x.shape();
    int inner = 1;
    if (axis >= 0) {
      if (axis >= shape.length || shape[axis] != scales.length) {
        throw Check.fail(op, scales.length + " scales along axis " + axis + " do not match the input", "input", x);
      }
      for (int d = axis + 1; d < shape.length; d++) inner *= shape[d];
    }
    if (scales.length != zps.length) {
      throw Check.fail(op, scales.length + " scales but " + zps.length + " zero points", "input", x);
    }
    for (int c = 0; c < scales.length; c++) {
      if (!(scales[c] > 0) || Float.isInfinite(scales[c])) {
        throw Check.fail(op, "scale must be positive and finite, got scale[" + c + "]=" + scales[c], "input", x);
      }
      if (zps[c] < qmin || zps[c] > qmax) {
        throw Check.fail(op, "zero point must lie in [quant_min, quant_max] = [" + qmin + ", " + qmax + "], got "
            + zps[c], "input", x);
      }
    }
    int n = scales.length;
    Tensor out;
    Tensor mask;
    if (x.dtype() == DType.F64) {
      double[] v = x.toDoubleArray();
      double[] y = new double[v.length];
      double[] m = new double[v.length];
      for (int i = 0; i < v.length; i++) {
        int c = axis < 0 ? 0 : (i / inner) % n;
        double s = scales[c];
        // torch's kernels multiply a float64 input by the float32 reciprocal 1.0f / scale, widened (1.0f / 0.1f is
        // exactly 10, 1.0 / (double) 0.1f is not: inputs at a rounding tie, 0.15 at scale 0.1, rounded the other way)
        double r = Math.rint(v[i] * (double) (1.0f / scales[c])) + zps[c];
        m[i] = r >= qmin && r <= qmax ? 1 : 0;
        y[i] = (Math.max(qmin, Math.min(qmax, r)) - zps[c]) * s;
      }
      out = Tensor.of(y, shape);
      mask = Tensor.of(m, shape);
    } else {
      float[] v = x.toFloatArray();
      float[] y = new float[v.length];
      float[] m = new float[v.length];
      for (int i = 0; i < v.length; i++) {
        int c = axis < 0 ? 0 : (i / inner) % n;
        float s = scales[c];
        float r = (float) Math.rint(v[i] * (1.0f / s)) + zps[c];
        m[i] = r >= qmin && r <= qmax ? 1 : 0;
        y[i] = (Math.max(qmin, Math.min(qmax, r)) - zps[c]) * s;
      }
      out = Tensor.of(y, shape);
      mask = Tensor.of(m, shape);
    }
    return Autograd.record(op, out, (ctx, g) -> new Tensor[] {g.mul(mask)}, x);
  }

  @Override
  protected String extraRepr() {
    return "fake_quant_enabled=" + fakeQuantEnabled + ", observer_enabled=" + observerEnabled + ", scheme="
        + observer.scheme() + ", quant_min=" + observer.quantMin() + ", quant_max=" + observer.quantMax()
        + (params == null ? "" : ", scale=" + Arrays.toString(params.scales()) + ", zero_point="
        + Arrays.toString(params.zeroPoints()));
  }
}
