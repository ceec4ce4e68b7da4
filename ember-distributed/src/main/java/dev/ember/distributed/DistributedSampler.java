package dev.ember.distributed;

import dev.ember.data.Dataset;
import dev.ember.data.Subset;
import dev.ember.tensor.Generator;
import java.util.Objects;

/**
 * Each rank's shard of a data set, epoch by epoch, with the semantics of PyTorch's
 * {@code torch.utils.data.DistributedSampler}: epoch {@code e}'s order is the permutation drawn by
 * {@code new Generator(seed + e)} (as {@code torch.randperm(n, generator=torch.Generator().manual_seed(seed + e))};
 * index order without shuffling); it is padded by repeating its head until its length divides by the world size
 * ({@code dropLast = false}) or cut to the largest multiple of it ({@code dropLast = true}); rank {@code r} takes
 * the indices at positions {@code r, r + world, r + 2 world, ...}. Every rank sees {@link #numSamples()} indices, the
 * ranks' shards together cover each sample once (plus the padding), and the same seed gives the same shards in
 * any process.
 *
 * <p>With Ember's {@link dev.ember.data.DataLoader}, load each epoch's {@link #shard} without shuffling:
 * <pre>{@code
 * DistributedSampler sampler = new DistributedSampler(train.size(), group, true, 42, false);
 * for (int epoch = 0; epoch < epochs; epoch++) {
 *   sampler.setEpoch(epoch);                                     // a new permutation each epoch
 *   try (DataLoader loader = new DataLoader(sampler.shard(train), BatchConfig.sequential(64))) {
 *     for (Batch b : loader) step(b);
 *   }
 * }
 * }</pre>
 */
public final class DistributedSampler {
  private final int size;
  private final int numReplicas;
  private final int rank;
  private final boolean shuffle;
  private final long seed;
  private final boolean dropLast;
  private final int numSamples;
  private int epoch;

  /**
   * The shard of rank {@code rank} of {@code numReplicas} over a data set of {@code size} items.
   *
   * @throws IllegalArgumentException if {@code size < 0}, {@code numReplicas < 1} or the rank is out of range
   */
  public DistributedSampler(int size, int numReplicas, int rank, boolean shuffle, long seed, boolean dropLast) {
    if (size < 0) throw new IllegalArgumentException("DistributedSampler: size must be >= 0, got " + size);
    if (numReplicas < 1) {
      throw new IllegalArgumentException("DistributedSampler: numReplicas must be >= 1, got " + numReplicas);
    }
    if (rank < 0 || rank >= numReplicas) {
      throw new IllegalArgumentException("DistributedSampler: rank " + rank + " out of range for " + numReplicas
          + " replicas (valid: 0.." + (numReplicas - 1) + ")");
    }
    this.size = size;
    this.numReplicas = numReplicas;
    this.rank = rank;
    this.shuffle = shuffle;
    this.seed = seed;
    this.dropLast = dropLast;
    // PyTorch: ceil((n - world) / world) when dropping an uneven tail, else ceil(n / world)
    this.numSamples = dropLast && size % numReplicas != 0 ? size / numReplicas : (size + numReplicas - 1) / numReplicas;
  }

  /** The shard of this process's rank in {@code group} (its rank and world size). */
  public DistributedSampler(int size, ProcessGroup group, boolean shuffle, long seed, boolean dropLast) {
    this(size, Objects.requireNonNull(group, "DistributedSampler: group is null").worldSize(), group.rank(), shuffle,
        seed, dropLast);
  }

  /** Sets the epoch whose permutation {@link #indices()} and {@link #shard} use (PyTorch's {@code set_epoch}). */
  public void setEpoch(int epoch) {
    if (epoch < 0) throw new IllegalArgumentException("DistributedSampler: epoch must be >= 0, got " + epoch);
    this.epoch = epoch;
  }

  /** The epoch set last (0 at first). */
  public int epoch() {
    return epoch;
  }

  /** How many indices each rank gets per epoch. */
  public int numSamples() {
    return numSamples;
  }

  /** The indices of all ranks together per epoch: {@code numSamples() * numReplicas()}. */
  public int totalSize() {
    return numSamples * numReplicas;
  }

  /** The number of ranks sharing the data set. */
  public int numReplicas() {
    return numReplicas;
  }

  /** This shard's rank. */
  public int rank() {
    return rank;
  }

  /** This rank's indices for the current epoch. */
  public int[] indices() {
    return indices(epoch);
  }

  /** This rank's indices for {@code epoch}. */
  public int[] indices(int epoch) {
    if (epoch < 0) throw new IllegalArgumentException("DistributedSampler: epoch must be >= 0, got " + epoch);
    int[] order;
    if (shuffle) {
      order = new Generator(seed + epoch).permutation(size);
    } else {
      order = new int[size];
      for (int i = 0; i < size; i++) order[i] = i;
    }
    int[] mine = new int[numSamples];
    for (int k = 0; k < numSamples; k++) {
      int position = rank + k * numReplicas; // in the padded (head repeated) or truncated order
      mine[k] = order[position % size];
    }
    return mine;
  }

  /**
   * This rank's positions of another epoch order (of the data set's size, e.g. a {@code DataLoader}'s shuffled
   * {@code order(epoch)}), split as {@link #indices(int)} splits the sampler's own: padded by its head (or cut, with
   * {@code dropLast}), rank {@code r} taking positions {@code r, r + world, ...}. The sampler's seed, shuffling and
   * epoch play no part.
   *
   * @throws IllegalArgumentException if {@code epochOrder} does not hold {@code size} indices
   */
  public int[] select(int[] epochOrder) {
    Objects.requireNonNull(epochOrder, "DistributedSampler.select: epochOrder is null");
    if (epochOrder.length != size) {
      throw new IllegalArgumentException("DistributedSampler.select: the order has " + epochOrder.length
          + " indices but the sampler was made for " + size);
    }
    int[] mine = new int[numSamples];
    for (int k = 0; k < numSamples; k++) mine[k] = epochOrder[(rank + k * numReplicas) % size];
    return mine;
  }

  /**
   * The current epoch's shard of {@code dataset} (of the size this sampler was made for), in order: hand it to a
   * {@code DataLoader} without shuffling.
   */
  public <T> Subset<T> shard(Dataset<T> dataset) {
    Objects.requireNonNull(dataset, "DistributedSampler.shard: dataset is null");
    if (dataset.size() != size) {
      throw new IllegalArgumentException("DistributedSampler.shard: the data set has " + dataset.size()
          + " items but the sampler was made for " + size);
    }
    return new Subset<>(dataset, indices());
  }

  @Override
  public String toString() {
    return "DistributedSampler(size=" + size + ", rank " + rank + " of " + numReplicas + ", shuffle=" + shuffle
        + ", seed=" + seed + ", dropLast=" + dropLast + ", epoch=" + epoch + ")";
  }
}
