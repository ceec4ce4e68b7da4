package dev.ember.autograd;

/**
 * Switches gradient recording off for a scope, as {@code torch.no_grad()}:
 * <pre>{@code
 * try (var ignored = Grad.off()) {
 *   Tensor pred = model.forward(x);   // no graph is recorded
 * }
 * }</pre>
 * The switch is per thread; scopes nest and restore the previous state on close.
 */
public final class Grad implements AutoCloseable {
  private static final ThreadLocal<boolean[]> ENABLED = ThreadLocal.withInitial(() -> new boolean[] {true});
  private final boolean previous;
  private boolean closed;

  private Grad(boolean enable) {
    boolean[] flag = ENABLED.get();
    previous = flag[0];
    flag[0] = enable;
  }

  /** Disables recording until the returned scope is closed. */
  public static Grad off() {
    return new Grad(false);
  }

  /** Enables recording until the returned scope is closed (inside an {@link #off()} scope). */
  public static Grad on() {
    return new Grad(true);
  }

  /** Whether ops on this thread record the graph now. */
  public static boolean enabled() {
    return ENABLED.get()[0];
  }

  @Override
  public void close() {
    if (!closed) {
      ENABLED.get()[0] = previous;
      closed = true;
    }
  }
}
