package dev.ember.bench;

import dev.ember.tensor.Tensor;
import java.util.Arrays;

/** The small statistics the bench mains share: the median of repeats, and a relative difference of outputs. */
final class BenchStats {
  private BenchStats() {}

  /** The median of {@code v} (the mean of the middle two for an even count); {@code v} is left as it is. */
  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    int n = s.length;
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }

  /** The largest absolute difference of {@code got} from {@code ref}, over the largest magnitude in {@code ref}. */
  static double maxRelDiff(Tensor ref, Tensor got) {
    double[] a = ref.toDoubleArray();
    double[] b = got.toDoubleArray();
    double scale = 0;
    double d = 0;
    for (int i = 0; i < a.length; i++) {
      scale = Math.max(scale, Math.abs(a[i]));
      d = Math.max(d, Math.abs(a[i] - b[i]));
    }
    return d / scale;
  }
}
