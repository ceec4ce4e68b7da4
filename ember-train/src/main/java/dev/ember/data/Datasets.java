package dev.ember.data;

import dev.ember.tensor.Generator;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/** Operations on data sets: random splits, permutations, input transforms. */
public final class Datasets {
  private Datasets() {}

  /**
   * Splits {@code dataset} into non-overlapping subsets of the given lengths, which must add up to
   * its size, after a random permutation drawn from {@code new Generator(seed)}: the split of
   * PyTorch's {@code random_split(dataset, lengths, generator=torch.Generator().manual_seed(seed))}.
   */
  public static <T> List<Subset<T>> randomSplit(Dataset<T> dataset, long seed, int... lengths) {
    Objects.requireNonNull(dataset, "randomSplit: dataset is null");
    Objects.requireNonNull(lengths, "randomSplit: lengths are null");
    if (lengths.length == 0) throw new IllegalArgumentException("randomSplit: expected at least one length");
    long sum = 0;
    for (int len : lengths) {
      if (len < 0) throw new IllegalArgumentException("randomSplit: lengths must be non-negative, got " + Arrays.toString(lengths));
      sum += len;
    }
    if (sum != dataset.size()) {
      throw new IllegalArgumentException("randomSplit: lengths add up to " + sum + " but the data set has "
          + dataset.size() + " items: lengths=" + Arrays.toString(lengths));
    }
    int[] perm = permutation(new Generator(seed), dataset.size());
    List<Subset<T>> out = new ArrayList<>(lengths.length);
    int at = 0;
    for (int len : lengths) {
      out.add(new Subset<>(dataset, Arrays.copyOfRange(perm, at, at + len)));
      at += len;
    }
    return out;
  }

  /**
   * Splits by fractions that add up to 1 (within 1e-6): each part gets {@code floor(f * size)}
   * items and the remainder is handed out one item at a time to the parts in order, as PyTorch does.
   */
  public static <T> List<Subset<T>> randomSplit(Dataset<T> dataset, long seed, double... fractions) {
    Objects.requireNonNull(dataset, "randomSplit: dataset is null");
    Objects.requireNonNull(fractions, "randomSplit: fractions are null");
    if (fractions.length == 0) throw new IllegalArgumentException("randomSplit: expected at least one fraction");
    double sum = 0;
    for (double f : fractions) {
      if (!(f >= 0 && f <= 1)) {
        throw new IllegalArgumentException("randomSplit: fractions must be in [0, 1], got " + Arrays.toString(fractions));
      }
      sum += f;
    }
    if (Math.abs(sum - 1) > 1e-6) {
      throw new IllegalArgumentException("randomSplit: fractions add up to " + sum + ", not 1: fractions="
          + Arrays.toString(fractions));
    }
    int n = dataset.size();
    int[] lengths = new int[fractions.length];
    int given = 0;
    for (int i = 0; i < fractions.length; i++) {
      lengths[i] = (int) Math.floor(fractions[i] * n);
      given += lengths[i];
    }
    for (int i = 0; given < n; i = (i + 1) % lengths.length, given++) lengths[i]++;
    return randomSplit(dataset, seed, lengths);
  }

  /** A random permutation of {@code 0..n-1}: {@link Generator#permutation(int)}, the order of {@code torch.randperm}. */
  public static int[] permutation(Generator gen, int n) {
    Objects.requireNonNull(gen, "permutation: generator is null");
    if (n < 0) throw new IllegalArgumentException("permutation: n must be non-negative, got " + n);
    return gen.permutation(n);
  }

  /**
   * A view whose sample {@code i} has its input passed through {@code transform}, with a generator
   * seeded from {@code (seed, i)}: the same index always gets the same result. For augmentation
   * that changes every epoch, give the transform to the {@link DataLoader} instead.
   */
  public static Dataset<Sample> transformInputs(Dataset<Sample> dataset, Transform transform, long seed) {
    Objects.requireNonNull(dataset, "transformInputs: dataset is null");
    Objects.requireNonNull(transform, "transformInputs: transform is null");
    return new Dataset<>() {
      @Override
      public int size() {
        return dataset.size();
      }

      @Override
      public Sample get(int index) {
        Sample s = dataset.get(index);
        return new Sample(transform.apply(s.input(), new Generator(Seeds.mix(seed ^ Seeds.AUGMENT, index))), s.target());
      }
    };
  }
}
