package dev.ember.cuda.lib;

/**
 * A CUDA library could not be loaded, or the driver found no device; the message says which library, where it
 * was looked for, and how to point Ember at an installation ({@code EMBER_CUDA_LIBRARY_PATH}, {@code CUDA_HOME}).
 */
public final class CudaUnavailableException extends CudaException {
  public CudaUnavailableException(String message) {
    super(message);
  }
}
