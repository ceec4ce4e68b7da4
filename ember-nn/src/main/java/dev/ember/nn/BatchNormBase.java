package dev.ember.nn;

import static dev.ember.nn.Reprs.bool;
import static dev.ember.nn.Reprs.fmt;

import dev.ember.autograd.Grad;
import dev.ember.autograd.Tracing;
import dev.ember.nn.functional.Normalization;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;

/**
 * The common part of {@link BatchNorm1d} and {@link BatchNorm2d}, as PyTorch's {@code _BatchNorm}:
 * parameters {@code weight} (ones) and {@code bias} (zeros) when {@code affine}; buffers
 * {@code running_mean} (zeros), {@code running_var} (ones) and {@code num_batches_tracked} (an I64
 * scalar) when {@code trackRunningStats}, registered in PyTorch's order so state dicts match.
 *
 * <p>In training the batch statistics normalize and the running statistics are updated with the
 * unbiased variance: {@code running = (1 - momentum) * running + momentum * stat}, or with
 * {@code momentum == null} a cumulative average ({@code momentum = 1 / num_batches_tracked}). In
 * eval the running statistics normalize; a module without them always uses batch statistics.
 */
public abstract class BatchNormBase extends Module {
  private final int numFeatures;
  private final double eps;
  private final Double momentum;
  private final boolean affine;
  private final boolean trackRunningStats;
  /** num_batches_tracked as this module last counted it, with the storage and version it had then. */
  private long counted;
  private Storage countedStorage;
  private int countedVersion;

  protected BatchNormBase(int numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats) {
    if (numFeatures <= 0) {
      throw new IllegalArgumentException(name() + ": num_features must be positive, got " + numFeatures);
    }
    if (!(eps >= 0)) throw new IllegalArgumentException(name() + ": eps must be >= 0, got " + eps);
    if (momentum != null && !(momentum >= 0 && momentum <= 1)) {
      throw new IllegalArgumentException(name() + ": momentum must be in [0, 1] or null, got " + momentum);
    }
    this.numFeatures = numFeatures;
    this.eps = eps;
    this.momentum = momentum;
    this.affine = affine;
    this.trackRunningStats = trackRunningStats;
    registerParameter("weight", affine ? Tensor.ones(numFeatures) : null);
    registerParameter("bias", affine ? Tensor.zeros(numFeatures) : null);
    if (trackRunningStats) {
      registerBuffer("running_mean", Tensor.zeros(numFeatures));
      registerBuffer("running_var", Tensor.ones(numFeatures));
      registerBuffer("num_batches_tracked", Tensor.zeros(DType.I64));
    }
  }

  /** Fails unless {@code input} has a rank this variant accepts. */
  protected abstract void checkInputDim(Tensor input);

  public int numFeatures() {
    return numFeatures;
  }

  public double eps() {
    return eps;
  }

  /** The momentum, or null for a cumulative moving average. */
  public Double momentum() {
    return momentum;
  }

  public boolean affine() {
    return affine;
  }

  public boolean trackRunningStats() {
    return trackRunningStats;
  }

  /** The weight, or null without {@code affine}. */
  public Tensor weight() {
    return param("weight");
  }

  /** The bias, or null without {@code affine}. */
  public Tensor bias() {
    return param("bias");
  }

  /** The running mean, or null without {@code trackRunningStats}. */
  public Tensor runningMean() {
    return trackRunningStats ? buffer("running_mean") : null;
  }

  /** The running variance, or null without {@code trackRunningStats}. */
  public Tensor runningVar() {
    return trackRunningStats ? buffer("running_var") : null;
  }

  /** The number of training batches seen (0 without {@code trackRunningStats}). */
  public long numBatchesTracked() {
    return trackRunningStats ? buffer("num_batches_tracked").toLongArray()[0] : 0;
  }

  /** Resets the running statistics to mean 0, variance 1 and the batch count to 0. */
  public void resetRunningStats() {
    if (!trackRunningStats) return;
    try (Grad ignored = Grad.off()) {
      buffer("running_mean").zero_();
      buffer("running_var").fill_(1);
      buffer("num_batches_tracked").zero_();
    }
  }

  @Override
  public Tensor forward(Tensor input) {
    checkInputDim(input);
    if (input.dim() >= 2 && input.size(1) != numFeatures) {
      throw Check.fail(name(), "expected " + numFeatures + " channels in dimension 1, got "
          + input.size(1), "input", input);
    }
    if (isTraining() && trackRunningStats && Tracing.active()) {
      // for a graph compiler, one op that also counts the batch (which a graph must repeat every run)
      Tensor nbt = buffer("num_batches_tracked");
      Double m = momentum;
      double e = eps;
      Tensor out;
      try (Tracing.Scope untraced = Tracing.install(null)) {
        out = trainingForward(input, runningMean(), runningVar(), weight(), bias(), nbt, m, e);
      }
      return Tracing.op("batch_norm", out, new Tensor[] {input, runningMean(), runningVar(), weight(), bias(), nbt},
          new Object[] {"training", true, "momentum", m, "eps", e, "counts_batches", true},
          in -> trainingForward(in[0], in[1], in[2], in[3], in[4], in[5], m, e));
    }
    double factor = momentum == null ? 0.0 : momentum;
    if (isTraining() && trackRunningStats) {
      Tensor nbt = buffer("num_batches_tracked");
      long before = nbt.storage() == countedStorage && nbt.version() == countedVersion ? counted : -1;
      try (Grad ignored = Grad.off()) {
        nbt.add_(1);
      }
      if (momentum == null) {
        // the cumulative average needs the count on the host: read from the buffer only when it changed
        // otherwise than by this count (a loaded state, a move to another device): on a GPU a read waits for
        // every queued kernel
        counted = before >= 0 ? before + 1 : nbt.toLongArray()[0];
        countedStorage = nbt.storage();
        countedVersion = nbt.version();
        factor = 1.0 / counted;
      }
    }
    boolean useBatchStats = isTraining() || !trackRunningStats;
    return Normalization.batchNorm(input, runningMean(), runningVar(), weight(), bias(), useBatchStats, factor, eps);
  }

  /** A training forward that tracks running statistics: the batch counted in {@code nbt}, then the batch norm. */
  private static Tensor trainingForward(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
      Tensor nbt, Double momentum, double eps) {
    try (Grad ignored = Grad.off()) {
      nbt.add_(1);
    }
    double factor = momentum == null ? 1.0 / nbt.toLongArray()[0] : momentum;
    return Normalization.batchNorm(input, runningMean, runningVar, weight, bias, true, factor, eps);
  }

  @Override
  protected String extraRepr() {
    return numFeatures + ", eps=" + fmt(eps) + ", momentum=" + fmt(momentum) + ", affine=" + bool(affine)
        + ", track_running_stats=" + bool(trackRunningStats);
  }
}
