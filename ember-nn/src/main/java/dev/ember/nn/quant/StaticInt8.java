package dev.ember.nn.quant;

import dev.ember.quant.QDType;
import dev.ember.quant.QParams;
import dev.ember.quant.QTensor;
import dev.ember.quant.Quantization;
import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;

/** What the static quantized layers share: their checks, and activations to and from the kernel's signed bytes. */
final class StaticInt8 {
  private StaticInt8() {}

  /** Per-tensor activation parameters, or a typed error naming the layer. */
  static QParams activation(String op, String what, QParams p) {
    if (p == null || p.perChannel()) {
      throw new IllegalArgumentException(op + ": " + what + " parameters must be per tensor, got " + p);
    }
    return p;
  }

  /** A symmetric qint8 weight (zero points 0), per tensor or per output channel (axis 0). */
  static QTensor weight(String op, QTensor w) {
    QParams p = w.params();
    boolean zeros = true;
    for (int z : p.zeroPoints()) zeros &= z == 0;
    if (p.dtype() != QDType.QINT8 || !zeros || (p.perChannel() && p.axis() != 0)) {
      throw new IllegalArgumentException(op + ": weight must be symmetric qint8 (zero point 0), per tensor or per"
          + " output channel (axis 0), got " + p);
    }
    return w;
  }

  /** The weight's scale of each output channel (the one scale repeated for a per-tensor weight). */
  static float[] rowScales(QTensor w, int rows) {
    float[] s = w.params().scales();
    if (s.length == rows) return s;
    float[] out = new float[rows];
    java.util.Arrays.fill(out, s[0]);
    return out;
  }

  /**
   * Quantizes {@code v} with per-tensor parameters {@code p} into the kernel's signed bytes: qint8 as it is, quint8
   * shifted by -128 (byte ^ 0x80), with {@link #signedZero} as its zero point, so the real values are unchanged.
   */
  static byte[] quantizeSigned(float[] v, QParams p) {
    byte[] a = new byte[v.length];
    Quantization.quantizeRange(v, 0, v.length, p.scales()[0], p.zeroPoints()[0], p.dtype(), a, 0);
    if (p.dtype() == QDType.QUINT8) for (int i = 0; i < a.length; i++) a[i] ^= (byte) 0x80;
    return a;
  }

  static int signedZero(QParams p) {
    int z = p.zeroPoints()[0];
    return p.dtype() == QDType.QUINT8 ? z - 128 : z;
  }

  /** The lowest output value: the dtype's minimum, or the zero point (real 0) when a ReLU is fused. */
  static int outMin(QParams p, boolean relu) {
    int min = p.dtype().min();
    return relu ? Math.max(min, p.zeroPoints()[0]) : min;
  }

  static void checkInput(String op, Tensor x) {
    if (!x.dtype().isFloatingPoint()) {
      throw Check.fail(op, "input must be floating point, got " + x.dtype(), "input", x);
    }
  }
}
