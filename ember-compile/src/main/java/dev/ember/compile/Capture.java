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
  /** Pairs (op, the node of its last reported part, which computed the same tensor). */
  private final List<GraphNode[]> superseded = new ArrayList<>();
  final List<GraphBreak> breaks = new ArrayList<>();
  private final String where;
  /**
   * Whether the trace is in a backward: recording is off there, so an op the tracer does not see leaves no history
   * to catch it by, and a tensor a backward rule reads that is neither a node, a parameter nor a scalar breaks.
   */
  private boolean backward;
  /** Whether this is a training step's trace, whose backward it captures too ({@link #traceTraining}). */
  private final boolean training;

  private Capture(Map<Tensor, String> parameterNames, String where, boolean training) {
    this.parameterNames = parameterNames;
    this.where = where;
    this.training = training;
  }

  @Override
  public boolean capturesBackward() {
    return training;
  }

  /** What a trace gives: the graph (null if the forward's result could not be traced), its breaks, the eager result. */
  record Result(Graph graph, List<GraphBreak> breaks, Tensor eager) {}

  /**
   * Traces {@code forward} on {@code args}; {@code parameterNames} names the module's parameters and buffers (by
   * identity). The graph is returned with its dead nodes removed.
   */
  static Result trace(Function<Tensor[], Tensor> forward, Tensor[] args, Map<Tensor, String> parameterNames,
      String where) {
    Capture c = new Capture(parameterNames, where, false);
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

  /**
   * What a training trace gives: the joint graph (outputs: the loss, the forward's result, then the gradient of
   * each parameter that got one; null if something could not be traced), its breaks, the eager loss and result,
   * and the parameters whose gradients the graph returns (in the order of its outputs 2...).
   */
  record TrainingResult(Graph graph, List<GraphBreak> breaks, Tensor loss, Tensor output, List<Tensor> gradParams) {}

  /**
   * Traces a training step, forward and backward, as AOTAutograd does: the forward and the loss ({@code loss} on
   * the forward's result and {@code args[1..]}) as {@link #trace} traces a forward, then the loss's backward with
   * the tracer still installed, so the ops the backward rules run become nodes too. The step runs eagerly: the
   * parameters' gradients are those of this call, accumulated onto any they had as eager's backward does.
   *
   * @param params the trainable parameters, whose gradients the graph returns
   */
  static TrainingResult traceTraining(Function<Tensor, Tensor> forward,
      java.util.function.BiFunction<Tensor, Tensor, Tensor> loss, Tensor[] args, List<Tensor> params,
      Map<Tensor, String> parameterNames, String where) {
    Capture c = new Capture(parameterNames, where, true);
    Tensor[] traced = new Tensor[args.length];
    for (int i = 0; i < args.length; i++) {
      Tensor a = args[i];
      GraphNode in = GraphNode.input(i, a.shape(), a.dtype());
      traced[i] = a.dtype().isFloatingPoint() && !a.requiresGrad() ? a.detach().requiresGrad(true) : a;
      c.nodes.add(in);
      c.inputs.add(in);
      c.note(traced[i], in);
    }
    IdentityHashMap<Tensor, Integer> stateVersions = new IdentityHashMap<>();
    for (Tensor t : parameterNames.keySet()) stateVersions.put(t, t.version());
    Tensor[] before = new Tensor[params.size()];
    for (int i = 0; i < before.length; i++) { // the trace's gradients are this step's alone
      before[i] = params.get(i).grad();
      params.get(i).setGrad(null);
    }
    Tensor out;
    Tensor l;
    Tensor[] grads = new Tensor[params.size()];
    try {
      try (Grad on = Grad.on(); Tracing.Scope scope = Tracing.install(c)) {
        out = forward.apply(traced[0]);
        l = loss.apply(out, traced[1]);
        if (l.numel() != 1) {
          throw new IllegalArgumentException("compileTraining: the loss must be a scalar, got shape "
              + Arrays.toString(l.shape()));
        }
        Tensor seed = Tensor.onesLike(l);
        GraphNode seedNode = GraphNode.constant(seed);
        c.nodes.add(seedNode);
        c.note(seed, seedNode);
        c.backward = true;
        c.untrainedHistoriesOff(traced, args);
        l.backward(seed);
      }
      for (int i = 0; i < grads.length; i++) grads[i] = params.get(i).grad();
    } finally {
      for (int i = 0; i < before.length; i++) { // as eager: existing gradients accumulate the new ones
        Tensor p = params.get(i);
        Tensor g = p.grad();
        if (before[i] == null) continue;
        if (g != null) {
          try (Grad off = Grad.off()) {
            before[i].add_(g);
          }
        }
        p.setGrad(before[i]);
      }
    }
    java.util.TreeSet<String> modified = new java.util.TreeSet<>();
    for (Map.Entry<Tensor, Integer> e : stateVersions.entrySet()) {
      if (e.getKey().version() != e.getValue() && !c.written.containsKey(e.getKey())) {
        modified.add(parameterNames.get(e.getKey()));
      }
    }
    for (String name : modified) {
      c.breaks.add(new GraphBreak("in-place write", "module state " + name
          + " was modified by an op the tracer does not see", where));
    }
    List<GraphNode> outputs = new ArrayList<>();
    List<Tensor> gradParams = new ArrayList<>();
    GraphNode lossNode = c.nodeOf(l, "loss");
    if (lossNode == null) c.breaks.add(c.pending);
    GraphNode outNode = c.nodeOf(out, "output");
    if (outNode == null) c.breaks.add(c.pending);
    outputs.add(lossNode);
    outputs.add(outNode);
    for (int i = 0; i < grads.length; i++) {
      if (grads[i] == null) continue; // not reached by the backward: eager leaves it as it was
      GraphNode g = c.known.get(grads[i]);
      if (g != null && c.versions.get(grads[i]) != grads[i].version()) g = null; // changed in place since
      if (g == null || g.kind() != GraphNode.Kind.OP) {
        GraphBreak b = c.broken.get(grads[i]);
        c.breaks.add(b != null ? b : new GraphBreak("backward", "the gradient of parameter "
            + parameterNames.getOrDefault(params.get(i), "#" + i) + " was not computed by traced ops", where));
        continue;
      }
      outputs.add(g);
      gradParams.add(params.get(i));
    }
    Graph g = null;
    if (c.breaks.isEmpty()) {
      c.preferParts(outputs);
      g = new DeadCodeElimination().run(new Graph(c.nodes, c.inputs, outputs));
    }
    return new TrainingResult(g, List.copyOf(new java.util.LinkedHashSet<>(c.breaks)), l, out,
        List.copyOf(gradParams)); // a break met by several ops (a rule used at each layer) is listed once
  }

  /**
   * Before a training trace's backward: the inputs made to require grad (so that the forward's untraced ops showed)
   * and the values computed from them alone lose their histories, so the backward rules see the inputs that need
   * gradients as eager's backward does (a convolution's weight gradient may take another path when its input
   * needs one too).
   */
  private void untrainedHistoriesOff(Tensor[] traced, Tensor[] args) {
    IdentityHashMap<GraphNode, Boolean> trainable = new IdentityHashMap<>();
    for (GraphNode n : nodes) {
      boolean t = n.kind() == GraphNode.Kind.PARAMETER && n.value().requiresGrad();
      for (GraphNode in : n.inputs) t |= in != null && trainable.containsKey(in);
      if (t) trainable.put(n, Boolean.TRUE);
    }
    for (Map.Entry<Tensor, GraphNode> e : known.entrySet()) {
      Tensor t = e.getKey();
      if (t.gradFn() != null && e.getValue().kind() == GraphNode.Kind.OP && !trainable.containsKey(e.getValue())) {
        t.setGradFn(null);
      }
    }
    for (int i = 0; i < traced.length; i++) if (traced[i] != args[i]) traced[i].requiresGrad(false);
  }

  /**
   * For a training trace: where the backward reads the parts of an op (a composite: attention's scores and
   * softmax), those parts run anyway, so the op itself is not run besides them: its readers read its last part
   * instead (the same tensor). A random op keeps its own node (its parts would draw again).
   */
  private void preferParts(List<GraphNode> outputs) {
    IdentityHashMap<GraphNode, Boolean> live = new IdentityHashMap<>();
    for (GraphNode o : outputs) live.put(o, Boolean.TRUE);
    for (int i = nodes.size() - 1; i >= 0; i--) {
      GraphNode n = nodes.get(i);
      if (live.containsKey(n)) for (GraphNode in : n.inputs) if (in != null) live.put(in, Boolean.TRUE);
    }
    IdentityHashMap<GraphNode, GraphNode> replace = new IdentityHashMap<>();
    for (GraphNode[] pair : superseded) {
      GraphNode op = pair[0];
      GraphNode part = pair[1];
      if (!live.containsKey(op) || op.isRandom()) continue;
      IdentityHashMap<GraphNode, Boolean> before = ancestors(op.inputs, Map.of());
      IdentityHashMap<GraphNode, Boolean> parts = ancestors(part.inputs, before);
      boolean read = false;
      for (GraphNode n : parts.keySet()) read |= live.containsKey(n);
      if (read) replace.put(op, part);
    }
    if (replace.isEmpty()) return;
    for (GraphNode n : nodes) {
      for (int i = 0; i < n.inputs.size(); i++) {
        GraphNode r = replace.get(n.inputs.get(i));
        if (r != null) n.inputs.set(i, r);
      }
    }
    for (int i = 0; i < outputs.size(); i++) {
      GraphNode r = replace.get(outputs.get(i));
      if (r != null) outputs.set(i, r);
    }
  }

  /** The nodes {@code from} and their ancestors, not entering {@code stop}. */
  private static IdentityHashMap<GraphNode, Boolean> ancestors(List<GraphNode> from, Map<GraphNode, Boolean> stop) {
    IdentityHashMap<GraphNode, Boolean> seen = new IdentityHashMap<>();
    java.util.ArrayDeque<GraphNode> todo = new java.util.ArrayDeque<>();
    for (GraphNode n : from) if (n != null && !stop.containsKey(n) && seen.put(n, Boolean.TRUE) == null) todo.push(n);
    while (!todo.isEmpty()) {
      for (GraphNode in : todo.pop().inputs) {
        if (in != null && !stop.containsKey(in) && seen.put(in, Boolean.TRUE) == null) todo.push(in);
      }
    }
    return seen;
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
    if (param == null && t.isLeaf() && t.requiresGrad()) { // trainable, not the module's
      if (training) { // eager's backward gives it a gradient, which the joint graph would not return
        pending = new GraphBreak(op, "reads a tensor that requires grad (" + Arrays.toString(t.shape())
            + ") but is not a parameter of the module; register it as one to compile the step", where);
        return null;
      }
      param = "param" + unnamed++;
    }
    if (param != null) {
      n = GraphNode.parameter(param, t);
    } else if (backward && t.numel() != 1) {
      pending = new GraphBreak(op, "a backward rule passed it a value (" + Arrays.toString(t.shape())
          + ") that no traced op computed", where);
      return null;
    } else if (t.gradFn() != null && !t.isLeaf()) {
      pending = new GraphBreak(t.gradFn().name(), "computed a value " + op + " reads (" + Arrays.toString(t.shape())
          + ") and has no trace hook", where);
      return null;
    } else { // the graph keeps it beyond the memory scope the trace ran in: constant() takes it out
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
    GraphNode inner = known.get(out);
    if (inner != null && inner.kind() == GraphNode.Kind.OP && versions.get(out) == out.version()) {
      superseded.add(new GraphNode[] {node, inner}); // an op whose parts were reported too: out is their last one's
    }
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

  /**
   * A backward rule has run in a training trace. A gradient the ops it reported computed is a node already; any
   * other (the rule ran kernels without trace hooks) becomes one {@link OpaqueBackward} node per input, reading the
   * incoming gradient and the op's forward output: it applies the same rule again to the output of the graph's run
   * of the op (which then runs recording, see {@link TrainingStep}).
   */
  @Override
  public void backward(String name, Tensor output, Tensor grad, Tensor[] inputs, Tensor[] inputGrads) {
    if (!backward) return;
    OpaqueBackward rule = null;
    for (int i = 0; i < inputGrads.length; i++) {
      Tensor gi = inputGrads[i];
      if (gi == null || i >= inputs.length || inputs[i] == null) continue;
      GraphNode kn = known.get(gi);
      if (kn != null && versions.get(gi) == gi.version()) continue; // computed by traced ops
      GraphNode fwd = known.get(output);
      GraphNode gn = known.get(grad);
      if (fwd == null || fwd.kind() != GraphNode.Kind.OP || gn == null || versions.get(output) != output.version()) {
        String why = fwd == null || fwd.kind() != GraphNode.Kind.OP ? "its forward output is not an op of the graph"
            : gn == null ? "the gradient it received was not computed by traced ops" : "its forward output was modified";
        broken.put(gi, new GraphBreak(name + "_backward", "its backward rule runs kernels the tracer does not see,"
            + " and " + why, where));
        known.remove(gi);
        continue;
      }
      if (rule == null) rule = new OpaqueBackward();
      OpaqueBackward r = rule;
      int index = i;
      GraphNode node = GraphNode.op(name + "_backward", List.of(gn, fwd), GraphNode.attrs("input", i), gi.shape(),
          gi.dtype(), new OpaqueReplay(r, index));
      nodes.add(node);
      note(gi, node);
    }
  }

  /** Runs an opaque backward node: gradient {@code index} of its rule, from (incoming gradient, forward output). */
  record OpaqueReplay(OpaqueBackward rule, int index) implements Tracing.Replay {
    @Override
    public Tensor run(Tensor[] in) {
      return rule.grad(in[0], in[1], index);
    }
  }

  /**
   * A backward rule applied once per run of the graph, whichever of its input gradients is asked for first: the
   * others come from the same application.
   */
  static final class OpaqueBackward {
    private Tensor output;
    private Tensor grad;
    private Tensor[] grads;

    Tensor grad(Tensor g, Tensor out, int i) {
      if (out != output || g != grad) {
        grads = dev.ember.autograd.Autograd.backwardOf(out, g);
        output = out;
        grad = g;
      }
      Tensor r = grads[i];
      grads[i] = null; // each is asked for once per run
      if (java.util.Arrays.stream(grads).allMatch(java.util.Objects::isNull)) {
        output = null;
        grad = null;
      }
      return r;
    }
  }

  @Override
  public void unsupported(String name, String reason) {
    GraphBreak b = new GraphBreak(name, reason, where);
    if (!breaks.contains(b)) breaks.add(b); // once: a loop of draws or reads meets it again and again
  }
}
