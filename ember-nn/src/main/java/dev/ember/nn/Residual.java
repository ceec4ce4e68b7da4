package dev.ember.nn;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;

/**
 * A skip connection: {@code body(x) + shortcut(x)}, the shortcut being the identity unless given
 * (for example a 1x1 convolution when the body changes the channel count). The body is child
 * "body" and the shortcut child "shortcut", so weight names read {@code body.0.weight}.
 */
public class Residual extends Module {
  private final Module body;
  private final Module shortcut;

  public Residual(Module body) {
    this(body, null);
  }

  public Residual(Module body, Module shortcut) {
    this.body = registerModule("body", body);
    this.shortcut = shortcut == null ? null : registerModule("shortcut", shortcut);
  }

  @Override
  public Tensor forward(Tensor x) {
    Tensor y = body.call(x);
    Tensor s = shortcut == null ? x : shortcut.call(x);
    if (!java.util.Arrays.equals(y.shape(), s.shape())) {
      throw Check.fail("Residual", "body and shortcut outputs differ in shape", "body", y, "shortcut", s,
          "hint", "give a shortcut module that maps the input to the body's output shape");
    }
    return y.add(s);
  }
}
