package dev.ember.backend;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * A chain of elementwise ops run as one kernel ({@link Backend#fusedElementwise}): its inputs, then one register
 * per step, each step a {@link UnaryOp} (with its parameter) or an arithmetic {@link BinaryOp} of earlier values,
 * the last step's register being the output. Values are numbered inputs first (0..inputs-1), then registers.
 *
 * <p>An input is a tensor of the output's shape ({@link Kind#FULL}), a tensor broadcast along the leading dims
 * ({@link Kind#ROW}: as many elements as the output's last dim, such as a bias [n] on [m, n]), a tensor broadcast
 * along the last dim ({@link Kind#COLUMN}: one element per row of the output, such as a [m, 1] column), or a scalar
 * constant ({@link Kind#CONSTANT}, part of the program: no tensor). Every step computes a value of the output's
 * shape: a unary step reads a FULL input or a register, a binary step at least one of those. So each step is the
 * eager op on a contiguous tensor of the output's shape, which is what lets a fused kernel give eager's bits.
 *
 * <p>Immutable, with value equality (kernels are cached by program), printed as the expression it computes, e.g.
 * {@code relu(add(x0, x1))}, tensor inputs named x0, x1, ... in order, constants by value.
 */
public final class ElementwiseProgram {
  /** How an input is read: see the class comment. */
  public enum Kind { FULL, ROW, COLUMN, CONSTANT }

  /** An input: its kind, and its value when it is a constant (else 0). */
  public record Input(Kind kind, double value) {
    public Input {
      Objects.requireNonNull(kind, "kind");
      if (kind != Kind.CONSTANT && value != 0) throw new IllegalArgumentException("only a constant input has a value");
    }
  }

  /** One step: its register is the next value. */
  public sealed interface Step permits UnaryStep, BinaryStep {}

  /** op(x) with the op's parameter (0 for an op without one). */
  public record UnaryStep(UnaryOp op, double param, int x) implements Step {
    public UnaryStep {
      Objects.requireNonNull(op, "op");
    }
  }

  /** a op b, for an arithmetic op or maximum/minimum. */
  public record BinaryStep(BinaryOp op, int a, int b) implements Step {
    public BinaryStep {
      Objects.requireNonNull(op, "op");
    }
  }

  /** The binary ops a program may use. */
  public static final Set<BinaryOp> BINARY_OPS = Set.copyOf(EnumSet.of(BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL,
      BinaryOp.DIV, BinaryOp.MAXIMUM, BinaryOp.MINIMUM));

  private final List<Input> inputs;
  private final List<Step> steps;
  /** Per input, its position among the tensor inputs (-1 for a constant). */
  private final int[] tensorSlot;
  private final int tensorInputs;

  /**
   * The program of {@code inputs} and {@code steps}.
   *
   * @throws IllegalArgumentException if there is no step, a step reads a value not before it, a unary step reads
   *     a broadcast input or a constant, a binary step reads no FULL input or register, or uses another op than
   *     {@link #BINARY_OPS}
   */
  public ElementwiseProgram(List<Input> inputs, List<Step> steps) {
    this.inputs = List.copyOf(inputs);
    this.steps = List.copyOf(steps);
    if (this.steps.isEmpty()) throw new IllegalArgumentException("ElementwiseProgram: no steps");
    tensorSlot = new int[this.inputs.size()];
    int t = 0;
    for (int i = 0; i < tensorSlot.length; i++) tensorSlot[i] = this.inputs.get(i).kind() == Kind.CONSTANT ? -1 : t++;
    tensorInputs = t;
    for (int s = 0; s < this.steps.size(); s++) {
      int limit = this.inputs.size() + s;
      switch (this.steps.get(s)) {
        case UnaryStep u -> {
          check(u.x(), limit, s);
          if (!fullShaped(u.x())) {
            throw new IllegalArgumentException("ElementwiseProgram: step " + s + " (" + name(u.op()) + ") reads "
                + kind(u.x()) + " input " + u.x() + "; a unary step reads a FULL input or a register");
          }
        }
        case BinaryStep b -> {
          if (!BINARY_OPS.contains(b.op())) {
            throw new IllegalArgumentException("ElementwiseProgram: step " + s + ": " + name(b.op())
                + " is not one of " + BINARY_OPS);
          }
          check(b.a(), limit, s);
          check(b.b(), limit, s);
          if (!fullShaped(b.a()) && !fullShaped(b.b())) {
            throw new IllegalArgumentException("ElementwiseProgram: step " + s + " (" + name(b.op())
                + ") reads no FULL input or register (" + kind(b.a()) + ", " + kind(b.b()) + ")");
          }
        }
      }
    }
  }

  private static void check(int v, int limit, int step) {
    if (v < 0 || v >= limit) {
      throw new IllegalArgumentException("ElementwiseProgram: step " + step + " reads value " + v + " (valid: 0.."
          + (limit - 1) + ")");
    }
  }

  /** Whether value v has the output's shape: a FULL input or a register. */
  private boolean fullShaped(int v) {
    return v >= inputs.size() || inputs.get(v).kind() == Kind.FULL;
  }

  /** A builder: add inputs and steps, each returning the number of its value. */
  public static Builder builder() {
    return new Builder();
  }

  /** Builds a program; the last step added is the output. */
  public static final class Builder {
    private final List<Input> inputs = new ArrayList<>();
    private final List<Step> steps = new ArrayList<>();

    private Builder() {}

    private int input(Input in) {
      if (!steps.isEmpty()) throw new IllegalStateException("ElementwiseProgram.Builder: inputs come before steps");
      inputs.add(in);
      return inputs.size() - 1;
    }

    /** A tensor input of the output's shape. */
    public int full() {
      return input(new Input(Kind.FULL, 0));
    }

    /** A tensor input broadcast along the leading dims (as many elements as the output's last dim). */
    public int row() {
      return input(new Input(Kind.ROW, 0));
    }

    /** A tensor input broadcast along the last dim (one element per row of the output). */
    public int column() {
      return input(new Input(Kind.COLUMN, 0));
    }

    /** A scalar constant. */
    public int constant(double value) {
      return input(new Input(Kind.CONSTANT, value));
    }

    public int unary(UnaryOp op, int x) {
      return unary(op, 0, x);
    }

    public int unary(UnaryOp op, double param, int x) {
      steps.add(new UnaryStep(op, param, x));
      return inputs.size() + steps.size() - 1;
    }

    public int binary(BinaryOp op, int a, int b) {
      steps.add(new BinaryStep(op, a, b));
      return inputs.size() + steps.size() - 1;
    }

    public ElementwiseProgram build() {
      return new ElementwiseProgram(inputs, steps);
    }
  }

  public List<Input> inputs() {
    return inputs;
  }

  public List<Step> steps() {
    return steps;
  }

  /** Number of values: inputs and registers. */
  public int valueCount() {
    return inputs.size() + steps.size();
  }

  /** The value of the last step: the output. */
  public int output() {
    return valueCount() - 1;
  }

  /** Number of tensor inputs (the inputs that are not constants): the views a kernel is given, in order. */
  public int tensorInputs() {
    return tensorInputs;
  }

  /** The position of input {@code i} among the tensor inputs, or -1 for a constant. */
  public int tensorSlot(int i) {
    return tensorSlot[i];
  }

  /** The kind of value v: its input's, or FULL for a register. */
  public Kind kind(int v) {
    return v < inputs.size() ? inputs.get(v).kind() : Kind.FULL;
  }

  /** This program with every constant 0: programs that differ only in their constants share it (and a kernel). */
  public ElementwiseProgram structure() {
    List<Input> in = new ArrayList<>(inputs.size());
    for (Input i : inputs) in.add(i.kind() == Kind.CONSTANT ? new Input(Kind.CONSTANT, 0) : i);
    return new ElementwiseProgram(in, steps);
  }

  /** The lower-case name of an op, as the op table and the printed program spell it. */
  public static String name(Enum<?> op) {
    return op.name().toLowerCase(Locale.ROOT);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ElementwiseProgram p && p.inputs.equals(inputs) && p.steps.equals(steps);
  }

  @Override
  public int hashCode() {
    return 31 * inputs.hashCode() + steps.hashCode();
  }

  /** The expression the output is, e.g. {@code relu(add(x0, x1))}. */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder();
    print(output(), sb);
    return sb.toString();
  }

  private void print(int v, StringBuilder sb) {
    if (v < inputs.size()) {
      Input in = inputs.get(v);
      if (in.kind() == Kind.CONSTANT) sb.append(in.value());
      else sb.append('x').append(tensorSlot[v]);
      return;
    }
    switch (steps.get(v - inputs.size())) {
      case UnaryStep u -> {
        sb.append(name(u.op())).append('(');
        print(u.x(), sb);
        if (u.param() != 0) sb.append(", ").append(u.param());
        sb.append(')');
      }
      case BinaryStep b -> {
        sb.append(name(b.op())).append('(');
        print(b.a(), sb);
        sb.append(", ");
        print(b.b(), sb);
        sb.append(')');
      }
    }
  }
}
