package dev.ember.nn.functional;

/**
 * How a loss combines its per-element values, as PyTorch's {@code reduction} argument.
 *
 * <ul>
 *   <li>{@link #NONE} ({@code 'none'}): the per-element losses, unreduced.
 *   <li>{@link #MEAN} ({@code 'mean'}, the default): their mean. Losses with class weights or an
 *       ignore index divide by the weight of the counted targets instead (see each loss).
 *   <li>{@link #SUM} ({@code 'sum'}): their sum.
 *   <li>{@link #BATCHMEAN} ({@code 'batchmean'}): the sum divided by the batch size (size of dim 0).
 *       Only {@link Losses#klDiv} accepts it, as in PyTorch, where it is the mathematically correct
 *       KL divergence; every other loss rejects it with an error naming the loss.
 * </ul>
 */
public enum Reduction {
  NONE,
  MEAN,
  SUM,
  BATCHMEAN;

  /** PyTorch's spelling: {@code "none"}, {@code "mean"}, {@code "sum"}, {@code "batchmean"}. */
  public String torchName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
