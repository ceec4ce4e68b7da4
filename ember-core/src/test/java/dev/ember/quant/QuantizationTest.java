package dev.ember.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** Round trips, symmetric/affine ranges and bad input; the values against torch are in ember-nn's QuantizationTorchTest. */
class QuantizationTest {
  @Test
  void schemeRoundTripsWithinHalfAStep() {
    Tensor x = Tensor.randn(new Generator(3), 5, 9);
    float[] v = x.toFloatArray();
    for (QScheme s : new QScheme[] {QScheme.perTensorAffine(QDType.QUINT8), QScheme.perTensorSymmetric(QDType.QINT8),
        QScheme.perChannelAffine(QDType.QINT8, 0), QScheme.perChannelSymmetric(QDType.QINT8, 1),
        QScheme.perChannelAffine(QDType.QUINT8, 1)}) {
      QTensor q = Quantization.quantize(x, s);
      assertArrayEquals(x.shape(), q.shape());
      float[] back = q.dequantize().toFloatArray();
      float[] scales = q.params().scales();
      for (int i = 0; i < v.length; i++) {
        int c = !s.perChannel() ? 0 : s.axis() == 0 ? i / 9 : i % 9;
        assertTrue(Math.abs(back[i] - v[i]) <= scales[c] * 0.5f * 1.0001f, s + " element " + i);
      }
    }
  }

  @Test
  void symmetricQint8HasZeroZeroPointAndClamps() {
    QTensor q = Quantization.quantize(Tensor.of(new float[] {-2f, 0f, 1f, 2f}, 4), QScheme.perTensorSymmetric(QDType.QINT8));
    assertEquals(0, q.zeroPoint());
    assertEquals(2f / 127.5f, (float) q.scale());
    assertArrayEquals(new int[] {-127, 0, 64, 127}, q.intRepr());  // as torch 1.13: 2 * (1f / scale) is just under 127.5
    QTensor c = Quantization.quantizePerTensor(Tensor.of(new float[] {1000f, -1000f, 0.25f, 0.75f}, 4), 0.5, 10, QDType.QUINT8);
    assertArrayEquals(new int[] {255, 0, 10, 12}, c.intRepr());  // 0.5 -> 0 and 1.5 -> 2: half to even
  }

  @Test
  void badInputIsRejectedWithTheNumbers() {
    Tensor x = Tensor.zeros(3, 4);
    var e = assertThrows(IllegalArgumentException.class,
        () -> Quantization.quantizePerChannel(x, new float[] {1, 1}, new int[] {0, 0}, 1, QDType.QINT8));
    assertEquals("quantize: 2 scales for 4 channels along axis 1: x=[3, 4]", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Quantization.quantizePerTensor(x, 0.0, 0, QDType.QINT8));
    var z = assertThrows(IllegalArgumentException.class, () -> Quantization.quantizePerTensor(x, 1.0, 200, QDType.QINT8));
    assertTrue(z.getMessage().contains("zero_point[0]=200"), z.getMessage());
    var n = assertThrows(IllegalArgumentException.class,
        () -> Quantization.quantizePerTensor(Tensor.of(new float[] {1f, Float.NaN}, 2), 1.0, 0, QDType.QINT8));
    assertTrue(n.getMessage().contains("element 1"), n.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new MinMaxObserver(QScheme.perChannelAffine(QDType.QINT8, 0), false));
    assertThrows(IllegalArgumentException.class, () -> new MinMaxObserver(QScheme.perTensorSymmetric(QDType.QUINT8), true));
    assertThrows(IllegalArgumentException.class, () -> new MinMaxObserver(QScheme.perTensorAffine(QDType.QINT8), -200, 0));
    // torch: MinMaxObserver(dtype=torch.quint8, quant_min=10, quant_max=20) -> AssertionError: Used-specified
    // quantization range must include 0.
    assertThrows(IllegalArgumentException.class, () -> new MinMaxObserver(QScheme.perTensorAffine(QDType.QUINT8), 10, 20));
    assertThrows(IllegalArgumentException.class, () -> new MinMaxObserver(QScheme.perTensorAffine(QDType.QINT8), -20, -10));
    assertThrows(IllegalStateException.class,
        () -> Quantization.quantize(x, QScheme.perChannelSymmetric(QDType.QINT8, 0)).scale());
    var ch = assertThrows(IllegalArgumentException.class, () -> {
      var o = new PerChannelMinMaxObserver(QScheme.perChannelSymmetric(QDType.QINT8, 0), false);
      o.observe(Tensor.zeros(3, 2));
      o.observe(Tensor.zeros(4, 2));
    });
    assertTrue(ch.getMessage().contains("saw 3 channels before, now 4"), ch.getMessage());
  }

  @Test
  void unobservedObserverGivesTorchDefaults() {
    QParams p = new MinMaxObserver().calculateQParams();
    assertArrayEquals(new float[] {1f}, p.scales());
    assertArrayEquals(new int[] {0}, p.zeroPoints());
  }
}
