package dev.ember.nn;

/**
 * Removes a registered {@link ForwardHook} (PyTorch's {@code RemovableHandle}). Removing twice is
 * harmless; try-with-resources removes the hook at the end of the block.
 */
public final class HookHandle implements AutoCloseable {
  private final Runnable removal;
  private boolean removed;

  HookHandle(Runnable removal) {
    this.removal = removal;
  }

  /** Unregisters the hook; later calls of the module no longer run it. */
  public void remove() {
    if (removed) return;
    removed = true;
    removal.run();
  }

  /** Whether {@link #remove()} has run. */
  public boolean isRemoved() {
    return removed;
  }

  @Override
  public void close() {
    remove();
  }
}
