package dev.ember.train;

import dev.ember.nn.Module;
import dev.ember.tensor.Tensor;
import java.util.function.Function;

/**
 * The processes a {@link Trainer} trains across, data-parallel ({@link Trainer.Builder#distributed}): every rank runs
 * the same trainer on its shard of each epoch and the gradients are averaged across the ranks after backward. The
 * implementation is ember-distributed's {@code ProcessGroup} (ember-train cannot depend on that module, which depends
 * on this one): {@code Trainer.builder().distributed(ProcessGroup.fromEnv())}.
 *
 * <p>Every method that is a collective must be called by every rank at the same point, in the same order.
 */
public interface DataParallel {
  /** This process's rank, in {@code 0..worldSize()-1}. */
  int rank();

  /** The number of ranks. */
  int worldSize();

  /**
   * Wraps {@code model} for data-parallel training (a collective: it overwrites the model's parameters and buffers
   * with rank 0's): the replica's forward arms the averaging of the gradients across the ranks in the backward
   * that follows, as PyTorch's {@code DistributedDataParallel}.
   */
  Replica replicate(Module model);

  /**
   * This rank's share of an epoch's visiting order of a data set, as PyTorch's {@code DistributedSampler} splits
   * its permutation: the order padded by repeating its head to a multiple of the world size, rank {@code r} taking
   * the positions {@code r, r + W, r + 2W, ...}. Every rank gets the same number of indices.
   */
  int[] shard(int[] epochOrder);

  /** Every rank's {@code data} (of one length on every rank) concatenated in rank order (a collective). */
  double[] allGather(double[] data);

  /** A model wrapped by {@link #replicate}. */
  interface Replica {
    /**
     * Runs {@code body} on the wrapped model after broadcasting rank 0's buffers; with {@code sync} the backward
     * of the result averages the gradients across the ranks, without it (the inner batches of gradient
     * accumulation) it accumulates them locally, to be averaged with the next synchronized backward's.
     */
    Tensor forward(Function<Module, Tensor> body, boolean sync);

    /**
     * Completes the averaging of the last synchronized backward (parameters that got no gradient count as zeros).
     * Call it before the optimizer step; it does nothing when backward completed it already.
     */
    void finish();
  }
}
