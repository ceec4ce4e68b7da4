package dev.ember.data;

import dev.ember.autograd.Grad;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/** Shared checks and raw-array helpers of the image transforms. */
final class Images {
  private Images() {}

  /** Fails unless {@code x} has at least {@code minRank} dims (images are {@code [..., H, W]}). */
  static void checkRank(String op, Tensor x, int minRank, String layout) {
    if (x == null) throw new IllegalArgumentException(op + ": input is null");
    if (x.dim() < minRank) {
      throw new IllegalArgumentException(op + ": expected an image " + layout + " (rank >= " + minRank + "), got rank "
          + x.dim() + ": x=" + Arrays.toString(x.shape()));
    }
  }

  /** {@code x} as a contiguous tensor without autograd history. */
  static Tensor dense(Tensor x) {
    try (var ignored = Grad.off()) {
      return x.detach().contiguous();
    }
  }

  /** Copies element {@code from} of {@code src} to element {@code to} of {@code dst} (same dtype, not F32). */
  static void copyOne(Storage src, int from, Storage dst, int to) {
    if (src.dtype().isFloatingPoint()) {
      dst.setDouble(to, src.getDouble(from));
    } else {
      dst.setLong(to, src.getLong(from));
    }
  }
}
