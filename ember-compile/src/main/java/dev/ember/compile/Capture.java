package dev.ember.compile;

import dev.ember.autograd.Grad;
import dev.ember.autograd.Tracing;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Traces a forward into a {@link Graph}: installs itself as the thread's {@link Tracing.Tracer}, runs the forward
 * eagerly (floating inputs requiring grad, so that an op the tracer does not see is caught: its result arrives with
 * a gradient history but no node), and turns each reported op into a node. Tensors the forward reads that are not
 * inputs become parameter nodes (the module's parameters and buffers, by name, and any other leaf that requires
 * grad) or constants (made inside the forward). An op reported inside another (a composite's parts) leaves a node nothing reads, removed at the end.
 */
final class Capture implements Tracing.Tracer {
  private final Map<Tensor, String> parameterNames;
  private final IdentityHashMap<Tensor, GraphNode> known = new IdentityHashMap<>();
  private final IdentityHashMap<Tensor, Integer> versions = new IdentityHashMap<>();
  /**
   * Outputs of ops that could not be captured, with the break: what reads them is not captured either. They count
   * as breaks only if the forward's result depends on them: an op reported inside another (say the reshape inside
   * linear, reading the unreported 2-d product) breaks, but the outer op's node replaces it.
   */
  private final IdentityHashMap<Tensor, GraphBreak> broken = new IdentityHashMap<>();
  /** The break of the input being resolved, when it has one. */
  private GraphBreak pending;
  private int unnamed;
  /** Tensors that captured ops write besides their outputs (a training batch norm's running statistics). */
  private final IdentityHashMap<Tensor, Boolean> written = new IdentityHashMap<>();
  private final List<GraphNode> nodes = new ArrayList<>();
  private final List<GraphNode> inputs = new ArrayList<>();
  final List<GraphBreak> breaks = new ArrayList<>();
  private final String where;

  private Capture(Map<Tensor, String> parameterNames, String where) {
    this.parameterNames = parameterNames;
    this.where = where;
  }

  /** What a trace gives: the graph (null if the forward's result could not be traced), its breaks, the eager result. */
  record Result(Graph graph, List<GraphBreak> breaks, Tensor eager) {}

  /**
   * Traces {@code forward} on {@code args}; {@code parameterNames} names the module's parameters and buffers (by
   * identity). The graph is returned with its dead nodes removed.
   */
  static Result trace(Function<Tensor[], Tensor> forward, Tensor[] args, Map<Tensor, String> parameterNames,
      String where) {
    Capture c = new Capture(parameterNames, where);
    Tensor[] traced = new Tensor[args.length];
    for (int i = 0; i < args.length; i++) {
      Tensor a = args[i];
      traced[i] = a.dtype().isFloatingPoint() && !a.requiresGrad() ? a.detach().requiresGrad(true) : a;
      GraphNode in = GraphNode.input(i, a.shape(), a.dtype());
      c.nodes.add(in);
      c.inputs.add(in);
      c.note(traced[i], in);
    }
    IdentityHashMap<Tensor, Integer> stateVersions = new IdentityHashMap<>();
    for (Tensor t : parameterNames.keySet()) stateVersions.put(t, t.version());
    Tensor out;
    try (Grad on = Grad.on(); Tracing.Scope scope = Tracing.install(c)) {
      out = forward.apply(traced);
    }
    java.util.TreeSet<String> modified = new java.util.TreeSet<>();
    for (Map.Entry<Tensor, Integer> e : stateVersions.entrySet()) { // a write the graph would not repeat
      if (e.getKey().version() != e.getValue() && !c.written.containsKey(e.getKey())) {
        modified.add(parameterNames.get(e.getKey()));
      }
    }
    for (String name : modified) {
      c.breaks.add(new GraphBreak("in-place write", "module state " + name
          + " was modified by an op the tracer does not see", where));
    }
    GraphNode result = c.nodeOf(out, "output");
    if (result == null) c.breaks.add(c.pending);
    Graph g = result == null ? null : new DeadCodeElimination().run(new Graph(c.nodes, c.inputs, result));
    return new Result(g, List.copyOf(c.breaks), out);
  }

  private void note(Tensor t, GraphNode n) {
    known.put(t, n);
    versions.put(t, t.version());
  }

  /** Whether every tensor of {@code in} but {@code written} is a constant of the graph, or would become one if read. */
  private boolean allConstant(Tensor[] in, Tensor written) {
    for (Tensor t : in) {
      if (t == null || t == written) continue;
      GraphNode n = known.get(t);
      if (n != null ? n.kind() != GraphNode.Kind.CONSTANT
          : parameterNames.containsKey(t) || t.requiresGrad() || broken.containsKey(t)) {
        return false;
      }
    }
    return true;
  }

  /** The node of tensor t read by op {@code op}: known, a parameter, or a new constant; null records a break. */
  private GraphNode nodeOf(Tensor t, String op) {
    GraphNode n = known.get(t);
    if (n != null) {
      if (versions.get(t) != t.version()) {
        pending = new GraphBreak(op, "its input (" + n.op() + ", " + n.type()
            + ") was modified in place by an op the tracer does not see",
            where);
        return null;
      }
      return n;
    }
    GraphBreak b = broken.get(t);
    if (b != null) {
      pending = b;
      return null;
    }
    String param = parameterNames.get(t);
    if (param == null && t.isLeaf() && t.requiresGrad()) param = "param" + unnamed++; // trainable, not the module's
    if (param != null) {
      n = GraphNode.parameter(param, t);
    } else if (t.gradFn() != null && !t.isLeaf()) {
      pending = new GraphBreak(t.gradFn().name(), "computed a value " + op + " reads (" + Arrays.toString(t.shape())
          + ") and has no trace hook", where);
      return null;
    } else {
      n = GraphNode.constant(t);
    }
    nodes.add(n);
    note(t, n);
    return n;
  }

  @Override
  public void op(String name, Tensor out, Tensor[] in, Object[] attrs, Tracing.Replay replay) {
    List<GraphNode> ins = new ArrayList<>(in.length);
    for (Tensor t : in) {
      if (t == null) {
        ins.add(null);
        continue;
      }
      // an in-place op returns its input, already written: the node it had stands for the value the op read; if
      // that is a tensor made during the trace (a constant to the graph), the write is part of the constant
      boolean made = t == out && (known.containsKey(t) ? known.get(t).kind() == GraphNode.Kind.CONSTANT
          : !parameterNames.containsKey(t) && !broken.containsKey(t) && !(t.isLeaf() && t.requiresGrad()));
      GraphNode n = made ? null : t == out && known.containsKey(t) ? known.get(t) : nodeOf(t, name);
      if (made) { // a write into a tensor made in the trace
        if (allConstant(in, out)) { // of constants: a constant again, read with its new value
          known.remove(out);
          return;
        }
        pending = new GraphBreak(name, "writes in place into a tensor made during the trace (" + Arrays.toString(
            t.shape()) + "), which a graph would keep as a constant", where);
        n = null;
      }
      if (n == null) { // a break: the op has no graph node, and whatever reads its output breaks too
        broken.put(out, pending);
        known.remove(out);
        return;
      }
      ins.add(n);
    }
    GraphNode node = GraphNode.op(name, ins, GraphNode.attrs(attrs), out.shape(), out.dtype(), replay);
    if (node.isRandom() && name.equals("batch_norm")) {
      for (int i = 1; i < in.length; i++) { // the running statistics, and the batch count (module BatchNorm's)
        if (in[i] != null && i != 3 && i != 4) {
          written.put(in[i], Boolean.TRUE);
          note(in[i], ins.get(i)); // its new version is the one later ops read
        }
      }
    }
    nodes.add(node);
    note(out, node);
  }

  @Override
  public void unsupported(String name, String reason) {
    breaks.add(new GraphBreak(name, reason, where));
  }
}
