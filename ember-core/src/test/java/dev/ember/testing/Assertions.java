package dev.ember.testing;

import dev.ember.tensor.Tensor;
import java.util.Arrays;

/** Numeric assertions that say where and by how much values differ. */
public final class Assertions {
  private Assertions() {}

  /**
   * Fails unless shapes match and |actual - expected| <= atol + rtol * |expected| everywhere (NaN
   * matches NaN, infinities must match exactly). The message reads
   * {@code mismatched 3/96 (3.1%); max abs diff 0.12 at [1, 0, 2] (allowed 1e-05)}.
   */
  public static void assertClose(Arr expected, Tensor actual, double atol, double rtol, String what) {
    if (!Arrays.equals(expected.shape(), actual.shape())) {
      throw new AssertionError(what + ": shape " + Arrays.toString(actual.shape()) + ", expected "
          + Arrays.toString(expected.shape()));
    }
    double[] a = actual.toDoubleArray();
    double[] e = expected.data();
    int bad = 0;
    double worst = -1;
    int worstAt = -1;
    for (int i = 0; i < e.length; i++) {
      double ev = e[i];
      double av = a[i];
      boolean ok;
      if (Double.isNaN(ev)) ok = Double.isNaN(av);
      else if (Double.isInfinite(ev)) ok = ev == av;
      else ok = Math.abs(av - ev) <= atol + rtol * Math.abs(ev);
      if (!ok) {
        bad++;
        double diff = Double.isNaN(av - ev) ? Double.POSITIVE_INFINITY : Math.abs(av - ev);
        if (diff > worst) {
          worst = diff;
          worstAt = i;
        }
      }
    }
    if (bad > 0) {
      throw new AssertionError(String.format(java.util.Locale.ROOT,
          "%s: mismatched %d/%d (%.1f%%); max abs diff %.3g at %s: actual %s, expected %s (allowed %.1g + %.1g*|expected|)",
          what, bad, e.length, 100.0 * bad / e.length, worst, Arrays.toString(expected.index(worstAt)), a[worstAt],
          e[worstAt], atol, rtol));
    }
  }

  public static void assertClose(Tensor expected, Tensor actual, double atol, double rtol, String what) {
    assertClose(Arr.of(expected), actual, atol, rtol, what);
  }
}
