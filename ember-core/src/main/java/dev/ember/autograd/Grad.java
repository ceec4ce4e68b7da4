package dev.ember.autograd;

import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;

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
  /** The thread's recording state: on or off, and (off, inside a checkpoint's forward) what the ops were given. */
  static final class State {
    boolean enabled = true;
    /** Non-null only while a checkpoint's forward runs unrecorded (see {@link #discovering}). */
    Discovery discovery;
  }

  /**
   * The tensors that require grad which ops received while recording was off for a checkpoint's forward: made
   * outside the segment (nothing made inside requires grad when nothing is recorded), so they are the tensors
   * gradients flow to from the segment: its inputs, the parameters it used, and any other tensor it captured.
   */
  static final class Discovery {
    private final IdentityHashMap<Tensor, Boolean> seen = new IdentityHashMap<>();
    final List<Tensor> order = new ArrayList<>();

    void saw(Tensor[] inputs) {
      for (Tensor t : inputs) {
        if (t != null && t.requiresGrad() && seen.put(t, Boolean.TRUE) == null) order.add(t);
      }
    }
  }

  private static final ThreadLocal<State> STATE = ThreadLocal.withInitial(State::new);
  private final boolean previous;
  private final Discovery previousDiscovery;
  private boolean closed;

  private Grad(boolean enable, Discovery discovery) {
    State s = STATE.get();
    previous = s.enabled;
    previousDiscovery = s.discovery;
    s.enabled = enable;
    s.discovery = discovery;
  }

  /** Disables recording until the returned scope is closed. */
  public static Grad off() {
    return new Grad(false, null);
  }

  /** Enables recording until the returned scope is closed (inside an {@link #off()} scope). */
  public static Grad on() {
    return new Grad(true, null);
  }

  /**
   * Disables recording until closed while noting in {@code d} every tensor that requires grad given to an op
   * ({@link Checkpointing}'s forward). An {@link #off()} or {@link #on()} scope inside suspends the noting.
   */
  static Grad discovering(Discovery d) {
    return new Grad(false, d);
  }

  static State state() {
    return STATE.get();
  }

  /** Whether ops on this thread record the graph now. */
  public static boolean enabled() {
    return STATE.get().enabled;
  }

  /**
   * Whether no gradient will ever be taken of what ops on this thread compute now: recording is off and this is not
   * a {@link Checkpointing} segment's first run (which backward repeats with recording on). An op whose kernel
   * choice depends on whether a gradient follows decides by this, not by its inputs' {@code requiresGrad()}, so a
   * checkpoint's recomputation takes the same path, and gives the same bits, as its first run.
   */
  public static boolean inference() {
    State s = STATE.get();
    return !s.enabled && s.discovery == null;
  }

  @Override
  public void close() {
    if (!closed) {
      State s = STATE.get();
      s.enabled = previous;
      s.discovery = previousDiscovery;
      closed = true;
    }
  }
}
