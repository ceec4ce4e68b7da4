package dev.ember.data;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Objects;

/** Several transforms applied in order, drawing from one generator (as torchvision's {@code Compose}). */
public final class Compose implements Transform {
  private final List<Transform> steps;

  /** Applies {@code steps} first to last. */
  public Compose(Transform... steps) {
    this(List.of(Objects.requireNonNull(steps, "Compose: steps are null")));
  }

  /** Applies {@code steps} first to last. */
  public Compose(List<Transform> steps) {
    Objects.requireNonNull(steps, "Compose: steps are null");
    for (int i = 0; i < steps.size(); i++) {
      if (steps.get(i) == null) throw new IllegalArgumentException("Compose: step " + i + " is null");
    }
    this.steps = List.copyOf(steps);
  }

  /** The steps, in order. */
  public List<Transform> steps() {
    return steps;
  }

  @Override
  public Tensor apply(Tensor x, Generator gen) {
    for (Transform t : steps) x = t.apply(x, gen);
    return x;
  }

  @Override
  public String toString() {
    return "Compose" + steps;
  }
}
