package dev.ember.compile;

import dev.ember.autograd.Grad;
import dev.ember.nn.Module;
import dev.ember.optim.Optimizer;
import dev.ember.tensor.DType;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * A training step (forward, loss, backward) compiled into one graph, as {@code torch.compile} does with
 * AOTAutograd: {@link #run run(x, y)} computes the loss of {@code module} on x against target y and the gradient of
 * every trainable parameter, writing each into the parameter's {@code grad()} as eager's {@code loss.backward()}
 * does (adopted when the parameter has none, else accumulated onto it), and returns the loss.
 *
 * <p>The first call with each signature (the shapes and dtypes of x and y, the module's train mode) is an eager
 * step traced by {@code Capture.traceTraining}: the forward and the loss, then the backward with the tracer still
 * installed, so the ops the op definitions' backward rules run become nodes of the same graph, whose outputs are
 * the loss, the forward's result and the gradients. The passes then run on that joint graph. Later calls run it
 * with recording off: no tape, no autograd nodes; the values the backward nodes read are the forward's, kept as
 * long as the graph needs them. Where the step cannot be one graph (an op without a trace hook, forward or
 * backward), that signature runs the forward compiled ({@link CompiledModule}) and the backward on the eager tape,
 * and {@link #explain()} says why.
 */
public final class TrainingStep {
  private final Module module;
  private final BiFunction<Tensor, Tensor, Tensor> lossFn;
  private final List<Pass> passes;
  private final Map<Signature, Plan> plans = new LinkedHashMap<>();
  private CompiledModule forwardOnly;
  private Tensor lastOutput;

  TrainingStep(Module module, BiFunction<Tensor, Tensor, Tensor> lossFn, List<Pass> passes) {
    if (module == null || lossFn == null) {
      throw new IllegalArgumentException("Compiler.compileTraining: module and lossFn must not be null");
    }
    this.module = module;
    this.lossFn = lossFn;
    this.passes = List.copyOf(passes);
  }

  /**
   * What a compiled step is specialised on: the shapes and dtypes of input and target, the train mode, and which of
   * the module's parameters require grad (those the graph returns gradients for: freezing or unfreezing a layer after
   * the trace is a new signature). Never mutated after {@link #of}.
   */
  record Signature(List<Integer> x, DType xType, List<Integer> y, DType yType, boolean training, BitSet trainable,
      int parameters) {
    static Signature of(Tensor x, Tensor y, Module module) {
      List<Tensor> params = module.parameters();
      BitSet trainable = new BitSet(params.size());
      for (int i = 0; i < params.size(); i++) if (params.get(i).requiresGrad()) trainable.set(i);
      return new Signature(Arrays.stream(x.shapeRef()).boxed().toList(), x.dtype(),
          Arrays.stream(y.shapeRef()).boxed().toList(), y.dtype(), module.isTraining(), trainable, params.size());
    }

    @Override
    public String toString() {
      int n = trainable.cardinality();
      return xType.name().toLowerCase(java.util.Locale.ROOT) + x + ", " + yType.name().toLowerCase(java.util.Locale.ROOT)
          + y + (training ? " train" : " eval") + (n == parameters ? "" : " (" + n + " of " + parameters
          + " parameters trainable)");
    }
  }

  /** Whether a module changed since the plans were made: then every signature is traced again. */
  private final ModuleChanges changes = new ModuleChanges();

  /** Drops every plan if any module changed since they were made (see {@link ModuleChanges}). */
  private void guardChanges() {
    if (changes.moved()) plans.clear();
  }

  private sealed interface Plan permits JointPlan, FallbackPlan {}

  /**
   * The joint graph (outputs: loss, forward result, then the gradient of each of {@code params}) with its executor
   * (the node order, input slots and last uses worked out once), the graph as traced, the storages of its
   * parameter and constant nodes (a gradient on one of them is copied, never adopted), the trace and pass times,
   * and per parameter the op step of its gradient where {@link #step(Tensor, Tensor, Optimizer)} may hand it over
   * deferred ({@link GraphWeightGrad}: an {@code mm_tn} that nothing else reads), else -1.
   */
  private record JointPlan(Graph traced, Graph graph, GraphExecutor exec, Tensor[] params,
      IdentityHashMap<Storage, Boolean> fixed, long traceNanos, long passNanos, int[] deferrable) implements Plan {
    /** Bytes of forward values the graph keeps for its backward (see {@link Rematerialization#keptBytes}). */
    long keptBytes() {
      return Rematerialization.keptBytes(graph);
    }
  }

  private record FallbackPlan(List<GraphBreak> breaks) implements Plan {}

  /** The compiled module. */
  public Module module() {
    return module;
  }

  /**
   * One step on input x and target y: the loss (a 0-d or one-element tensor without history), with every trainable
   * parameter's gradient written as eager's {@code loss.backward()} writes it.
   */
  public Tensor run(Tensor x, Tensor y) {
    guardChanges();
    Signature sig = Signature.of(x, y, module);
    Plan plan = plans.get(sig);
    if (plan == null) {
      long t0 = System.nanoTime();
      List<Tensor> params = new ArrayList<>();
      for (Tensor p : module.parameters()) if (p.requiresGrad()) params.add(p);
      Capture.TrainingResult r = Capture.traceTraining(module::call, lossFn, new Tensor[] {x, y}, params,
          Compiler.names(module), "");
      plans.put(sig, plan(r, System.nanoTime() - t0));
      changes.settle();
      lastOutput = r.output().detach();
      return r.loss().detach();
    }
    return switch (plan) {
      case JointPlan j -> runJoint(j, x, y);
      case FallbackPlan f -> runFallback(x, y);
    };
  }

  /**
   * One step with the optimizer's update fused in: {@link #run run(x, y)}'s forward, loss and backward as one
   * graph, then {@code optimizer}'s update of every parameter straight from the gradient the graph computed
   * ({@link Optimizer#step(IdentityHashMap)}), without storing it in the parameter's {@code grad()} first and
   * without a {@code zeroGrad()} to drop it afterwards. The parameters and the loss have the bits of
   * {@code run(x, y); optimizer.step()}; a parameter that had no gradient before the call has none after it. One
   * that had one (gradients accumulated by earlier calls) gets this step's added to it, as {@code run} adds it,
   * and steps on the sum. Signatures that run the fallback (see the class), and the call that traces, run exactly
   * {@code run(x, y); optimizer.step()} and then drop the gradients they set.
   *
   * @return the loss, as {@link #run} returns it
   */
  public Tensor step(Tensor x, Tensor y, Optimizer optimizer) {
    return step(x, y, optimizer, false);
  }

  /**
   * {@link #step(Tensor, Tensor, Optimizer) step(x, y, optimizer)}, making the update only when the loss and every
   * gradient are finite (what a trainer that skips non-finite steps checks before it steps). When one is not, no
   * parameter moves and the gradients stay in the parameters' {@code grad()}, written as {@link #run} writes them,
   * for the caller to name the bad one and drop them. {@link #updated()} tells which happened. The check reads
   * every gradient, so none is handed over deferred.
   *
   * @return the loss, as {@link #run} returns it
   */
  public Tensor stepIfFinite(Tensor x, Tensor y, Optimizer optimizer) {
    return step(x, y, optimizer, true);
  }

  /** Whether the last {@link #step} or {@link #stepIfFinite} made the optimizer's update (false before one). */
  public boolean updated() {
    return updated;
  }

  private boolean updated;

  private Tensor step(Tensor x, Tensor y, Optimizer optimizer, boolean finiteOnly) {
    String name = finiteOnly ? "TrainingStep.stepIfFinite" : "TrainingStep.step";
    if (optimizer == null) throw new IllegalArgumentException(name + ": optimizer must not be null");
    updated = false;
    guardChanges();
    if (!(plans.get(Signature.of(x, y, module)) instanceof JointPlan j)) {
      List<Tensor> had = new ArrayList<>();
      for (Tensor p : module.parameters()) if (p.grad() != null) had.add(p);
      Tensor loss = run(x, y);
      if (finiteOnly) {
        boolean clean = allFinite(loss);
        for (Tensor p : module.parameters()) if (clean && p.grad() != null) clean = allFinite(p.grad());
        if (!clean) return loss;
      }
      optimizer.step();
      updated = true;
      IdentityHashMap<Tensor, Boolean> keep = new IdentityHashMap<>();
      for (Tensor p : had) keep.put(p, Boolean.TRUE);
      for (Tensor p : module.parameters()) {
        Tensor g = p.grad();
        if (g != null && !keep.containsKey(p)) {
          p.setGrad(null);
          MemoryScope.recycle(g);
        }
      }
      return loss;
    }
    Tensor[] vals;
    IdentityHashMap<Tensor, Tensor> grads = new IdentityHashMap<>();
    Tensor[] params = j.params();
    dev.ember.autograd.Tracing.Replay[] overrides = null;
    for (int i = 0; i < params.length && !finiteOnly; i++) {
      int s = j.deferrable()[i];
      Tensor p = params[i];
      if (s >= 0 && p.grad() == null && p.dtype() == DType.F32 && p.device().isCpu()
          && dev.ember.tensor.Deferred.consumedInBlocks(p)) { // the optimizer takes this gradient in blocks
        if (overrides == null) overrides = new dev.ember.autograd.Tracing.Replay[j.exec().steps()];
        GraphNode node = j.graph().outputs().get(2 + i);
        overrides[s] = in -> in[0].device().isCpu() && in[1].device().isCpu() ? GraphWeightGrad.of(in) : node.run(in);
      }
    }
    try (Grad off = Grad.off()) {
      vals = j.exec().runAll(null, overrides, x, y);
      if (finiteOnly && !finite(vals, params)) {
        writeGrads(j, vals, x, y);
        lastOutput = vals[1];
        return vals[0];
      }
      for (int i = 0; i < params.length; i++) {
        Tensor g = vals[2 + i];
        Tensor p = params[i];
        Tensor existing = p.grad();
        if (existing != null) {
          existing.add_(g);
        } else if (j.fixed().containsKey(g.storage()) || g.storage() == x.storage() || g.storage() == y.storage()) {
          grads.put(p, g.cloneContiguous()); // a parameter's or an input's own memory: the updates must not see it move
        } else {
          grads.merge(p, g, Tensor::add); // a parameter listed twice (shared) gets both
        }
      }
    }
    optimizer.step(grads);
    updated = true;
    lastOutput = vals[1];
    return vals[0];
  }

  /**
   * Whether the loss ({@code vals[0]}) and every parameter's gradient after this step are finite: the graph's
   * gradient, or its sum with the one the parameter already has (a parameter listed twice: the sum of both).
   */
  private static boolean finite(Tensor[] vals, Tensor[] params) {
    if (!allFinite(vals[0])) return false;
    IdentityHashMap<Tensor, Tensor> sums = new IdentityHashMap<>();
    for (int i = 0; i < params.length; i++) {
      Tensor g = vals[2 + i];
      Tensor p = params[i];
      Tensor prev = sums.get(p);
      sums.put(p, prev != null ? prev.add(g) : p.grad() != null ? p.grad().add(g) : g);
    }
    for (Tensor s : sums.values()) if (!allFinite(s)) return false;
    return true;
  }

  private static boolean allFinite(Tensor t) {
    if (!t.dtype().isFloatingPoint()) return true;
    Tensor c = t.isContiguous() ? t : t.contiguous();
    return c.device().backend().allFinite(c);
  }

  /** The forward's result (the model's output, without history) of the last {@link #run}, or null before one. */
  public Tensor output() {
    return lastOutput;
  }

  /**
   * Runs one step as {@link #run} does, timing each op of the joint graph: milliseconds by op name (the opaque
   * backward nodes under their {@code *_backward} names), most first, for finding where a step's time goes.
   *
   * @throws IllegalStateException if x and y's signature has not been traced yet or is not one graph
   */
  public Map<String, Double> profile(Tensor x, Tensor y) {
    guardChanges();
    Plan plan = plans.get(Signature.of(x, y, module));
    if (!(plan instanceof JointPlan j)) {
      throw new IllegalStateException("TrainingStep.profile: the signature of x " + Arrays.toString(x.shape())
          + " and y " + Arrays.toString(y.shape()) + " is " + (plan == null ? "not traced yet" : "not one graph"));
    }
    long[] nanos = new long[j.graph().nodes().size()];
    runJoint(j, x, y, nanos);
    Map<String, Double> byOp = new java.util.HashMap<>();
    for (GraphNode n : j.graph().nodes()) if (nanos[n.slot] > 0) byOp.merge(n.op(), nanos[n.slot] / 1e6, Double::sum);
    Map<String, Double> sorted = new LinkedHashMap<>();
    byOp.entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed())
        .forEach(e -> sorted.put(e.getKey(), e.getValue()));
    return sorted;
  }

  private Tensor runJoint(JointPlan j, Tensor x, Tensor y) {
    return runJoint(j, x, y, null);
  }

  private Tensor runJoint(JointPlan j, Tensor x, Tensor y, long[] nanos) {
    Tensor[] vals;
    try (Grad off = Grad.off()) {
      vals = j.exec().runAll(nanos, x, y);
      writeGrads(j, vals, x, y);
    }
    lastOutput = vals[1];
    return vals[0];
  }

  /**
   * Writes each gradient of {@code vals} into its parameter's {@code grad()} as eager's backward writes it: adopted
   * where no one else holds its memory, else copied; added onto a gradient the parameter already has.
   */
  private static void writeGrads(JointPlan j, Tensor[] vals, Tensor x, Tensor y) {
    IdentityHashMap<Storage, Boolean> taken = new IdentityHashMap<>(j.fixed());
    taken.put(x.storage(), Boolean.TRUE);
    taken.put(y.storage(), Boolean.TRUE);
    taken.put(vals[0].storage(), Boolean.TRUE);
    taken.put(vals[1].storage(), Boolean.TRUE);
    Tensor[] params = j.params();
    for (int i = 0; i < params.length; i++) {
      Tensor g = vals[2 + i];
      Tensor p = params[i];
      Tensor existing = p.grad();
      if (existing != null) {
        existing.add_(g);
      } else if (g.spansStorage() && taken.put(g.storage(), Boolean.TRUE) == null) {
        p.setGrad(g); // adopted, as eager adopts a gradient no one else holds
      } else {
        p.setGrad(g.cloneContiguous());
      }
    }
  }

  private Tensor runFallback(Tensor x, Tensor y) {
    if (forwardOnly == null) forwardOnly = new CompiledModule(module, passes);
    Tensor out = forwardOnly.call(x);
    Tensor loss = lossFn.apply(out, y);
    loss.backward();
    lastOutput = out.detach();
    return loss.detach();
  }

  private Plan plan(Capture.TrainingResult r, long traceNanos) {
    if (!r.breaks().isEmpty() || r.graph() == null) {
      return new FallbackPlan(r.breaks().isEmpty()
          ? List.of(new GraphBreak("backward", "the step did not become one graph", "")) : r.breaks());
    }
    long t0 = System.nanoTime();
    Graph g = r.graph();
    for (Pass p : passes) g = p.run(g);
    g = tape(g);
    IdentityHashMap<Storage, Boolean> fixed = new IdentityHashMap<>();
    for (GraphNode n : g.nodes()) if (n.value() != null) fixed.put(n.value().storage(), Boolean.TRUE);
    GraphExecutor exec = new GraphExecutor(g);
    return new JointPlan(r.graph(), g, exec, r.gradParams().toArray(new Tensor[0]), fixed, traceNanos,
        System.nanoTime() - t0, deferrable(g, exec));
  }

  /**
   * Per gradient output of {@code g} (outputs 2 on), the op step computing it where it may be handed over deferred:
   * a float32 {@code mm_tn} (a weight gradient g^T x) that no node reads and that is no other output; else -1.
   */
  private static int[] deferrable(Graph g, GraphExecutor exec) {
    IdentityHashMap<GraphNode, Integer> uses = new IdentityHashMap<>();
    for (GraphNode n : g.nodes()) for (GraphNode in : n.inputs) if (in != null) uses.merge(in, 1, Integer::sum);
    for (GraphNode o : g.outputs()) uses.merge(o, 1, Integer::sum);
    List<GraphNode> outs = g.outputs();
    int[] steps = new int[outs.size() - 2];
    for (int i = 0; i < steps.length; i++) {
      GraphNode o = outs.get(2 + i);
      steps[i] = GraphWeightGrad.applies(o) && uses.get(o) == 1 ? exec.stepOf(o) : -1;
    }
    return steps;
  }

  /**
   * {@code g} with each op whose backward rule an opaque {@code *_backward} node applies run recording: the inputs
   * whose gradients the graph uses require grad for that op, so its output carries the autograd node (and the
   * saved tensors) the rule reads. Every other op runs without the tape.
   */
  static Graph tape(Graph g) {
    IdentityHashMap<GraphNode, java.util.TreeSet<Integer>> needed = new IdentityHashMap<>();
    for (GraphNode n : g.nodes()) {
      if (n.kind() == GraphNode.Kind.OP && n.replay() instanceof Capture.OpaqueReplay o) {
        needed.computeIfAbsent(n.inputs.get(1), k -> new java.util.TreeSet<>()).add(o.index());
      }
    }
    if (needed.isEmpty()) return g;
    IdentityHashMap<GraphNode, GraphNode> map = new IdentityHashMap<>();
    List<GraphNode> out = new ArrayList<>();
    for (GraphNode n : g.nodes()) {
      List<GraphNode> ins = new ArrayList<>();
      for (GraphNode in : n.inputs) ins.add(in == null ? null : map.get(in));
      GraphNode c = n.withInputs(ins);
      java.util.TreeSet<Integer> idx = needed.get(n);
      if (idx != null) {
        int[] grads = idx.stream().mapToInt(Integer::intValue).toArray();
        dev.ember.autograd.Tracing.Replay run = n.replay();
        c = c.withReplay(in -> {
          Tensor[] args = in.clone();
          for (int i : grads) {
            Tensor a = args[i];
            if (a != null && a.dtype().isFloatingPoint() && !a.requiresGrad()) args[i] = a.detach().requiresGrad(true);
          }
          try (Grad on = Grad.on()) {
            return run.run(args);
          }
        });
      }
      map.put(n, c);
      out.add(c);
    }
    List<GraphNode> ins = new ArrayList<>();
    for (GraphNode in : g.inputs()) ins.add(map.get(in));
    List<GraphNode> outs = new ArrayList<>();
    for (GraphNode o : g.outputs()) outs.add(map.get(o));
    return new Graph(out, ins, outs);
  }

  /**
   * The joint graph of the most recent signature traced (after the passes).
   *
   * @throws IllegalStateException before the first call, or if that signature did not become one graph
   */
  public Graph lastGraph() {
    Plan last = null;
    for (Plan p : plans.values()) last = p;
    if (last instanceof JointPlan j) return j.graph();
    throw new IllegalStateException("TrainingStep.graph(): " + (last == null ? "not called yet"
        : "the last signature did not become one graph; see explain()"));
  }

  /** {@link #lastGraph()} as text, one line per node. */
  public String graph() {
    return lastGraph().toString();
  }

  /** Whether the most recent signature runs as one joint graph (false before the first call). */
  public boolean isJoint() {
    Plan last = null;
    for (Plan p : plans.values()) last = p;
    return last instanceof JointPlan;
  }

  /** Every break met so far, in order (each sends its signature to the compiled forward and the eager backward). */
  public List<GraphBreak> breaks() {
    List<GraphBreak> all = new ArrayList<>();
    for (Plan p : plans.values()) if (p instanceof FallbackPlan f) all.addAll(f.breaks());
    return all;
  }

  /**
   * Per signature: the joint graph's op count as traced and after the passes, its forward and backward ops, and
   * the trace and pass times; or the breaks that send it to the compiled forward with the eager backward.
   */
  public String explain() {
    StringBuilder sb = new StringBuilder("passes: ");
    List<String> names = new ArrayList<>();
    for (Pass p : passes) names.add(p.name());
    sb.append(names).append('\n');
    if (plans.isEmpty()) sb.append("training step: not called yet\n");
    for (Map.Entry<Signature, Plan> e : plans.entrySet()) {
      sb.append("training step ").append(e.getKey()).append(": ");
      switch (e.getValue()) {
        case JointPlan j -> sb.append("1 joint graph (forward + backward, ").append(j.params().length)
            .append(" gradients), ").append(j.traced().opCount()).append(" ops traced, ").append(j.graph().opCount())
            .append(" after passes (trace ").append(millis(j.traceNanos())).append(" ms, passes ")
            .append(millis(j.passNanos())).append(" ms); forward values kept for the backward: ")
            .append(kib(j.keptBytes())).append(" KiB (as traced: ").append(kib(Rematerialization.keptBytes(j.traced())))
            .append(" KiB)\n");
        case FallbackPlan f -> {
          sb.append("compiled forward + eager backward (").append(f.breaks().size()).append(" graph break")
              .append(f.breaks().size() == 1 ? "" : "s").append(")\n");
          for (GraphBreak b : f.breaks()) sb.append("  break: ").append(b).append('\n');
        }
      }
    }
    if (forwardOnly != null) sb.append(forwardOnly.explain());
    return sb.toString();
  }

  private static String kib(long bytes) {
    return String.format(java.util.Locale.ROOT, "%.1f", bytes / 1024.0);
  }

  private static String millis(long nanos) {
    return String.format(java.util.Locale.ROOT, "%.1f", nanos / 1e6);
  }
}
