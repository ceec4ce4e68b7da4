package dev.ember.nn.quant;

import dev.ember.quant.MinMaxObserver;
import dev.ember.quant.MovingAverageMinMaxObserver;
import dev.ember.quant.MovingAveragePerChannelMinMaxObserver;
import dev.ember.quant.Observer;
import dev.ember.quant.PerChannelMinMaxObserver;
import dev.ember.quant.QDType;
import dev.ember.quant.QScheme;
import java.util.function.Supplier;

/**
 * How static quantization observes a layer, as PyTorch's {@code QConfig}: a factory of activation observers (one
 * for each quantized layer's input and one for its output) and a factory of weight observers (one per layer).
 * Activations must be quantized per tensor (qint8 or quint8, affine or symmetric); weights symmetric qint8, per
 * tensor or per output channel (axis 0), because the int8 kernel takes weights without a zero point.
 */
public record QConfig(Supplier<Observer> activation, Supplier<Observer> weight) {
  public QConfig {
    if (activation == null || weight == null) {
      throw new IllegalArgumentException("QConfig: activation and weight observer factories must not be null");
    }
    check(activation.get(), weight.get());
  }

  /**
   * Post-training default, as torch's qnnpack/onednn default qconfig with per-channel weights: activations
   * {@link MinMaxObserver} per-tensor affine quint8 (0..255), weights {@link PerChannelMinMaxObserver} per-channel
   * symmetric qint8 (-128..127) along axis 0.
   */
  public static QConfig ptqDefault() {
    return new QConfig(() -> new MinMaxObserver(QScheme.perTensorAffine(QDType.QUINT8), false),
        () -> new PerChannelMinMaxObserver(QScheme.perChannelSymmetric(QDType.QINT8, 0), false));
  }

  /**
   * Quantization-aware training default, as torch's {@code get_default_qat_qconfig} (without reduce_range, which
   * this int8 kernel does not need): activations {@link MovingAverageMinMaxObserver} per-tensor affine quint8
   * (averaging constant 0.01), weights {@link MovingAveragePerChannelMinMaxObserver} per-channel symmetric qint8.
   */
  public static QConfig qatDefault() {
    return new QConfig(() -> new MovingAverageMinMaxObserver(0.01, QScheme.perTensorAffine(QDType.QUINT8), false),
        () -> new MovingAveragePerChannelMinMaxObserver(0.01, QScheme.perChannelSymmetric(QDType.QINT8, 0), false));
  }

  static void check(Observer act, Observer w) {
    if (act.scheme().perChannel()) {
      throw new IllegalArgumentException("QConfig: activations must be quantized per tensor, got " + act.scheme());
    }
    QScheme ws = w.scheme();
    if (ws.dtype() != QDType.QINT8 || !ws.symmetric() || (ws.perChannel() && ws.axis() != 0)) {
      throw new IllegalArgumentException("QConfig: weights must be symmetric qint8, per tensor or per channel along"
          + " axis 0, got " + ws);
    }
  }
}
