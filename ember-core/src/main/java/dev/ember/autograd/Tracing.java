package dev.ember.autograd;

import dev.ember.tensor.Tensor;

/**
 * The hook a graph compiler (ember-compile's {@code dev.ember.compile}) traces a forward through: while a
 * {@link Tracer} is installed on the current thread, each traced op entry point reports the op it has just run
 * (its name, inputs, attributes, output, and how to run it again on other inputs), and each op that reads values
 * into Java ({@code item()}) reports that it cannot be captured. With no tracer installed (always, outside a
 * compiler's first call) an entry point pays one read of a static field and nothing else, and its result is the
 * same to the bit.
 *
 * <p>An op that calls other traced ops reports them too, before itself: a tracer keeps the outermost report for
 * an output (the inner ones compute values nothing else reads, and are dead code in its graph).
 */
public final class Tracing {
  private Tracing() {}

  /** Runs one traced op again on new inputs (same attributes, same entry point, so the same kernels). */
  @FunctionalInterface
  public interface Replay {
    Tensor run(Tensor[] inputs);
  }

  /** Receives the ops of a traced forward. */
  public interface Tracer {
    /**
     * Op {@code name} computed {@code out} from {@code inputs} (null entries are absent optional inputs) with
     * {@code attrs}, its non-tensor arguments as names and values in turn ({@code "dim", 1, "keepdim", true}), for
     * printing and comparing; {@code replay} runs it again.
     */
    void op(String name, Tensor out, Tensor[] inputs, Object[] attrs, Replay replay);

    /** Op {@code name} cannot be captured ({@code reason}): its result goes into Java, not into a tensor. */
    void unsupported(String name, String reason);

    /**
     * A backward pass run under this tracer has just applied the backward rule of op {@code name}, whose forward
     * output was {@code output}, to {@code grad}: {@code inputGrads[i]} is the gradient of {@code inputs[i]} (null
     * entries: inputs without one). A tracer that also captures backward passes sees the ops the rule ran as
     * {@link #op} reports before this one; {@link Autograd#backwardOf} applies the same rule again to the output of
     * another run of the op. Ignored unless overridden.
     */
    default void backward(String name, Tensor output, Tensor grad, Tensor[] inputs, Tensor[] inputGrads) {}

    /**
     * Whether this tracer also captures the backward passes run under it (a training step's trace), applying the
     * backward rule of an op it cannot see into ({@link #backward}) as a node of its graph. False unless overridden.
     */
    default boolean capturesBackward() {
      return false;
    }
  }

  /** Number of installed tracers on all threads: the ops path reads only this field when none is. */
  private static volatile int installed;
  private static final ThreadLocal<Tracer> CURRENT = new ThreadLocal<>();

  /** Whether a tracer is installed on this thread (one static read when none is anywhere). */
  public static boolean active() {
    return installed != 0 && CURRENT.get() != null;
  }

  /**
   * Whether a tracer that captures backward passes ({@link Tracer#capturesBackward}) is installed on this thread: an
   * op with a backward rule of its own (one autograd node) may then report itself as one op, as it runs eagerly.
   */
  public static boolean capturesBackward() {
    if (installed == 0) return false;
    Tracer t = CURRENT.get();
    return t != null && t.capturesBackward();
  }

  /** Reports op {@code name} to this thread's tracer, if one is installed; returns {@code out}. */
  public static Tensor op(String name, Tensor out, Tensor[] inputs, Object[] attrs, Replay replay) {
    Tracer t = CURRENT.get();
    if (t != null) t.op(name, out, inputs, attrs, replay);
    return out;
  }

  /** Reports an applied backward rule to this thread's tracer, if one is installed (see {@link Tracer#backward}). */
  static void backward(String name, Tensor output, Tensor grad, Tensor[] inputs, Tensor[] inputGrads) {
    Tracer t = CURRENT.get();
    if (t != null) t.backward(name, output, grad, inputs, inputGrads);
  }

  /** Reports that op {@code name} cannot be captured, if a tracer is installed on this thread. */
  public static void unsupported(String name, String reason) {
    if (installed == 0) return;
    Tracer t = CURRENT.get();
    if (t != null) t.unsupported(name, reason);
  }

  /**
   * Suspends this thread's tracer until the returned scope closes, for an op that reports itself as one op but
   * reads values into Java on the way (a bounds check its replay repeats): the reads and the ops inside are not
   * reported. Returns null, nothing to close, when no tracer is installed.
   */
  public static Scope suspend() {
    return active() ? install(null) : null;
  }

  /**
   * Installs {@code tracer} on this thread until the returned scope closes (which restores the previous one);
   * {@code null} suspends tracing, e.g. while a captured graph runs.
   */
  public static Scope install(Tracer tracer) {
    Tracer previous = CURRENT.get();
    CURRENT.set(tracer);
    synchronized (Tracing.class) {
      installed++;
    }
    return new Scope(previous);
  }

  /** Closing it restores the tracer installed before. */
  public static final class Scope implements AutoCloseable {
    private final Tracer previous;
    private boolean closed;

    private Scope(Tracer previous) {
      this.previous = previous;
    }

    @Override
    public void close() {
      if (closed) return;
      closed = true;
      if (previous == null) CURRENT.remove();
      else CURRENT.set(previous);
      synchronized (Tracing.class) {
        installed--;
      }
    }
  }
}
