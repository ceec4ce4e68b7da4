package dev.ember.ops;

import dev.ember.autograd.Recompute;
import dev.ember.autograd.Tracing;
import dev.ember.backend.ElementwiseProgram;
import dev.ember.backend.View;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.List;

/**
 * Fused ops: several ops run as one kernel, each defined by the ops it fuses. {@code fused_elementwise} runs an
 * {@link ElementwiseProgram} (a chain of unary and binary elementwise ops) in one pass over its inputs
 * ({@link dev.ember.backend.Backend#fusedElementwise}), with the bits of the chain run op by op
 * ({@link #elementwiseEager}). Its backward recomputes the chain eagerly from the saved inputs and back-propagates
 * through it: the chain's intermediates are never stored.
 */
public final class FusedOps {
  private FusedOps() {}

  static final OpDef FUSED_ELEMENTWISE = OpDef.of("fused_elementwise", OpDef.VARIADIC, DTypePolicy.FLOATING,
      Reads.INPUTS);
  static final List<OpDef> DEFINITIONS = List.of(FUSED_ELEMENTWISE);

  /**
   * The program's output on {@code inputs} (its tensor inputs, in order), in one kernel when they are all F32 or
   * all F64 on one device, else as {@link #elementwiseEager}.
   *
   * @throws dev.ember.tensor.TensorArgumentException if the number of inputs differs from the program's, or an
   *     input's shape does not fit its kind (FULL: all alike; ROW: [n] or [1, .., n], n the last dim; COLUMN: the
   *     output's shape with last dim 1)
   */
  public static Tensor elementwise(ElementwiseProgram program, Tensor... inputs) {
    Tensor out = elementwiseUntraced(program, inputs);
    if (!Tracing.active()) return out;
    return Tracing.op(FUSED_ELEMENTWISE.name(), out, inputs.clone(), new Object[] {"program", program},
        in -> elementwise(program, in));
  }

  private static Tensor elementwiseUntraced(ElementwiseProgram program, Tensor[] inputs) {
    String name = FUSED_ELEMENTWISE.name();
    int[] shape = check(program, inputs);
    DType dt = inputs[0].dtype();
    Device device = inputs[0].device();
    boolean fused = dt == DType.F32 || dt == DType.F64;
    for (Tensor t : inputs) fused &= t.dtype() == dt && t.device() == device;
    if (!fused) return elementwiseEager(program, inputs);
    Tensor out = Tensor.uninitialized(device, dt, shape);
    View[] views = inputs.clone();
    ElementwiseOps.backend(out).fusedElementwise(program, views, out);
    return Recompute.record(name, out, in -> elementwiseEager(program, in), inputs.clone());
  }

  /** Checks the inputs against the program; returns the output's shape (the FULL inputs'). */
  private static int[] check(ElementwiseProgram program, Tensor[] inputs) {
    String name = FUSED_ELEMENTWISE.name();
    if (inputs.length != program.tensorInputs()) {
      throw Check.fail(name, "program " + program + " takes " + program.tensorInputs() + " tensor inputs, got "
          + inputs.length);
    }
    int[] shape = null;
    for (int i = 0; i < program.inputs().size(); i++) {
      if (program.inputs().get(i).kind() == ElementwiseProgram.Kind.FULL) {
        shape = inputs[program.tensorSlot(i)].shapeRef();
        break;
      }
    }
    if (shape == null) {
      throw Check.fail(name, "program " + program + " has no input of the output's shape (FULL)");
    }
    int rank = shape.length;
    int cols = rank == 0 ? 1 : shape[rank - 1];
    for (int i = 0; i < program.inputs().size(); i++) {
      ElementwiseProgram.Kind kind = program.inputs().get(i).kind();
      if (kind == ElementwiseProgram.Kind.CONSTANT) continue;
      Tensor t = inputs[program.tensorSlot(i)];
      int[] s = t.shapeRef();
      boolean ok = switch (kind) {
        case FULL -> Arrays.equals(s, shape);
        case ROW -> s.length >= 1 && s.length <= rank && s[s.length - 1] == cols && t.numel() == cols;
        case COLUMN -> s.length == rank && rank >= 1 && s[rank - 1] == 1
            && Arrays.equals(Arrays.copyOf(s, rank - 1), Arrays.copyOf(shape, rank - 1));
        case CONSTANT -> true;
      };
      if (!ok) {
        throw Check.fail(name, "input " + program.tensorSlot(i) + " (" + kind + ") does not fit the output "
            + Arrays.toString(shape) + " of " + program, "input", t);
      }
    }
    return shape.clone();
  }

  /**
   * The program's output computed op by op with the eager ops (recorded for autograd as those ops): the reference
   * a fused kernel matches to the bit, and what the fused op's backward recomputes. A constant is a 0-d tensor of
   * the dtype of the step's other operand, as {@code x.mul(0.5)} makes it.
   */
  public static Tensor elementwiseEager(ElementwiseProgram program, Tensor... inputs) {
    check(program, inputs);
    Tensor[] values = new Tensor[program.valueCount()];
    int n = program.inputs().size();
    for (int i = 0; i < n; i++) {
      if (program.inputs().get(i).kind() != ElementwiseProgram.Kind.CONSTANT) values[i] = inputs[program.tensorSlot(i)];
    }
    for (int s = 0; s < program.steps().size(); s++) {
      values[n + s] = switch (program.steps().get(s)) {
        case ElementwiseProgram.UnaryStep u -> Unary.of(u.op()).apply(values[u.x()], u.param());
        case ElementwiseProgram.BinaryStep b -> {
          Tensor a = values[b.a()];
          Tensor c = values[b.b()];
          if (a == null) a = Tensor.scalar(program.inputs().get(b.a()).value(), c.dtype());
          if (c == null) c = Tensor.scalar(program.inputs().get(b.b()).value(), a.dtype());
          yield Binary.of(b.op()).apply(a, c);
        }
      };
    }
    return values[program.output()];
  }
}
