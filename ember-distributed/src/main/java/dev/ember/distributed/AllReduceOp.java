package dev.ember.distributed;

/** How {@link ProcessGroup#allReduce} combines the ranks' buffers (as {@code torch.distributed.ReduceOp}). */
public enum AllReduceOp {
  /** The element-wise sum over the ranks. */
  SUM,
  /** The element-wise sum divided by the world size (gradient averaging). */
  MEAN
}
