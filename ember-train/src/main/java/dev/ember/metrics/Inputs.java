package dev.ember.metrics;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Turns the tensors a metric gets into plain arrays, checking shapes, dtypes and values once per
 * batch. Each tensor is read with one bulk copy off the autograd tape; the metrics then loop over
 * the arrays.
 */
final class Inputs {
  private Inputs() {}

  /** The elements of {@code t} as doubles in row-major order, off the tape. */
  static double[] values(Tensor t) {
    return t.detach().toDoubleArray();
  }

  /** The elements of an integer or bool {@code t} as longs in row-major order, off the tape. */
  static long[] longValues(Tensor t) {
    return t.detach().toLongArray();
  }

  /** Fails unless {@code output} and {@code target} have the same leading (batch) size. */
  static int batch(String op, Tensor output, Tensor target) {
    int b = output.dim() == 0 ? -1 : output.size(0);
    int bt = target.dim() == 0 ? -1 : target.size(0);
    if (b < 0 || bt < 0) {
      throw Check.fail(op, "output and target need a batch dimension (got a scalar)",
          "output", output, "target", target);
    }
    if (b != bt) {
      throw Check.fail(op, "batch sizes differ (" + b + " vs " + bt + ")", "output", output, "target", target);
    }
    return b;
  }

  /** True when {@code output} holds one score per sample: [B] or [B, 1] floating point. */
  static boolean isScoreVector(Tensor output) {
    return output.dtype().isFloatingPoint()
        && (output.dim() == 1 || (output.dim() == 2 && output.size(1) == 1));
  }

  /**
   * Integer class labels from {@code target} ([B], any integer or bool dtype, or floating point
   * holding whole numbers), each checked to lie in {@code [0, numClasses)} when
   * {@code numClasses > 0}.
   */
  static int[] targetLabels(String op, Tensor output, Tensor target, int numClasses) {
    if (target.dim() != 1) {
      throw Check.fail(op, "target must be [B] class labels (got " + Arrays.toString(target.shape()) + ")",
          "output", output, "target", target);
    }
    return labels(op, "target", target, output, target, numClasses);
  }

  /** Labels in {@code t} (rank 1), validated as {@link #targetLabels}; {@code what} names the operand. */
  static int[] labels(String op, String what, Tensor t, Tensor output, Tensor target, int numClasses) {
    int n = t.size(0);
    int[] out = new int[n];
    if (t.dtype().isFloatingPoint()) {
      double[] v = values(t);
      for (int i = 0; i < n; i++) {
        double x = v[i];
        if (x != Math.rint(x) || Math.abs(x) > Integer.MAX_VALUE) {
          throw Check.fail(op, what + " labels must be whole numbers (got " + x + " at index " + i + ")",
              "output", output, "target", target);
        }
        out[i] = (int) x;
      }
    } else {
      long[] v = longValues(t);
      for (int i = 0; i < n; i++) {
        if (v[i] < Integer.MIN_VALUE || v[i] > Integer.MAX_VALUE) {
          throw Check.fail(op, what + " label " + v[i] + " at index " + i + " is out of int range",
              "output", output, "target", target);
        }
        out[i] = (int) v[i];
      }
    }
    if (numClasses > 0) {
      for (int i = 0; i < n; i++) {
        if (out[i] < 0 || out[i] >= numClasses) {
          throw Check.fail(op, what + " label " + out[i] + " at index " + i + " is outside [0, " + numClasses + ")",
              "output", output, "target", target);
        }
      }
    }
    return out;
  }

  /**
   * Predicted labels: the first arg-max of each row of [B, C] floating scores, {@code score >=
   * threshold ? 1 : 0} for [B] or [B, 1] floating scores (binary only, {@code numClasses == 2}),
   * or the labels themselves for an integer/bool [B] tensor.
   */
  static int[] predictedLabels(String op, Tensor output, Tensor target, int numClasses, double threshold) {
    int b = batch(op, output, target);
    if (isScoreVector(output)) {
      if (numClasses != 2) {
        throw Check.fail(op, "one score per sample needs a binary metric (numClasses 2, got " + numClasses + ")",
            "output", output, "target", target,
            "hint", "pass [B, C] scores or predicted labels as an integer tensor");
      }
      double[] s = values(output);
      int[] out = new int[b];
      for (int i = 0; i < b; i++) out[i] = s[i] >= threshold ? 1 : 0;
      return out;
    }
    if (output.dim() == 1) {
      return labels(op, "output", output, output, target, numClasses);
    }
    if (output.dim() != 2 || !output.dtype().isFloatingPoint()) {
      throw shapeError(op, output, target);
    }
    int c = output.size(1);
    if (c != numClasses) {
      throw Check.fail(op, "output has " + c + " classes, the metric " + numClasses,
          "output", output, "target", target);
    }
    return argmax(values(output), b, c);
  }

  /** The rejection of an output that is neither [B, C] nor [B]. */
  static IllegalArgumentException shapeError(String op, Tensor output, Tensor target) {
    String dtype = output.dtype().isFloatingPoint() || output.dim() != 2 ? "" : " floating point";
    return Check.fail(op, "output must be [B, C]" + dtype + " or [B] (got " + Arrays.toString(output.shape())
        + (dtype.isEmpty() ? "" : " " + output.dtype().torchName()) + ")", "target", target);
  }

  /** Row-wise first arg-max of a row-major [b, c] array; NaN ranks above every number (as NumPy and PyTorch). */
  static int[] argmax(double[] s, int b, int c) {
    int[] out = new int[b];
    for (int i = 0; i < b; i++) {
      int base = i * c;
      int best = 0;
      for (int j = 1; j < c; j++) {
        if (greater(s[base + j], s[base + best])) best = j;
      }
      out[i] = best;
    }
    return out;
  }

  /** {@code a > b} with NaN above every number. */
  static boolean greater(double a, double b) {
    return a > b || (a != a && b == b);
  }

  /** {@code a == b} with NaN equal to NaN. */
  static boolean same(double a, double b) {
    return a == b || (a != a && b != b);
  }

  /**
   * Scores for curve metrics: finite values, {@code -0.0} folded into {@code 0.0} so that it ties
   * with {@code 0.0} as NumPy's comparison does.
   */
  static double[] finiteScores(String op, Tensor output, Tensor target) {
    double[] s = values(output);
    for (int i = 0; i < s.length; i++) {
      if (!Double.isFinite(s[i])) {
        throw Check.fail(op, "scores must be finite (got " + s[i] + " at flat index " + i + ")",
            "output", output, "target", target);
      }
      s[i] += 0.0;
    }
    return s;
  }

  /** Binary targets for curve metrics: every label must be 0 or 1. */
  static int[] binaryTargets(String op, Tensor output, Tensor target) {
    int[] y = targetLabels(op, output, target, 0);
    for (int i = 0; i < y.length; i++) {
      if (y[i] != 0 && y[i] != 1) {
        throw Check.fail(op, "binary targets must be 0 or 1 (got " + y[i] + " at index " + i + ")",
            "output", output, "target", target);
      }
    }
    return y;
  }

  /** Fails unless {@code output} is [B] or [B, 1] floating scores. */
  static void requireScoreVector(String op, Tensor output, Tensor target) {
    if (!isScoreVector(output)) {
      throw Check.fail(op, "output must be [B] or [B, 1] floating scores of the positive class (got "
              + Arrays.toString(output.shape()) + " " + output.dtype().torchName() + ")",
          "output", output, "target", target,
          "hint", output.dim() == 2 ? "for [B, 2] probabilities pass output.select(1, 1)" : "convert with to(DType.F64)");
    }
  }
}
