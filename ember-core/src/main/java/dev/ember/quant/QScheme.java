package dev.ember.quant;

/**
 * How a tensor is quantized: its element type, symmetric (zero point fixed: 0 for qint8, the middle of the range
 * for quint8) or affine (zero point from the data's min and max), and per tensor ({@code axis == -1}) or per
 * channel along {@code axis} (one scale and zero point per index of that axis). PyTorch's
 * {@code torch.per_tensor_affine}, {@code per_tensor_symmetric}, {@code per_channel_affine} and
 * {@code per_channel_symmetric}, with the dtype and channel axis carried alongside.
 */
public record QScheme(QDType dtype, boolean symmetric, int axis) {
  public QScheme {
    if (dtype == null) throw new IllegalArgumentException("QScheme: dtype must not be null");
    if (axis < -1) {
      throw new IllegalArgumentException("QScheme: axis must be >= 0 for per-channel or -1 for per-tensor, got " + axis);
    }
  }

  public static QScheme perTensorAffine(QDType dtype) {
    return new QScheme(dtype, false, -1);
  }

  public static QScheme perTensorSymmetric(QDType dtype) {
    return new QScheme(dtype, true, -1);
  }

  public static QScheme perChannelAffine(QDType dtype, int axis) {
    return new QScheme(dtype, false, checkAxis(axis));
  }

  public static QScheme perChannelSymmetric(QDType dtype, int axis) {
    return new QScheme(dtype, true, checkAxis(axis));
  }

  public boolean perChannel() {
    return axis >= 0;
  }

  private static int checkAxis(int axis) {
    if (axis < 0) throw new IllegalArgumentException("QScheme: per-channel axis must be >= 0, got " + axis);
    return axis;
  }

  @Override
  public String toString() {
    return "torch.per_" + (perChannel() ? "channel" : "tensor") + "_" + (symmetric ? "symmetric" : "affine") + "("
        + dtype.torchName() + (perChannel() ? ", axis=" + axis : "") + ")";
  }
}
