package dev.ember.data;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.util.Arrays;

/**
 * Pixel values 0..255 to F32 in [0, 1] ({@code v / 255f}, as torchvision's {@code ToTensor}).
 * Ember has no uint8 type: {@link #fromBytes} reads unsigned bytes directly, and {@link #apply}
 * takes an integer (or integral float) tensor holding 0..255. Images stay channel-first: a
 * {@code [H, W]} input becomes {@code [1, H, W]}, a {@code [C, H, W]} input keeps its shape.
 * Deterministic: the generator is not used.
 */
public final class ToTensor implements Transform {
  /** {@code TABLE[b] = b / 255f}: the same floats as dividing, one lookup per pixel. */
  private static final float[] TABLE = new float[256];

  static {
    for (int i = 0; i < 256; i++) TABLE[i] = i / 255f;
  }

  /** {@code v / 255f} for the unsigned byte {@code v & 0xff}. */
  public static float scale(byte v) {
    return TABLE[v & 0xff];
  }

  /** F32 tensor of {@code shape} from {@code numel(shape)} unsigned bytes of {@code data} starting at {@code offset}, each divided by 255. */
  public static Tensor fromBytes(byte[] data, int offset, int... shape) {
    if (data == null) throw new IllegalArgumentException("ToTensor.fromBytes: data is null");
    long n = 1;
    for (int d : shape) {
      if (d < 0) throw new IllegalArgumentException("ToTensor.fromBytes: negative dimension in shape " + Arrays.toString(shape));
      n *= d;
    }
    if (offset < 0 || n > data.length - (long) offset) {
      throw new IllegalArgumentException("ToTensor.fromBytes: shape " + Arrays.toString(shape) + " needs " + n
          + " bytes from offset " + offset + " but the array has " + data.length);
    }
    float[] o = new float[(int) n];
    for (int i = 0; i < o.length; i++) o[i] = TABLE[data[offset + i] & 0xff];
    return TensorData.wrap(o, shape);
  }

  @Override
  public Tensor apply(Tensor x, Generator gen) {
    Images.checkRank("ToTensor", x, 2, "[H, W] or [C, H, W]");
    Tensor src = Images.dense(x);
    int[] shape = x.dim() == 2 ? new int[] {1, x.size(0), x.size(1)} : x.shape();
    float[] o = new float[(int) src.numel()];
    Storage s = src.storage();
    int so = src.offset();
    for (int i = 0; i < o.length; i++) {
      double v = s.getDouble(so + i);
      int b = (int) v;
      if (b != v || b < 0 || b > 255) {
        throw new IllegalArgumentException("ToTensor: pixel values must be integers in 0..255, got " + v
            + " at flat index " + i + ": x=" + Arrays.toString(x.shape()));
      }
      o[i] = TABLE[b];
    }
    return TensorData.wrap(o, shape);
  }

  @Override
  public String toString() {
    return "ToTensor()";
  }
}
