package dev.ember.backend;

/**
 * What a convolution's forward pass keeps for its backward pass (the CPU backend: the im2col column
 * matrices, when they fit its budget), so the backward does not build them again. Opaque: only the
 * backend that made it, through {@link ConvolutionKernels#newSavedColumns()}, reads or fills it.
 */
public interface SavedColumns {
  /** Elements of data the handle keeps alive: 0 before the forward pass and when it kept nothing. */
  long elements();
}
