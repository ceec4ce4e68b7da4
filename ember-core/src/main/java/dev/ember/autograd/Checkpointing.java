package dev.ember.autograd;

import dev.ember.amp.Autocast;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * Gradient checkpointing, as PyTorch's {@code torch.utils.checkpoint.checkpoint(fn, *inputs)}: trades compute
 * for memory by keeping only a segment's inputs for backward and recomputing the segment when its gradient is
 * needed.
 * <pre>{@code
 * Tensor h = Checkpointing.apply(block::call, x);   // block's activations are not kept
 * loss(h).backward();                                // block runs again here, recording, then back-propagates
 * }</pre>
 *
 * <p>The forward runs {@code fn} without recording, noting which tensors that require grad its ops were given
 * (its inputs, the parameters it used, any other tensor it captured) and the state of every {@link Generator} it
 * drew from before its first draw. The output gets one node, {@code checkpoint}, whose edges are those tensors;
 * it keeps the inputs (and references to the others, alive anyway), never the segment's activations. Its
 * backward restores the generators to the noted states, runs {@code fn} again with recording on (under the
 * autocast state of the forward) on detached copies of the inputs, puts the generators back where they were,
 * and back-propagates the output's gradient through the recomputed graph down to those tensors; the enclosing
 * backward then delivers the gradients as for any op, so parameters accumulate exactly as without
 * checkpointing (their hooks run once).
 *
 * <p>The gradients are bitwise those of the same code without checkpointing (the recomputation redraws the same
 * dropout masks, and a generator is left where the forward left it) when {@code fn} is deterministic given its
 * inputs, parameters and generator states, and two more conditions hold, true of ordinary layer stacks: a tensor
 * that receives three or more gradient contributions gets all those of the segment in a row (float addition is
 * not associative, so interleaving them with contributions from outside the segment, or with a gradient left
 * from an earlier step, can change the last bit); and the parameter casts autocast caches are not shared with
 * code outside the segment. Under {@link Grad#off()} (and inside the forward of another checkpoint) {@code apply}
 * is a plain call. Checkpoints nest: a checkpoint inside a checkpointed function records its own node when the
 * outer one is recomputed. After a backward without {@code retainGraph} a second backward through the node fails
 * like any other.
 *
 * <p>Inside a {@link MemoryScope} the tensors {@code fn} makes, other than its output, go back to the pool when
 * it returns (so a training step's scope does not hold them until the step ends), and so do the recomputed ones
 * when its backward is done: {@code fn} must not keep a tensor it makes elsewhere (a forward hook that stores
 * outputs would see them released).
 *
 * <p>The function must not modify its inputs in place (an in-place activation first in the segment): they are
 * what it runs again from, so that is an error.
 *
 * <p>As in PyTorch, side effects of {@code fn} happen twice (module forward hooks see two calls, batch norm
 * updates its running statistics twice), and {@code fn} must not register gradient hooks on the tensors it makes
 * (they do not require grad in the unrecorded forward).
 */
public final class Checkpointing {
  /** The op name of a checkpoint's node (its {@link Node#name()}). */
  public static final String OP = "checkpoint";

  private Checkpointing() {}

  /**
   * {@code fn(input)}, keeping only {@code input} for backward and recomputing {@code fn} during backward.
   *
   * @throws NullPointerException if {@code fn} or {@code input} is null
   * @throws IllegalStateException if {@code fn} returns null
   */
  public static Tensor apply(UnaryOperator<Tensor> fn, Tensor input) {
    Objects.requireNonNull(fn, "checkpoint: fn");
    Objects.requireNonNull(input, "checkpoint: input");
    return apply(xs -> fn.apply(xs[0]), new Tensor[] {input});
  }

  /**
   * {@code fn(inputs)}, keeping only {@code inputs} for backward and recomputing {@code fn} during backward. The
   * function is called with a fresh array (in backward, of detached copies of the inputs that require grad).
   *
   * @throws NullPointerException if {@code fn}, {@code inputs} or one of the inputs is null
   * @throws IllegalStateException if {@code fn} returns null
   */
  public static Tensor apply(Function<Tensor[], Tensor> fn, Tensor... inputs) {
    Objects.requireNonNull(fn, "checkpoint: fn");
    Objects.requireNonNull(inputs, "checkpoint: inputs");
    for (int i = 0; i < inputs.length; i++) {
      if (inputs[i] == null) throw new NullPointerException("checkpoint: input " + i + " is null");
    }
    if (!Grad.enabled()) return fn.apply(inputs.clone());
    Grad.Discovery seen = new Grad.Discovery();
    int[] versions = new int[inputs.length];
    for (int i = 0; i < inputs.length; i++) versions[i] = inputs[i].version();
    Tensor out;
    Map<Generator, long[]> generators;
    try (MemoryScope segment = MemoryScope.active() ? MemoryScope.open() : null;
        Generator.DrawLog draws = Generator.logDraws(); Grad ignored = Grad.discovering(seen)) {
      out = fn.apply(inputs.clone());
      generators = draws.statesBefore();
      if (out == null) throw new IllegalStateException("checkpoint: the function returned null");
      if (segment != null) segment.keep(out); // the segment's other tensors go back to the pool now
    }
    // A tensor that requires grad was made outside the segment (an input returned as it is): nothing to replay;
    // an integer output (indices) takes no gradient.
    if (out.requiresGrad() || !out.dtype().isFloatingPoint()) return out;
    for (int i = 0; i < inputs.length; i++) {
      if (inputs[i].version() != versions[i]) {
        throw new IllegalStateException(OP + ": the function modified its input " + i + " "
            + Arrays.toString(inputs[i].shape()) + " in place (version " + versions[i] + " -> " + inputs[i].version()
            + "), so it cannot be run again from it in backward; hint: begin the segment with an out-of-place op, or"
            + " pass x.clone()");
      }
    }
    IdentityHashMap<Tensor, Boolean> explicit = new IdentityHashMap<>();
    for (Tensor t : inputs) explicit.put(t, Boolean.TRUE);
    Tensor[] saved = new Tensor[inputs.length + seen.order.size()];
    System.arraycopy(inputs, 0, saved, 0, inputs.length);
    int n = inputs.length;
    for (Tensor t : seen.order) if (!explicit.containsKey(t)) saved[n++] = t;
    saved = Arrays.copyOf(saved, n);
    Segment segment = new Segment(fn, inputs.length, generators, Autocast.dtype(), out.shape());
    return Autograd.record(OP, out, segment::backward, saved);
  }

  /** What a checkpoint's backward needs besides its saved inputs: how to recompute the segment. */
  private record Segment(Function<Tensor[], Tensor> fn, int inputs, Map<Generator, long[]> generators,
      DType autocast, int[] shape) {

    /**
     * Recomputes the segment and back-propagates {@code g} through it to the checkpoint's inputs (slots
     * {@code 0..inputs-1}) and the other tensors it used (the following slots).
     */
    Tensor[] backward(Ctx ctx, Tensor g) {
      int count = ctx.inputCount();
      Map<Tensor, Integer> slots = new IdentityHashMap<>();
      Tensor[] replay = new Tensor[inputs];
      for (int i = 0; i < count; i++) {
        Tensor t = ctx.in(i); // fails if an input or a parameter was modified in place since the forward
        if (i < inputs && t.requiresGrad()) {
          replay[i] = t.detach().requiresGrad(true);
          slots.put(replay[i], i);
        } else if (i < inputs) {
          replay[i] = t;
        }
        slots.putIfAbsent(t, i); // the function may also capture an input it is given
      }
      // the recomputed activations and the segment's inner gradients go back to the pool when it is done
      try (MemoryScope scope = MemoryScope.active() ? MemoryScope.open() : null) {
        Tensor r = recompute(replay);
        if (!Arrays.equals(r.shape(), shape)) {
          throw new IllegalStateException(OP + ": the recomputed output has shape " + Arrays.toString(r.shape())
              + " but the forward's had " + Arrays.toString(shape) + "; the checkpointed function must compute"
              + " the same thing when run again");
        }
        if (!r.requiresGrad()) return new Tensor[count];
        Tensor[] grads;
        try (Grad ignored = Grad.off()) {
          grads = GraphWalk.capture(r, g, slots, count, scope); // activations go as the walk consumes them
        }
        if (scope != null) for (Tensor t : grads) if (t != null) scope.keep(t);
        return grads;
      }
    }

    /** {@code fn} on {@code replay}, recorded, with the generators and the autocast state of the forward. */
    private Tensor recompute(Tensor[] replay) {
      Map<Generator, long[]> now = new LinkedHashMap<>();
      for (Generator gen : generators.keySet()) now.put(gen, gen.state());
      try {
        for (Map.Entry<Generator, long[]> e : generators.entrySet()) e.getKey().setState(e.getValue());
        // under a training graph's trace the recompute is part of this backward rule, which the graph applies
        // again (an opaque node): its ops and draws are not the graph's
        try (Grad on = Grad.on(); Tracing.Scope inside = Tracing.suspend();
            Autocast cast = autocast == null ? Autocast.disable() : Autocast.enable(autocast)) {
          Tensor r = fn.apply(replay.clone());
          if (r == null) throw new IllegalStateException(OP + ": the function returned null when recomputed");
          return r;
        }
      } finally {
        for (Map.Entry<Generator, long[]> e : now.entrySet()) e.getKey().setState(e.getValue());
      }
    }
  }

  /**
   * Whether {@code t} is the output of a checkpoint (its node is a checkpoint's), for tools that inspect a graph.
   */
  public static boolean isCheckpoint(Tensor t) {
    return t.gradFn() != null && OP.equals(t.gradFn().name());
  }
}
