package dev.ember.train;

import dev.ember.tensor.Tensor;
import java.util.Map;

/**
 * The finiteness check of gradients behind {@link Trainer.Builder#skipNonFiniteSteps} and
 * {@link TrainContext#firstNonFiniteGradient()}: one read of each gradient by the backend's
 * {@link dev.ember.backend.Backend#allFinite}, no allocation, exact.
 */
final class NonFinite {
  private NonFinite() {}

  /** The name of the first parameter (in the map's order) whose gradient holds a NaN or an infinity, or null. */
  static String firstNonFiniteGradient(Map<String, Tensor> named) {
    for (var e : named.entrySet()) {
      Tensor g = e.getValue().grad();
      if (g != null && !allFinite(g)) return e.getKey();
    }
    return null;
  }

  /**
   * Whether every element of {@code t} is finite (integer tensors always are). A deferred
   * gradient (a wide layer's dY^T X) is computed here once, and the optimizer then reads it.
   */
  static boolean allFinite(Tensor t) {
    if (!t.dtype().isFloatingPoint()) return true;
    Tensor c = t.isContiguous() ? t : t.contiguous();
    return c.device().backend().allFinite(c);
  }
}
