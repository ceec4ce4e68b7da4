package dev.ember.autograd;

import dev.ember.tensor.Tensor;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * Gradients by recomputation, for an op whose forward is a fused kernel of other ops (a fused elementwise chain):
 * the op's node keeps only its inputs, and its backward runs {@code fn} (the same ops one by one, eagerly) again
 * on detached copies of them with recording on, then back-propagates the output's gradient through that graph to
 * the inputs. The chain's intermediates are never kept between forward and backward: cheap elementwise results
 * are recomputed instead of stored. The gradients are those of {@code fn} run eagerly, to the bit, when the fused
 * forward computes what {@code fn} computes. As for a {@link Checkpointing checkpoint}, the gradients it returns are
 * not themselves recorded (no second derivative through the node).
 */
public final class Recompute {
  private Recompute() {}

  /**
   * Records {@code out} as op {@code name}'s output from {@code inputs} (if recording is on and an input requires
   * grad), its backward recomputing {@code fn} on the inputs; returns {@code out}.
   */
  public static Tensor record(String name, Tensor out, Function<Tensor[], Tensor> fn, Tensor[] inputs) {
    return Autograd.record(name, out, (ctx, g) -> backward(ctx, g, fn), inputs);
  }

  private static Tensor[] backward(Ctx ctx, Tensor g, Function<Tensor[], Tensor> fn) {
    int count = ctx.inputCount();
    Map<Tensor, Integer> slots = new IdentityHashMap<>();
    Tensor[] replay = new Tensor[count];
    for (int i = 0; i < count; i++) {
      Tensor t = ctx.in(i); // fails if an input was modified in place since the forward
      if (ctx.edgeNeeded(i)) {
        replay[i] = t.detach().requiresGrad(true);
        slots.put(replay[i], i);
      } else {
        replay[i] = t;
      }
    }
    Tensor r;
    try (Grad on = Grad.on()) {
      r = fn.apply(replay);
    }
    if (!r.requiresGrad()) return new Tensor[count];
    try (Grad off = Grad.off()) {
      return GraphWalk.capture(r, g, slots, count);
    }
  }
}
