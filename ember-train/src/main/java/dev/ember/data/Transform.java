package dev.ember.data;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Objects;

/**
 * A per-sample transformation of an input tensor (e.g. an image {@code [C, H, W]}). All
 * randomness comes from the {@link Generator} passed in, so a loader that seeds it from
 * (seed, epoch, sample index) gets the same result on any number of worker threads. A transform
 * must not modify its argument.
 */
@FunctionalInterface
public interface Transform {
  /** The transformed tensor; {@code gen} supplies every random draw. */
  Tensor apply(Tensor x, Generator gen);

  /** This transform, then {@code next}. */
  default Transform andThen(Transform next) {
    Objects.requireNonNull(next, "Transform.andThen: next is null");
    return (x, gen) -> next.apply(apply(x, gen), gen);
  }
}
