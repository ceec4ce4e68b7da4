package dev.ember.compile;

import dev.ember.nn.Module;
import dev.ember.tensor.Tensor;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/** Entry points: compile a module, or trace a function of tensors into a graph. */
public final class Compiler {
  private Compiler() {}

  /** {@code module}, traced on its first call per input signature and run as a graph after the default passes. */
  public static CompiledModule compile(Module module) {
    return new CompiledModule(module, Pass.defaults());
  }

  /**
   * {@code module} applied by {@code forward} to several inputs, e.g. attention's {@code in -> mha.forward(in[0],
   * in[1], in[2], null, null, false, false).output()} or a layer with a mask {@code in -> layer.forward(in[0], in[1],
   * null, false)}: called as {@link CompiledModule#call(Tensor...)}, traced on its first call per signature (each
   * input's shape and dtype, and the train mode) and run as a graph after the default passes. Every tensor the
   * forward reads that is not an input or the module's state is a constant of the graph: pass what changes between
   * calls (a mask) as an input.
   */
  public static CompiledModule compile(Module module, Function<Tensor[], Tensor> forward) {
    return new CompiledModule(module, forward, Pass.defaults());
  }

  /** {@code module} compiled with the given passes, in order (none: the graph as traced). */
  public static CompiledModule compile(Module module, List<Pass> passes) {
    return new CompiledModule(module, passes);
  }

  /**
   * A training step of {@code module} with loss {@code lossFn} (model output, target) -&gt; scalar loss: forward,
   * loss and backward traced into one graph per input signature and run as one, after {@link Pass#training()}. See
   * {@link TrainingStep}.
   */
  public static TrainingStep compileTraining(Module module, java.util.function.BiFunction<Tensor, Tensor, Tensor> lossFn) {
    return new TrainingStep(module, lossFn, Pass.training());
  }

  /** {@link #compileTraining(Module, java.util.function.BiFunction)} with the given passes, in order. */
  public static TrainingStep compileTraining(Module module, java.util.function.BiFunction<Tensor, Tensor, Tensor> lossFn,
      List<Pass> passes) {
    return new TrainingStep(module, lossFn, passes);
  }

  /**
   * The graph of {@code fn} traced on {@code args} (no passes run; dead nodes removed).
   *
   * @throws IllegalStateException listing the breaks if the trace met an op it cannot capture
   */
  public static Graph trace(Function<Tensor[], Tensor> fn, Tensor... args) {
    Capture.Result r = Capture.trace(fn, args, new IdentityHashMap<>(), "");
    if (!r.breaks().isEmpty() || r.graph() == null) {
      throw new IllegalStateException("Compiler.trace: the function cannot be captured: " + r.breaks());
    }
    return r.graph();
  }

  /** The module's parameters and buffers by identity, with their dotted names. */
  static Map<Tensor, String> names(Module module) {
    IdentityHashMap<Tensor, String> names = new IdentityHashMap<>();
    module.namedParameters().forEach((k, v) -> names.put(v, k));
    module.namedBuffers().forEach((k, v) -> names.put(v, k));
    return names;
  }
}
