package dev.ember.nn;

import dev.ember.tensor.Tensor;
import java.util.List;

/**
 * Modules applied in order, each to the previous one's output; children are named "0", "1", ...
 * as in PyTorch, so parameter names read {@code 0.weight}, {@code 2.bias}.
 */
public class Sequential extends Module {
  private int count;

  public Sequential(Module... modules) {
    for (Module m : modules) add(m);
  }

  public Sequential(List<? extends Module> modules) {
    for (Module m : modules) add(m);
  }

  /** Appends a module; returns this. */
  public Sequential add(Module m) {
    registerModule(Integer.toString(count++), m);
    return this;
  }

  public Module get(int i) {
    if (i < 0) i += count;
    if (i < 0 || i >= count) throw new IndexOutOfBoundsException("Sequential: index " + i + " out of range for " + count + " modules");
    return child(Integer.toString(i));
  }

  public int size() {
    return count;
  }

  @Override
  public Tensor forward(Tensor x) {
    for (Module m : children()) x = m.call(x);
    return x;
  }
}
