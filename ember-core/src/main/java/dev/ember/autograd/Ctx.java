package dev.ember.autograd;

import dev.ember.tensor.Tensor;

/**
 * What a backward rule may read: the op's inputs and output, checked against in-place changes
 * when read (so reading a tensor that was modified after the forward is an error naming the op,
 * while rules that never read a tensor do not care), and any extra values the forward kept.
 */
public final class Ctx {
  private final String op;
  private Tensor[] inputs;
  private int[] inputVersions;
  private Tensor output;
  private int outputVersion;
  private Object[] extras;

  Ctx(String op, Tensor[] inputs, Tensor output, Object[] extras) {
    this.op = op;
    this.inputs = inputs;
    this.inputVersions = new int[inputs.length];
    for (int i = 0; i < inputs.length; i++) {
      inputVersions[i] = inputs[i] == null ? 0 : inputs[i].version();
    }
    this.output = output;
    this.outputVersion = output.version();
    this.extras = extras;
  }

  public String op() {
    return op;
  }

  /** Input {@code i} as seen by the forward. */
  public Tensor in(int i) {
    checkAlive();
    Tensor t = inputs[i];
    if (t != null && t.version() != inputVersions[i]) {
      throw modified("input " + i, t, inputVersions[i]);
    }
    return t;
  }

  /** The forward's output. */
  public Tensor out() {
    checkAlive();
    if (output.version() != outputVersion) throw modified("its output", output, outputVersion);
    return output;
  }

  /** Extra value {@code i} kept by the forward (axes, indices, scalars...). */
  @SuppressWarnings("unchecked")
  public <T> T extra(int i) {
    checkAlive();
    return (T) extras[i];
  }

  /** Whether input {@code i} takes a gradient (so a rule can skip work for the others). */
  public boolean edgeNeeded(int i) {
    return inputs != null && inputs[i] != null && inputs[i].requiresGrad();
  }

  public int inputCount() {
    return inputs == null ? 0 : inputs.length;
  }

  /** Shape of input {@code i} (available without the version check: shapes never change in place). */
  public int[] inShape(int i) {
    checkAlive();
    return inputs[i].shape();
  }

  Tensor rawInput(int i) {
    return inputs == null ? null : inputs[i];
  }

  /** Inputs, output and tensor extras, without the version checks (see {@link Node#savedTensors()}). */
  java.util.List<Tensor> saved() {
    if (inputs == null) return java.util.List.of();
    java.util.ArrayList<Tensor> l = new java.util.ArrayList<>(inputs.length + 1);
    for (Tensor t : inputs) if (t != null) l.add(t);
    l.add(output);
    if (extras != null) for (Object o : extras) if (o instanceof Tensor t) l.add(t);
    return l;
  }

  Tensor rawOutput() {
    return output;
  }

  Object[] rawExtras() {
    return extras;
  }

  boolean released() {
    return inputs == null;
  }

  void release() {
    inputs = null;
    inputVersions = null;
    output = null;
    extras = null;
  }

  private void checkAlive() {
    if (inputs == null) {
      throw new IllegalStateException(op + ": trying to backward through the graph a second time"
          + " (its saved tensors were freed after the first backward); hint: call backward(retainGraph=true)"
          + " the first time");
    }
  }

  private IllegalStateException modified(String what, Tensor t, int expected) {
    String by = t.storage().lastWriter();
    return new IllegalStateException(op + ": " + what + " " + java.util.Arrays.toString(t.shape())
        + " was modified in place" + (by == null ? "" : " (last by " + by + ")") + " after the forward (version "
        + t.version() + ", expected " + expected + "), so its gradient would be wrong; hint: use an out-of-place op"
        + " or clone() before modifying");
  }
}
