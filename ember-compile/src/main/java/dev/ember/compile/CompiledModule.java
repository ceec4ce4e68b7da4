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
  private final List<Pass> passes;
  private final String where;
  private final Map<Signature, Plan> plans = new LinkedHashMap<>();

  CompiledModule(Module module, List<Pass> passes) {
    this(module, passes, "");
  }

  private CompiledModule(Module module, List<Pass> passes, String where) {
    this.module = registerModule("module", module);
    this.passes = List.copyOf(passes);
    this.where = where;
  }

  /** What a compiled module is specialised on: the input's shape and dtype, and the train mode. */
  record Signature(List<Integer> shape, DType dtype, boolean training) {
    static Signature of(Tensor x, boolean training) {
      return new Signature(Arrays.stream(x.shapeRef()).boxed().toList(), x.dtype(), training);
    }

    @Override
    public String toString() {
      return dtype.name().toLowerCase(java.util.Locale.ROOT) + shape + (training ? " train" : " eval");
    }
  }

  /** How one signature runs. */
  private sealed interface Plan permits GraphPlan, EagerPlan, SplitPlan {}

  /** A graph as traced and after the passes, with the nanoseconds the trace (an eager call) and the passes took. */
  private record GraphPlan(Graph traced, Graph graph, long traceNanos, long passNanos) implements Plan {}

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

  @Override
  public Tensor forward(Tensor x) {
    Signature sig = Signature.of(x, module.isTraining());
    Plan plan = plans.get(sig);
    if (plan == null) { // the trace is an eager run: its result is this call's (the forward's side effects once)
      boolean grad = dev.ember.autograd.Grad.enabled();
      long t0 = System.nanoTime();
      Capture.Result r = Capture.trace(in -> module.call(in[0]), new Tensor[] {x}, Compiler.names(module), where);
      plans.put(sig, plan(r, System.nanoTime() - t0));
      return grad ? r.eager() : r.eager().detach();
    }
    return switch (plan) {
      case GraphPlan g -> g.graph().run(x);
      case EagerPlan e -> module.call(x);
      case SplitPlan s -> {
        Tensor h = x;
        for (CompiledModule c : s.children()) h = c.call(h);
        yield h;
      }
    };
  }

  private Plan plan(Capture.Result r, long traceNanos) {
    if (r.breaks().isEmpty() && r.graph() != null) {
      long t0 = System.nanoTime();
      Graph g = r.graph();
      for (Pass p : passes) g = p.run(g);
      return new GraphPlan(r.graph(), g, traceNanos, System.nanoTime() - t0);
    }
    List<GraphBreak> breaks = r.breaks().isEmpty()
        ? List.of(new GraphBreak("output", "the forward's result was not computed by traced ops", where))
        : r.breaks();
    if (module instanceof Sequential seq && module.forwardHookCount() == 0) {
      List<CompiledModule> children = new ArrayList<>();
      for (Map.Entry<String, Module> e : seq.namedChildren().entrySet()) {
        children.add(new CompiledModule(e.getValue(), passes, where.isEmpty() ? e.getKey() : where + "." + e.getKey()));
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
    Plan last = null;
    for (Plan p : plans.values()) last = p;
    if (last instanceof GraphPlan g) return g.graph();
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
    if (plans.isEmpty()) sb.append(indent).append(label).append(": not called yet\n");
    for (Map.Entry<Signature, Plan> e : plans.entrySet()) {
      sb.append(indent).append(label).append(" ").append(e.getKey()).append(": ");
      switch (e.getValue()) {
        case GraphPlan g -> sb.append("1 graph, ").append(g.traced().opCount()).append(" ops traced, ")
            .append(g.graph().opCount()).append(" after passes (trace ").append(millis(g.traceNanos()))
            .append(" ms, passes ").append(millis(g.passNanos())).append(" ms)\n");
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
