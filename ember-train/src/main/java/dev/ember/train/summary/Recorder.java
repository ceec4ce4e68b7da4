package dev.ember.train.summary;

import dev.ember.nn.ForwardHook;
import dev.ember.nn.Module;
import dev.ember.tensor.Tensor;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;

/** Collects one row per module call, in call order, with the FLOPs of each call. */
final class Recorder implements ForwardHook {
  /** One call in progress or done. */
  static final class Call {
    final Module module;
    final String name;
    final int depth;
    final boolean repeated;
    long params;
    long trainable;
    long paramBytes;
    int[] outputShape;
    long outputBytes;
    long flops;
    boolean flopsKnown;
    long subtreeFlops;

    Call(Module module, String name, int depth, boolean repeated) {
      this.module = module;
      this.name = name;
      this.depth = depth;
      this.repeated = repeated;
    }

    LayerSummary toSummary() {
      return new LayerSummary(name, module.name(), depth, module.namedChildren().isEmpty(), repeated, outputShape,
          params, trainable, paramBytes, outputBytes, flops, flopsKnown, subtreeFlops, -1, -1, -1);
    }
  }

  private final Map<Module, String> names;
  private final List<Call> calls = new ArrayList<>();
  private final ArrayDeque<Call> stack = new ArrayDeque<>();
  private final Set<Module> seenModules = Collections.newSetFromMap(new IdentityHashMap<>());
  private final Set<Tensor> countedParams = Collections.newSetFromMap(new IdentityHashMap<>());

  Recorder(Map<Module, String> names) {
    this.names = names;
  }

  @Override
  public void beforeForward(Module module, List<Tensor> inputs) {
    Call c = new Call(module, names.getOrDefault(module, "?"), stack.size(), !seenModules.add(module));
    // the module's own parameters (no '.' in the name), each tensor counted on the first row that has it
    for (var e : module.namedParameters().entrySet()) {
      Tensor p = e.getValue();
      if (e.getKey().contains(".") || !countedParams.add(p)) continue;
      c.params += p.numel();
      if (p.requiresGrad()) c.trainable += p.numel();
      c.paramBytes += p.numel() * p.dtype().itemSize();
    }
    calls.add(c);
    stack.push(c);
  }

  @Override
  public void afterForward(Module module, List<Tensor> inputs, Tensor output) {
    Call c = stack.pop();
    if (c.module != module) {
      throw new IllegalStateException("ModelSummary: module calls did not nest (" + module.name() + " returned inside "
          + c.module.name() + ")");
    }
    c.outputShape = output.shape();
    c.outputBytes = output.numel() * output.dtype().itemSize();
    OptionalLong f = Flops.of(module, inputs, output);
    c.flopsKnown = f.isPresent();
    c.flops = f.orElse(0);
    c.subtreeFlops += c.flops;
    if (!stack.isEmpty()) stack.peek().subtreeFlops += c.subtreeFlops;
  }

  List<Call> calls() {
    return calls;
  }
}
