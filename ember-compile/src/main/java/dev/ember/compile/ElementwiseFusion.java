package dev.ember.compile;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.ElementwiseProgram;
import dev.ember.backend.UnaryOp;
import dev.ember.ops.FusedOps;
import dev.ember.tensor.DType;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Fuses chains of elementwise ops into one {@code fused_elementwise} node ({@link FusedOps#elementwise}): a group
 * of connected float32 unary ops (relu, gelu, exp, tanh, sigmoid, ..., with their parameters) and arithmetic binary
 * ops (add, sub, mul, div, maximum, minimum, with tensor or scalar operands) of one shape, whose intermediates
 * nothing outside the group reads, becomes one node whose program is the group ({@code program=relu(add(x0, x1))}).
 * Its inputs are what the group reads from outside: tensors of its shape, a bias-like [n] (or [1, .., n]) or a
 * per-row [.., 1] column, and one-element float32 constants, which go into the program. The fused node runs one
 * kernel instead of one per op, reading each input once and writing once; its backward recomputes the chain.
 *
 * <p>Values are bitwise the graph's (the fused kernel gives each op eager's bits). Gradients are too, except that a
 * tensor read both inside and outside a group gets the group's contributions summed first, which can change the
 * last bit of its gradient when it receives three or more. Random ops are never fused (none is elementwise here).
 */
public final class ElementwiseFusion implements Pass {
  private static final Map<String, BinaryOp> BINARY = Map.of("add", BinaryOp.ADD, "sub", BinaryOp.SUB, "mul",
      BinaryOp.MUL, "div", BinaryOp.DIV, "maximum", BinaryOp.MAXIMUM, "minimum", BinaryOp.MINIMUM);

  @Override
  public Graph run(Graph graph) {
    Graph g = graph.copy();
    List<GraphNode> nodes = g.nodes();
    IdentityHashMap<GraphNode, List<GraphNode>> users = g.readers();
    // groups grow from their last node (the root, whose value leaves the group) back through inputs that only
    // group members read
    IdentityHashMap<GraphNode, GraphNode> rootOf = new IdentityHashMap<>();
    IdentityHashMap<GraphNode, List<GraphNode>> groups = new IdentityHashMap<>();
    for (int i = nodes.size() - 1; i >= 0; i--) {
      GraphNode root = nodes.get(i);
      if (rootOf.containsKey(root) || !fusable(root)) continue;
      List<GraphNode> members = new ArrayList<>(List.of(root));
      rootOf.put(root, root);
      for (int k = 0; k < members.size(); k++) {
        for (GraphNode in : members.get(k).inputs) {
          if (in == null || rootOf.containsKey(in) || g.outputs().contains(in) || !fusable(in)
              || !Arrays.equals(in.shapeRef(), root.shapeRef())) {
            continue;
          }
          boolean inside = true;
          for (GraphNode u : users.get(in)) inside &= rootOf.get(u) == root;
          if (inside) {
            rootOf.put(in, root);
            members.add(in);
          }
        }
      }
      if (members.size() < 2) {
        rootOf.remove(root);
        continue;
      }
      groups.put(root, members);
    }
    if (groups.isEmpty()) return g;
    IdentityHashMap<GraphNode, GraphNode> map = new IdentityHashMap<>();
    List<GraphNode> out = new ArrayList<>();
    for (GraphNode n : nodes) {
      GraphNode root = rootOf.get(n);
      if (root != null && root != n) continue; // inside a group: computed by its fused node
      GraphNode r;
      if (root == n) {
        r = fuse(n, groups.get(n), rootOf, map);
      } else {
        List<GraphNode> ins = new ArrayList<>();
        for (GraphNode in : n.inputs) ins.add(in == null ? null : map.get(in));
        r = n.withInputs(ins);
      }
      map.put(n, r);
      out.add(r);
    }
    List<GraphNode> ins = new ArrayList<>();
    for (GraphNode in : g.inputs()) ins.add(map.get(in));
    List<GraphNode> outs = new ArrayList<>();
    for (GraphNode o : g.outputs()) outs.add(map.get(o));
    return new DeadCodeElimination().run(new Graph(out, ins, outs));
  }

  /** Whether n may be a member of a group: a float32 elementwise op whose every input fits its shape. */
  static boolean fusable(GraphNode n) {
    if (n.kind() != GraphNode.Kind.OP || n.dtype() != DType.F32 || n.isRandom()) return false;
    if (BINARY.containsKey(n.op())) {
      if (n.inputs.size() != 2) return false;
      GraphNode a = n.inputs.get(0);
      GraphNode b = n.inputs.get(1);
      if (a == null || b == null) return false;
      ElementwiseProgram.Kind ka = kind(a, n.shapeRef());
      ElementwiseProgram.Kind kb = kind(b, n.shapeRef());
      return ka != null && kb != null && (ka == ElementwiseProgram.Kind.FULL || kb == ElementwiseProgram.Kind.FULL);
    }
    UnaryOp op = unary(n.op());
    if (op == null || n.inputs.size() != 1 || n.inputs.get(0) == null) return false;
    for (String k : n.attrs().keySet()) if (!k.equals("param")) return false;
    return kind(n.inputs.get(0), n.shapeRef()) == ElementwiseProgram.Kind.FULL;
  }

  private static UnaryOp unary(String op) {
    try {
      return UnaryOp.valueOf(op.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** How a group of {@code shape} reads node x, or null if it cannot. */
  static ElementwiseProgram.Kind kind(GraphNode x, int[] shape) {
    if (x.dtype() != DType.F32) return null;
    int[] s = x.shapeRef();
    if (Arrays.equals(s, shape)) return ElementwiseProgram.Kind.FULL;
    if (x.kind() == GraphNode.Kind.CONSTANT && x.value().numel() == 1 && s.length <= shape.length) {
      return ElementwiseProgram.Kind.CONSTANT;
    }
    int rank = shape.length;
    if (rank == 0 || s.length == 0) return null;
    int cols = shape[rank - 1];
    long numel = 1;
    for (int d : s) numel *= d;
    if (s.length <= rank && s[s.length - 1] == cols && numel == cols) return ElementwiseProgram.Kind.ROW;
    if (s.length == rank && s[rank - 1] == 1 && Arrays.equals(Arrays.copyOf(s, rank - 1), Arrays.copyOf(shape, rank - 1))) {
      return ElementwiseProgram.Kind.COLUMN;
    }
    return null;
  }

  /** The fused node of a group (root and the members it grew), reading the rewritten external inputs. */
  private static GraphNode fuse(GraphNode root, List<GraphNode> members, IdentityHashMap<GraphNode, GraphNode> rootOf,
      IdentityHashMap<GraphNode, GraphNode> map) {
    List<GraphNode> order = new ArrayList<>(members);
    order.sort((a, b) -> Integer.compare(a.slot, b.slot)); // the graph's order: each after its inputs
    IdentityHashMap<GraphNode, Integer> value = new IdentityHashMap<>();
    List<GraphNode> external = new ArrayList<>();
    List<ElementwiseProgram.Input> inputs = new ArrayList<>();
    for (GraphNode m : order) {
      for (GraphNode in : m.inputs) {
        if (rootOf.get(in) == root || value.containsKey(in)) continue;
        ElementwiseProgram.Kind k = kind(in, root.shapeRef());
        if (k == ElementwiseProgram.Kind.CONSTANT) {
          inputs.add(new ElementwiseProgram.Input(k, in.value().cpu().to(DType.F32).toFloatArray()[0]));
        } else {
          inputs.add(new ElementwiseProgram.Input(k, 0));
          external.add(map.get(in));
        }
        value.put(in, inputs.size() - 1);
      }
    }
    List<ElementwiseProgram.Step> steps = new ArrayList<>();
    int next = inputs.size();
    for (GraphNode m : order) {
      BinaryOp b = BINARY.get(m.op());
      if (b != null) {
        steps.add(new ElementwiseProgram.BinaryStep(b, value.get(m.inputs.get(0)), value.get(m.inputs.get(1))));
      } else {
        Object p = m.attr("param");
        steps.add(new ElementwiseProgram.UnaryStep(unary(m.op()), p == null ? 0 : ((Number) p).doubleValue(),
            value.get(m.inputs.get(0))));
      }
      value.put(m, next++);
    }
    ElementwiseProgram program = new ElementwiseProgram(inputs, steps);
    return GraphNode.op("fused_elementwise", external, Map.of("program", program), root.shape(), root.dtype(),
        t -> FusedOps.elementwise(program, t));
  }
}
