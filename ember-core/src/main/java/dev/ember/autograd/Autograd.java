package dev.ember.autograd;

import dev.ember.tensor.Check;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
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
    Tensor viewed = null; // a view (out shares an input's storage) remembers its base, for in-place ops
    for (Tensor t : inputs) {
      if (t != null && t != out && t.storage() == out.storage()) viewed = t;
    }
    if (edges != null) out.setGradFn(new Node(name, backward, new Ctx(name, inputs, out, extras), edges));
    if (viewed != null) out.setViewBase(viewed.viewBase() != null ? viewed.viewBase() : viewed);
    return out;
  }

  /**
   * Called by an in-place op {@code op} before it writes {@code self} (with {@code operands} read): whether it is to
   * be recorded, i.e. recording is on and self or an operand requires grad. Throws, as PyTorch, for a leaf that
   * requires grad or a view of one (its gradient would be the gradient of values it no longer holds), and for a
   * write that autograd cannot follow: self has several elements at one memory location (an expanded view), or it
   * is a view of a non-contiguous tensor.
   */
  public static boolean inPlace(String op, Tensor self, Tensor... operands) {
    if (!Grad.enabled()) return false;
    boolean record = self.requiresGrad();
    for (Tensor t : operands) record |= t != null && t.requiresGrad();
    if (!record) return false;
    if (self.isLeaf() && self.requiresGrad()) {
      throw new IllegalStateException(op + ": a leaf Variable that requires grad is being used in an in-place"
          + " operation (tensor " + Arrays.toString(self.shape()) + "); hint: modify it under Grad.off(), or use"
          + " the out-of-place op");
    }
    Tensor base = self.viewBase();
    if (base != null && base.isLeaf() && base.requiresGrad()) {
      throw new IllegalStateException(op + ": a view of a leaf Variable that requires grad is being used in an"
          + " in-place operation (view " + Arrays.toString(self.shape()) + " of " + Arrays.toString(base.shape())
          + "); hint: modify it under Grad.off(), or clone() the view first");
    }
    int[] shape = self.shapeRef();
    int[] strides = self.stridesRef();
    for (int d = 0; d < shape.length; d++) {
      if (strides[d] == 0 && shape[d] > 1) {
        throw new IllegalStateException(op + ": more than one element of the written-to tensor "
            + Arrays.toString(shape) + " refers to a single memory location (strides " + Arrays.toString(strides)
            + "); hint: clone() it before the in-place operation");
      }
    }
    if (base != null && !base.isContiguous()) {
      throw new IllegalStateException(op + ": in-place write into a view " + Arrays.toString(shape)
          + " of a non-contiguous tensor " + Arrays.toString(base.shape()) + " that requires grad; hint: clone()"
          + " the tensor first");
    }
    return record;
  }

  /**
   * Records in-place op {@code op}, which has just written {@code self} (its version bumped), as PyTorch: self's
   * history becomes the new node, whose input 0 is self's previous history (nodes recorded before keep routing
   * their gradients there). {@code operands} are the op's inputs with self first, for the edges; {@code saved} what
   * the backward may read through {@link Ctx#in} (the old value of self, if the rule needs it, as a copy; the other
   * operands), version-checked as usual; {@link Ctx#out} is self. When self is a view, its base's history becomes a
   * {@code copy_slices} node too: the base's gradient outside the view goes to its old history, inside it through
   * the op.
   */
  public static Tensor recordInPlace(String op, Tensor self, Backward backward, Tensor[] operands, Tensor[] saved,
      Object... extras) {
    Tensor[] edges = new Tensor[operands.length];
    for (int i = 0; i < operands.length; i++) {
      if (operands[i] != null && operands[i].requiresGrad()) edges[i] = operands[i];
    }
    Node node = new Node(op, backward, new Ctx(op, saved, self, extras), edges); // captures self's old history
    self.setGradFn(node);
    Tensor base = self.viewBase();
    if (base != null) {
      int[] shape = self.shape();
      int[] strides = self.strides();
      int offset = self.offset() - base.offset();
      Backward copySlices = (ctx, g) -> {
        Tensor whole = g.cloneContiguous();
        Tensor region = Views.of(whole, shape, strides, offset);
        Tensor inside = region.cloneContiguous();
        region.fill_(0);
        return new Tensor[] {whole, inside};
      };
      Node slices = new Node("copy_slices", copySlices, new Ctx("copy_slices", new Tensor[2], base, new Object[0]),
          new Tensor[] {base.requiresGrad() ? base : null, self}); // a base without history gets one here
      base.setGradFn(slices);
      self.setViewBase(base); // in step with the base's new history
    }
    return self;
  }

  /**
   * Gives view {@code v} a history from its base's current one (the base was modified in place through another
   * tensor since v was made): an {@code as_strided} node that puts v's gradient where v lies in the base.
   */
  public static void refreshView(Tensor v) {
    Tensor base = v.viewBase();
    if (!base.isContiguous()) {
      throw new IllegalStateException("as_strided: the base " + Arrays.toString(base.shape()) + " of view "
          + Arrays.toString(v.shape()) + " was modified in place and is not contiguous, so the view's gradient"
          + " cannot be placed in it; hint: clone() the view before modifying its base");
    }
    int[] shape = v.shape();
    int[] strides = v.strides();
    int offset = v.offset() - base.offset();
    int[] baseShape = base.shape();
    Backward scatter = (ctx, g) -> {
      Tensor whole = Tensor.zeros(g.device(), g.dtype(), baseShape);
      int[] sh = shape.clone();
      Tensor gg = g;
      for (int d = 0; d < sh.length; d++) { // an expanded axis: its elements share one location, their sum goes there
        if (strides[d] == 0 && sh[d] > 1) {
          gg = gg.sum(d, true);
          sh[d] = 1;
        }
      }
      Views.of(whole, sh, strides, offset).copy_(gg);
      return new Tensor[] {whole};
    };
    v.setGradFn(new Node("as_strided", scatter, new Ctx("as_strided", new Tensor[1], v, new Object[0]),
        new Tensor[] {base}));
    v.setViewBase(base);
  }

  /**
   * Applies the backward rule of the op that produced {@code output} (its {@link Tensor#gradFn()}) to {@code grad},
   * with recording and autocast off, and returns the gradient of each of the op's inputs (null for inputs that take
   * none), as a backward pass would pass them on; the op's saved tensors stay (it may be applied again). How a
   * compiled training step runs a backward rule it could not trace op by op (see {@link Tracing.Tracer#backward}).
   *
   * @throws IllegalStateException if {@code output} has no history
   */
  public static Tensor[] backwardOf(Tensor output, Tensor grad) {
    Node node = output.gradFn();
    if (node == null) {
      throw new IllegalStateException("backwardOf: tensor " + Arrays.toString(output.shape())
          + " has no grad_fn (it was computed without recording, or from inputs that do not require grad)");
    }
    try (Grad ignored = Grad.off(); var noCast = dev.ember.amp.Autocast.disable()) {
      return node.apply(grad);
    }
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
      for (Node next : n.next) { // the history each input had when n was recorded (in-place ops rebase later)
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
