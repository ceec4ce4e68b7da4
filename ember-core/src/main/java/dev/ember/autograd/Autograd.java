package dev.ember.autograd;

import dev.ember.tensor.Check;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.IdentityHashMap;

/** Records the graph during the forward and starts the reverse pass (a {@code GraphWalk}). */
public final class Autograd {
  private Autograd() {}

  /**
   * Records {@code out} as produced by op {@code name} from {@code inputs}, if recording is on and
   * any input requires grad (PyTorch's rule: the output requires grad iff an input does). Returns
   * {@code out}.
   */
  public static Tensor record(String name, Tensor out, Backward backward, Tensor[] inputs, Object... extras) {
    Grad.State state = Grad.state();
    if (!state.enabled) {
      if (state.discovery != null) state.discovery.saw(inputs); // a checkpoint's forward: see Checkpointing
      return out;
    }
    Tensor[] edges = null;
    for (int i = 0; i < inputs.length; i++) {
      Tensor t = inputs[i];
      if (t != null && t.requiresGrad()) {
        if (edges == null) edges = new Tensor[inputs.length];
        edges[i] = t;
      }
    }
    if (edges == null) return out;
    Ctx ctx = new Ctx(name, inputs, out, extras);
    out.setGradFn(new Node(name, backward, ctx, edges));
    return out;
  }

  public static Tensor record(String name, Tensor out, Backward backward, Tensor a) {
    return record(name, out, backward, new Tensor[] {a});
  }

  /**
   * Back-propagates {@code grad} (the gradient of some scalar with respect to {@code root}) to every
   * leaf that requires grad, accumulating into their {@code grad()}. Runs without recording and with autocast
   * off (the backward rules follow the dtypes of the forward).
   */
  public static void backward(Tensor root, Tensor grad, boolean retainGraph) {
    if (!root.requiresGrad()) {
      throw new IllegalStateException("backward: tensor " + Arrays.toString(root.shape())
          + " does not require grad and has no grad_fn; hint: create leaves with requiresGrad(true)"
          + " and do not compute under Grad.off()");
    }
    if (!Arrays.equals(root.shape(), grad.shape())) {
      throw Check.fail("backward", "gradient shape differs from the tensor's", "tensor", root, "grad", grad);
    }
    try (Grad ignored = Grad.off(); var noCast = dev.ember.amp.Autocast.disable()) {
      GraphWalk.run(root, grad, retainGraph);
    }
  }

  /**
   * Bytes the graph behind {@code root} keeps alive for its backward: the distinct buffers (storages, so views
   * of one buffer count once) of the inputs and outputs of every recorded op not yet run by a backward without
   * {@code retainGraph}, and of the tensors among their extra saved values, except the buffers of leaves that
   * require grad (parameters, and views of them: their memory is the model's whatever the graph). Call it on the
   * loss before {@code backward()} to see what a step's activations cost: a {@link Checkpointing checkpointed}
   * segment counts only its inputs and output. Buffers count whole, at their dtype's size, wherever they live;
   * a backward rule's saved state that is not a tensor (a convolution's unfolded columns) is not counted. 0 for
   * a tensor without a graph.
   */
  public static long savedBytes(Tensor root) {
    IdentityHashMap<Storage, Boolean> buffers = new IdentityHashMap<>();
    IdentityHashMap<Storage, Boolean> parameters = new IdentityHashMap<>();
    IdentityHashMap<Node, Boolean> seen = new IdentityHashMap<>();
    java.util.ArrayDeque<Node> todo = new java.util.ArrayDeque<>();
    if (root.gradFn() != null) {
      todo.push(root.gradFn());
      seen.put(root.gradFn(), Boolean.TRUE);
    }
    while (!todo.isEmpty()) {
      Node n = todo.pop();
      Ctx ctx = n.ctx;
      if (!ctx.released()) {
        for (int i = 0; i < ctx.inputCount(); i++) note(ctx.rawInput(i), buffers, parameters);
        note(ctx.rawOutput(), buffers, parameters);
        for (Object e : ctx.rawExtras()) {
          if (e instanceof Tensor t) note(t, buffers, parameters);
          else if (e instanceof Tensor[] ts) for (Tensor t : ts) note(t, buffers, parameters);
        }
      }
      for (Tensor in : n.edges) {
        Node next = in == null ? null : in.gradFn();
        if (next != null && seen.put(next, Boolean.TRUE) == null) todo.push(next);
      }
    }
    long bytes = 0;
    for (Storage s : buffers.keySet()) {
      if (!parameters.containsKey(s)) bytes += (long) s.size() * s.dtype().itemSize();
    }
    return bytes;
  }

  private static void note(Tensor t, IdentityHashMap<Storage, Boolean> buffers,
      IdentityHashMap<Storage, Boolean> parameters) {
    if (t == null) return;
    buffers.put(t.storage(), Boolean.TRUE);
    if (t.isLeaf() && t.requiresGrad()) parameters.put(t.storage(), Boolean.TRUE);
  }
}
