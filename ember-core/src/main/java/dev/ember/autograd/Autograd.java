package dev.ember.autograd;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

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
}
