package dev.ember.compile;

import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * A module run as captured graphs: its first call with each input signature (shape, dtype, train mode) traces the
 * wrapped module's forward into a {@link Graph} (that call runs eagerly, so the forward's side effects, such as a
 * batch norm's running statistics, happen once), runs the passes on it and caches it; later calls with that
 * signature run the graph (a guard: any other signature traces again). The result is eager's to the bit, and the
 * ops record on the autograd tape as in eager mode.
 *
 * <p>A forward that reads a value into Java ({@code item()}) or uses an op the tracer does not see cannot be one
 * graph. For a {@link Sequential}, the graph is split at the child that breaks: each child is compiled on its own,
 * the breaking one runs eagerly and the others as graphs. Any other module runs eagerly for that signature.
 * {@link #explain()} lists each break with the op and the reason.
 */
public final class CompiledModule extends Module {
  private final Module module;
  /** How the module is applied to the inputs: null for {@code module.call(in[0])}, else a multi-input forward. */
  private final Function<Tensor[], Tensor> forward;
  private final List<Pass> passes;
  private final String where;
  private final Map<Signature, Plan> plans = new LinkedHashMap<>();
  /** The input dim marked symbolic (-1: none). */
  private int batchDim = -1;
  /** Why the marked batch dim could not stay symbolic, or null. */
  private String batchNote;
  /** The graph the last call ran and what its input was (shape, dtype, train mode): a call like it skips the map. */
  private volatile Last lastPlan;

  /**
   * The fast path's one entry, replaced whole (never mutated): threads sharing the module read a plan with the
   * signature it was made for (four fields written one by one let one call pair another's plan with its shape).
   */
  private record Last(GraphPlan plan, int[] shape, DType dtype, boolean training) {}
  private boolean planMemory = true;
  private boolean reuseOutput;
  /** Whether a module changed since the plans were made: then every signature is traced again. */
  private final ModuleChanges changes = new ModuleChanges();

  CompiledModule(Module module, List<Pass> passes) {
    this(module, null, passes, "");
  }

  CompiledModule(Module module, Function<Tensor[], Tensor> forward, List<Pass> passes) {
    this(module, java.util.Objects.requireNonNull(forward, "forward"), passes, "");
  }

  private CompiledModule(Module module, Function<Tensor[], Tensor> forward, List<Pass> passes, String where) {
    this.module = registerModule("module", module);
    this.forward = forward;
    this.passes = List.copyOf(passes);
    this.where = where;
  }

  /**
   * What a compiled module is specialised on: each input's shape (-1 in a symbolic batch dim) and dtype, and the
   * train mode.
   */
  record Signature(List<List<Integer>> shapes, List<DType> dtypes, boolean training) {
    static Signature of(Tensor x, boolean training, int batchDim) {
      List<Integer> shape = new ArrayList<>(Arrays.stream(x.shapeRef()).boxed().toList());
      if (batchDim >= 0 && batchDim < shape.size()) shape.set(batchDim, -1);
      return new Signature(List.of(List.copyOf(shape)), List.of(x.dtype()), training);
    }

    static Signature of(Tensor[] xs, boolean training) {
      List<List<Integer>> shapes = new ArrayList<>(xs.length);
      List<DType> dtypes = new ArrayList<>(xs.length);
      for (Tensor x : xs) {
        shapes.add(Arrays.stream(x.shapeRef()).boxed().toList());
        dtypes.add(x.dtype());
      }
      return new Signature(List.copyOf(shapes), List.copyOf(dtypes), training);
    }

    @Override
    public String toString() {
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < shapes.size(); i++) {
        if (i > 0) sb.append(", ");
        sb.append(dtypes.get(i).name().toLowerCase(java.util.Locale.ROOT))
            .append(shapes.get(i).toString().replace("-1", "B"));
      }
      return sb.append(training ? " train" : " eval").toString();
    }
  }

  /**
   * Marks input dim {@code dim} as the batch: calls that differ only in its size share one graph. The first two
   * batch sizes are traced; if their graphs are the same but for dims that scale with the batch (see
   * {@link GraphNode#perBatch()}), one graph serves every batch size from then on; if not, each size gets its own
   * graph and {@link #explain()} says why. Clears what was traced before.
   *
   * @return this
   */
  public CompiledModule dynamicBatch(int dim) {
    if (forward != null) {
      throw new IllegalStateException(name() + ".dynamicBatch: a forward of several inputs is traced per shape");
    }
    if (dim < 0) throw new IllegalArgumentException(name() + ".dynamicBatch: dim must be >= 0, got " + dim);
    batchDim = dim;
    batchNote = null;
    plans.clear();
    lastPlan = null;
    return this;
  }

  /**
   * Whether inference calls (grad off) run under a memory plan, so that a call allocates no tensor memory but its
   * result (default: on); see {@link #reuseOutput}.
   *
   * @return this
   */
  public CompiledModule planMemory(boolean on) {
    planMemory = on;
    for (Plan p : plans.values()) if (p instanceof GraphPlan g) g.executor().planning(on);
    return this;
  }

  /**
   * Whether an inference call's result is written into a buffer of the memory plan too (default: off), so that a
   * call allocates no tensor memory at all. The result is then valid until the next call: that call releases it,
   * and using it afterwards throws an {@link IllegalStateException} (copy it with {@code clone()} to keep it). The
   * next call is any thread's: a module called from several threads must leave this off (or each thread must have
   * its own compiled module), since another thread's call overwrites the buffer while a reader may be using it.
   *
   * @return this
   */
  public CompiledModule reuseOutput(boolean on) {
    reuseOutput = on;
    for (Plan p : plans.values()) if (p instanceof GraphPlan g) g.executor().reuseOutput(on);
    return this;
  }

  private GraphExecutor executor(Graph g) {
    GraphExecutor e = new GraphExecutor(g);
    e.planning(planMemory);
    e.reuseOutput(reuseOutput);
    return e;
  }

  /** How one signature runs. */
  private sealed interface Plan permits GraphPlan, EagerPlan, SplitPlan {}

  /** A graph as traced and after the passes, with the nanoseconds the trace (an eager call) and the passes took. */
  private record GraphPlan(Graph traced, Graph graph, long traceNanos, long passNanos, GraphExecutor executor)
      implements Plan {
    /** The traced size of dim d of the input. */
    int tracedSize(int d) {
      return traced.inputs().get(0).shape()[d];
    }

    boolean generic() {
      return graph.inputs().get(0).perBatch() != null;
    }
  }

  private record EagerPlan(List<GraphBreak> breaks) implements Plan {}

  private record SplitPlan(List<CompiledModule> children, List<GraphBreak> breaks) implements Plan {}

  @Override
  public String name() {
    return "Compiled" + module.name();
  }

  /** The module this one compiles. */
  public Module module() {
    return module;
  }

  /** Drops every plan if any module changed since they were made (see {@link ModuleChanges}). */
  private void guardChanges() {
    if (!changes.moved()) return;
    synchronized (plans) {
      plans.clear();
      lastPlan = null;
    }
  }

  /**
   * Eager's result of a trace: the trace made the floating inputs require grad (so that untraced ops show), so its
   * result has a history even where eager's would have none: with grad off, or when neither an input nor anything the
   * graph reads as a parameter requires grad.
   */
  private static Tensor traced(Capture.Result r, Tensor[] inputs, boolean grad) {
    if (!grad) return r.eager().detach();
    for (Tensor x : inputs) if (x.requiresGrad()) return r.eager();
    if (r.graph() == null) return r.eager();
    for (GraphNode n : r.graph().nodes()) {
      if (n.kind() == GraphNode.Kind.PARAMETER && n.value().requiresGrad()) return r.eager();
    }
    return r.eager().detach();
  }

  @Override
  public Tensor forward(Tensor x) {
    guardChanges();
    boolean training = module.isTraining();
    Last last = lastPlan;
    if (last != null && x.dtype() == last.dtype() && training == last.training()
        && Arrays.equals(x.shapeRef(), last.shape())) {
      return last.plan().executor().run(x);
    }
    Plan plan;
    synchronized (plans) { // threads sharing the module: one traces a signature, the others wait for its plan
      Signature sig = Signature.of(x, training, batchDim);
      plan = plans.get(sig);
      boolean otherBatch = plan instanceof GraphPlan g && batchDim >= 0 && x.dim() > batchDim && !g.generic()
          && g.tracedSize(batchDim) != x.shapeRef()[batchDim];
      if (plan == null || otherBatch) { // the trace is an eager run: its result is this call's (side effects once)
        boolean grad = dev.ember.autograd.Grad.enabled();
        long t0 = System.nanoTime();
        Capture.Result r = Capture.trace(forward != null ? forward : in -> module.call(in[0]), new Tensor[] {x},
            Compiler.names(module), where);
        Plan traced = plan(r, System.nanoTime() - t0);
        if (otherBatch) generalize(sig, (GraphPlan) plan, traced, x);
        else plans.put(sig, traced);
        changes.settle(); // what the forward itself registered (a lazy buffer) is in the plan
        return traced(r, new Tensor[] {x}, grad);
      }
    }
    return switch (plan) {
      case GraphPlan g -> {
        lastPlan = new Last(g, x.shape(), x.dtype(), training);
        yield g.executor().run(x);
      }
      case EagerPlan e -> forward != null ? forward.apply(new Tensor[] {x}) : module.call(x);
      case SplitPlan s -> {
        Tensor h = x;
        for (CompiledModule c : s.children()) h = c.call(h);
        yield h;
      }
    };
  }

  /**
   * The compiled forward of several inputs (see {@link Compiler#compile(Module, Function)}): the first call with
   * each signature (every input's shape and dtype, and the train mode) traces, later ones run its graph. One input
   * is {@link #forward(Tensor)}.
   */
  public Tensor forward(Tensor... inputs) {
    if (inputs.length == 1) return forward(inputs[0]);
    if (forward == null) {
      throw new IllegalArgumentException(name() + ".forward: compiled for one input, got " + inputs.length
          + "; compile a forward of several with Compiler.compile(module, in -> ...)");
    }
    guardChanges();
    boolean training = module.isTraining();
    Signature sig = Signature.of(inputs, training);
    Plan plan;
    synchronized (plans) {
      plan = plans.get(sig);
      if (plan == null) {
        boolean grad = dev.ember.autograd.Grad.enabled();
        long t0 = System.nanoTime();
        Capture.Result r = Capture.trace(forward, inputs.clone(), Compiler.names(module), where);
        plans.put(sig, plan(r, System.nanoTime() - t0));
        changes.settle();
        return traced(r, inputs, grad);
      }
    }
    return switch (plan) {
      case GraphPlan g -> g.graph().run(inputs);
      case EagerPlan e -> forward.apply(inputs);
      case SplitPlan s -> throw new IllegalStateException(name() + ": a forward of several inputs is not split");
    };
  }

  /** {@link #forward(Tensor...)} through this module's forward hooks, as {@link #call(Tensor)} for one input. */
  public Tensor call(Tensor... inputs) {
    if (inputs.length == 1) return call(inputs[0]);
    return call(Arrays.asList(inputs), () -> forward(inputs));
  }

  /** One graph for every batch size from the plans at two sizes, or (failing that) a graph per batch size. */
  private void generalize(Signature sig, GraphPlan first, Plan second, Tensor x) {
    lastPlan = null;
    String reason;
    if (second instanceof GraphPlan g2) {
      try {
        Graph generic = BatchGeneralization.generalize(first.graph(), first.tracedSize(batchDim), g2.graph(),
            x.shapeRef()[batchDim]);
        plans.put(sig, new GraphPlan(first.traced(), generic, first.traceNanos() + g2.traceNanos(),
            first.passNanos() + g2.passNanos(), executor(generic)));
        return;
      } catch (BatchGeneralization.NotGeneric e) {
        reason = e.getMessage();
      }
    } else {
      reason = "the trace at batch " + x.shapeRef()[batchDim] + " did not become one graph";
    }
    batchNote = "dim " + batchDim + " is not a symbolic batch: " + reason;
    batchDim = -1; // a graph per size from now on
    plans.remove(sig);
    GraphNode in = first.traced().inputs().get(0);
    plans.put(new Signature(List.of(Arrays.stream(in.shape()).boxed().toList()), List.of(in.dtype()), sig.training()),
        first);
    plans.put(Signature.of(x, sig.training(), -1), second);
  }

  private Plan plan(Capture.Result r, long traceNanos) {
    if (r.breaks().isEmpty() && r.graph() != null) {
      long t0 = System.nanoTime();
      Graph g = r.graph();
      for (Pass p : passes) g = p.run(g);
      return new GraphPlan(r.graph(), g, traceNanos, System.nanoTime() - t0, executor(g));
    }
    List<GraphBreak> breaks = r.breaks().isEmpty()
        ? List.of(new GraphBreak("output", "the forward's result was not computed by traced ops", where))
        : r.breaks();
    if (forward == null && module instanceof Sequential seq && module.forwardHookCount() == 0) {
      List<CompiledModule> children = new ArrayList<>();
      for (Map.Entry<String, Module> e : seq.namedChildren().entrySet()) {
        CompiledModule child = new CompiledModule(e.getValue(), null, passes,
            where.isEmpty() ? e.getKey() : where + "." + e.getKey());
        child.batchDim = batchDim;
        child.planMemory = planMemory;
        child.reuseOutput = reuseOutput;
        children.add(child);
      }
      return new SplitPlan(children, breaks);
    }
    return new EagerPlan(breaks);
  }

  /**
   * The graph run for the most recent signature traced (after the passes), as text: one line per node.
   *
   * @throws IllegalStateException before the first call, or if that signature did not become one graph
   */
  public String graph() {
    return lastGraph().toString();
  }

  /** The graph (after the passes) of the most recent signature traced; see {@link #graph()}. */
  public Graph lastGraph() {
    return lastGraphPlan().graph();
  }

  /**
   * The graph of the most recent signature as traced, before the passes: its {@link Graph#opCount()} against
   * {@link #lastGraph()}'s is the number of kernels the passes saved.
   *
   * @throws IllegalStateException before the first call, or if that signature did not become one graph
   */
  public Graph lastTracedGraph() {
    return lastGraphPlan().traced();
  }

  private GraphPlan lastGraphPlan() {
    Plan last = null;
    for (Plan p : plans.values()) last = p;
    if (last instanceof GraphPlan g) return g;
    throw new IllegalStateException(name() + ".graph(): " + (last == null ? "not called yet"
        : "the last signature did not become one graph; see explain()"));
  }

  /** Number of signatures traced so far (each one graph, or a split or eager plan). */
  public int signatures() {
    return plans.size();
  }

  /** Every break met so far, in order, with those of the children a split runs. */
  public List<GraphBreak> breaks() {
    List<GraphBreak> all = new ArrayList<>();
    for (Plan p : plans.values()) {
      switch (p) {
        case GraphPlan g -> { }
        case EagerPlan e -> all.addAll(e.breaks());
        case SplitPlan s -> {
          all.addAll(s.breaks());
          for (CompiledModule c : s.children()) all.addAll(c.breaks());
        }
      }
    }
    return all;
  }

  /**
   * What compiling did, per signature: the number of ops (kernels) as traced and after the passes and the time the
   * trace and the passes took, or each graph break with the op and the reason and how that signature runs instead.
   */
  public String explain() {
    StringBuilder sb = new StringBuilder("passes: ").append(passNames()).append('\n');
    explain(sb, "");
    return sb.toString();
  }

  private void explain(StringBuilder sb, String indent) {
    String label = where.isEmpty() ? name() : where + " (" + module.name() + ")";
    if (batchNote != null) sb.append(indent).append(label).append(": ").append(batchNote).append('\n');
    if (plans.isEmpty()) sb.append(indent).append(label).append(": not called yet\n");
    for (Map.Entry<Signature, Plan> e : plans.entrySet()) {
      sb.append(indent).append(label).append(" ").append(e.getKey()).append(": ");
      switch (e.getValue()) {
        case GraphPlan g -> sb.append(g.generic() ? "1 graph for every batch size, " : "1 graph, ").append(g.traced().opCount()).append(" ops traced, ")
            .append(g.graph().opCount()).append(" after passes (trace ").append(millis(g.traceNanos()))
            .append(" ms, passes ").append(millis(g.passNanos())).append(" ms)\n").append(indent).append("  ")
            .append(g.executor().memory()).append('\n');
        case EagerPlan x -> {
          sb.append("eager (").append(x.breaks().size()).append(" graph break").append(x.breaks().size() == 1 ? "" : "s")
              .append(")\n");
          for (GraphBreak b : x.breaks()) sb.append(indent).append("  break: ").append(b).append('\n');
        }
        case SplitPlan s -> {
          sb.append("split into its ").append(s.children().size()).append(" children\n");
          for (GraphBreak b : s.breaks()) sb.append(indent).append("  break: ").append(b).append('\n');
          for (CompiledModule c : s.children()) c.explain(sb, indent + "  ");
        }
      }
    }
  }

  private static String millis(long nanos) {
    return String.format(java.util.Locale.ROOT, "%.1f", nanos / 1e6);
  }

  private String passNames() {
    List<String> names = new ArrayList<>();
    for (Pass p : passes) names.add(p.name());
    return names.toString();
  }
}
