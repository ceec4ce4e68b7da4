package dev.ember.nn;

import dev.ember.autograd.Checkpointing;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Gradient checkpointing of a stack of modules, as PyTorch's {@code checkpoint_sequential(functions, segments,
 * input)}, and of any chosen runs of it (what a memory planner picks):
 * <pre>{@code
 * Tensor y = CheckpointSequential.apply(model, 4, x);            // 4 segments, all but the last checkpointed
 * Tensor z = CheckpointSequential.apply(model, List.of(new Range(0, 3)), x);  // children 0..2: one segment
 * Tensor w = CheckpointSequential.apply(model, new boolean[] {true, false, true}, x);  // children 0 and 2
 * }</pre>
 * A checkpointed run keeps only its input for backward and runs again, recording, when backward reaches it (see
 * {@link Checkpointing}); the gradients are bitwise those of {@code model.forward(x)}, dropout included. Children
 * run through {@link Module#call(Tensor)} (their forward hooks, which see checkpointed children twice); the
 * stack's own hooks do not run, as in PyTorch. Under {@code Grad.off()} every form is the plain forward.
 */
public final class CheckpointSequential {
  private CheckpointSequential() {}

  /** Children {@code from} (inclusive) to {@code to} (exclusive) of a stack, checkpointed as one segment. */
  public record Range(int from, int to) {
    @Override
    public String toString() {
      return "[" + from + ", " + to + ")";
    }
  }

  /**
   * The ranges PyTorch's {@code checkpoint_sequential} checkpoints: the {@code children} split into
   * {@code segments} runs of {@code children / segments} (the last run takes the rest), all but the last.
   *
   * @throws IllegalArgumentException if {@code segments} is below 1 or above {@code children}
   */
  public static List<Range> segments(int children, int segments) {
    if (segments < 1 || segments > children) {
      throw new IllegalArgumentException("checkpoint_sequential: segments must be between 1 and the number of"
          + " children (" + children + "), got " + segments);
    }
    int size = children / segments;
    List<Range> out = new ArrayList<>();
    for (int s = 0; s < segments - 1; s++) out.add(new Range(s * size, (s + 1) * size));
    return out;
  }

  /**
   * {@code model.forward(input)} with its children in {@code segments} runs, all but the last checkpointed (see
   * {@link #segments(int, int)}).
   *
   * @throws IllegalArgumentException if {@code segments} is below 1 or above the number of children
   */
  public static Tensor apply(Sequential model, int segments, Tensor input) {
    return apply(model.children(), segments, input);
  }

  /** {@link #apply(Sequential, int, Tensor)} over a list of modules applied in order. */
  public static Tensor apply(List<? extends Module> modules, int segments, Tensor input) {
    return apply(modules, segments(modules.size(), segments), input);
  }

  /**
   * {@code model.forward(input)} with each child whose flag is true checkpointed on its own (per-layer
   * checkpointing of a chosen subset); the others run as usual.
   *
   * @throws IllegalArgumentException if there is not one flag per child
   */
  public static Tensor apply(Sequential model, boolean[] checkpointed, Tensor input) {
    return apply(model.children(), checkpointed, input);
  }

  /** {@link #apply(Sequential, boolean[], Tensor)} over a list of modules applied in order. */
  public static Tensor apply(List<? extends Module> modules, boolean[] checkpointed, Tensor input) {
    Objects.requireNonNull(checkpointed, "checkpoint_sequential: checkpointed");
    if (checkpointed.length != modules.size()) {
      throw new IllegalArgumentException("checkpoint_sequential: expected one flag per child (" + modules.size()
          + "), got " + checkpointed.length);
    }
    List<Range> ranges = new ArrayList<>();
    for (int i = 0; i < checkpointed.length; i++) if (checkpointed[i]) ranges.add(new Range(i, i + 1));
    return apply(modules, ranges, input);
  }

  /**
   * {@code model.forward(input)} with each of {@code ranges} (in increasing order, not overlapping, within the
   * children; empty ones are not allowed) checkpointed as one segment; the children outside them run as usual.
   *
   * @throws IllegalArgumentException if a range is empty, out of bounds, overlaps or precedes the one before
   */
  public static Tensor apply(Sequential model, List<Range> ranges, Tensor input) {
    return apply(model.children(), ranges, input);
  }

  /** {@link #apply(Sequential, List, Tensor)} over a list of modules applied in order. */
  public static Tensor apply(List<? extends Module> modules, List<Range> ranges, Tensor input) {
    Objects.requireNonNull(input, "checkpoint_sequential: input");
    int n = modules.size();
    int end = 0;
    for (Range r : ranges) {
      if (r.from() < end || r.from() >= r.to() || r.to() > n) {
        throw new IllegalArgumentException("checkpoint_sequential: ranges must be non-empty, in increasing order,"
            + " not overlapping and within the " + n + " children, got " + ranges);
      }
      end = r.to();
    }
    Tensor x = input;
    int next = 0;
    for (Range r : ranges) {
      for (; next < r.from(); next++) x = modules.get(next).call(x);
      List<? extends Module> run = modules.subList(r.from(), r.to());
      x = Checkpointing.apply(t -> {
        for (Module m : run) t = m.call(t);
        return t;
      }, x);
      next = r.to();
    }
    for (; next < n; next++) x = modules.get(next).call(x);
    return x;
  }
}
