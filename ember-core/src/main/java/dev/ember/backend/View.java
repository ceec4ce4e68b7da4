package dev.ember.backend;

import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;

/**
 * What a kernel sees of a tensor: its geometry ({@code shape}, {@code strides} and {@code offset}, in elements)
 * over a {@link Storage}, and its dtype. The backend SPI speaks in views, so a backend never needs the autograd
 * side of a tensor (its graph, gradient or hooks); {@link dev.ember.tensor.Tensor} is a view, passed as it is.
 * Outputs are views too: the caller allocates them, the kernel writes every element it is told to.
 *
 * <p>The arrays returned by {@link #shapeRef()} and {@link #stridesRef()} are the view's own: read them, never
 * write them.
 */
public interface View {
  DType dtype();

  int[] shapeRef();

  int[] stridesRef();

  int offset();

  Storage storage();

  /** The number of elements, the product of the shape. */
  long numel();

  /** Whether the elements lie in row-major order with no gaps from {@link #offset()} on. */
  boolean isContiguous();

  /** The number of axes. */
  default int rank() {
    return shapeRef().length;
  }
}
