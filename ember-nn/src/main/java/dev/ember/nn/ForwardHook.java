package dev.ember.nn;

import dev.ember.tensor.Tensor;
import java.util.List;

/**
 * Observes calls of a module, as PyTorch's forward pre-hooks and forward hooks: registered with
 * {@link Module#registerForwardHook(ForwardHook)}, it runs around every {@link Module#call(Tensor)}
 * (and {@link Module#call(List, java.util.function.Supplier)}) of that module, which is how every
 * container in {@code dev.ember.nn} runs its children. A direct {@code forward(...)} call runs no
 * hooks, as calling {@code module.forward(x)} in PyTorch does not.
 *
 * <p>Hooks observe; they must not modify the tensors they are given. A hook that throws aborts the
 * call with that exception. Model summaries, profilers and activation statistics are built on it.
 */
@FunctionalInterface
public interface ForwardHook {
  /** Called before the module's forward with its tensor inputs. Does nothing by default. */
  default void beforeForward(Module module, List<Tensor> inputs) {}

  /** Called after the module's forward returned {@code output} for {@code inputs}. */
  void afterForward(Module module, List<Tensor> inputs, Tensor output);
}
