package dev.ember.data;

import dev.ember.tensor.Tensor;

/**
 * One item of a supervised data set: an input tensor (e.g. an image [C, H, W]) and its target (a
 * 0-d I64 class index, or a regression target of any shape).
 */
public record Sample(Tensor input, Tensor target) {
  public Sample {
    if (input == null || target == null) {
      throw new IllegalArgumentException("Sample: input and target must not be null (input "
          + (input == null ? "null" : "set") + ", target " + (target == null ? "null" : "set") + ")");
    }
  }
}
