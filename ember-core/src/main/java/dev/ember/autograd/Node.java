package dev.ember.autograd;

import dev.ember.tensor.Tensor;

/**
 * One recorded op in the graph: its backward rule, its context, and the inputs gradients flow to.
 * Created by {@link Autograd#record}; users see it as {@link Tensor#gradFn()}.
 */
public final class Node {
  private final String name;
  private final Backward backward;
  final Ctx ctx;
  /** The inputs as edges: a gradient flows to input i only if edges[i] != null (it requires grad). */
  final Tensor[] edges;
  /**
   * The history of each edge when this node was recorded: input i's {@code gradFn} then, or null for a leaf. An
   * in-place op later gives the input a new history; this node's gradient still goes to the one it read.
   */
  final Node[] next;

  Node(String name, Backward backward, Ctx ctx, Tensor[] edges) {
    this.name = name;
    this.backward = backward;
    this.ctx = ctx;
    this.edges = edges;
    this.next = new Node[edges.length];
    for (int i = 0; i < edges.length; i++) next[i] = edges[i] == null ? null : edges[i].gradFn();
  }

  /** The op's name, e.g. {@code "matmul"}. */
  public String name() {
    return name;
  }

  /**
   * The tensors this node keeps for its backward, in order: the op's inputs (null ones left out), its output, and any
   * tensors among the forward's extras; empty once a backward without retainGraph has run it. They stay alive as
   * long as the graph does, so their buffers are the activation memory of a training step (memory profiles read
   * them; the version checks of {@link Ctx} do not apply here). An input's {@link Tensor#gradFn()} leads on to the
   * node that made it.
   */
  public java.util.List<Tensor> savedTensors() {
    return ctx.saved();
  }

  /**
   * Drops the references to the inputs once a backward without retainGraph has run this node:
   * its saved tensors are gone, so it can only fail if reached again, and a caller that keeps
   * the loss (or any output) would otherwise keep every activation of the step alive. A second
   * backward still fails, because the node itself stays in the graph of whatever reached it.
   */
  void releaseEdges() {
    // a loop, not Arrays.fill: that shared method's C2 code, compiled on other callers' array types, was
    // deoptimized here (array_check) in every LeNet-5 run (issue #40)
    for (int i = 0; i < edges.length; i++) {
      edges[i] = null;
      next[i] = null;
    }
  }

  Tensor[] apply(Tensor grad) {
    return backward.apply(ctx, grad);
  }

  @Override
  public String toString() {
    return name + "Backward";
  }
}
