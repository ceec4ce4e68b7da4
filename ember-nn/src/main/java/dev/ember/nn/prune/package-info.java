/**
 * Pruning with PyTorch's {@code torch.nn.utils.prune} semantics ({@link dev.ember.nn.prune.Prune}): unstructured
 * (L1, random, global), structured (rows or channels by Ln norm) and custom masks, kept as {@code weight_orig} and
 * {@code weight_mask} in the state dict, and made permanent by {@link dev.ember.nn.prune.Prune#remove}.
 */
package dev.ember.nn.prune;
