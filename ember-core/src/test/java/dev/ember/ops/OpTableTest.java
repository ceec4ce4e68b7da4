package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Arr;
import dev.ember.testing.Assertions;
import dev.ember.testing.GradCheck;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Tests generated from {@link OpTable}: oracle values, gradients, layouts and error messages for every op. */
class OpTableTest {

  static java.util.stream.Stream<OpInfo> ops() {
    return OpTable.all();
  }

  static java.util.stream.Stream<OpInfo> differentiableOps() {
    return OpTable.differentiable();
  }

  /** Deterministic inputs in the op's domain, as F64 (the values every variant starts from). */
  private static List<Tensor> inputs(OpInfo op, int sample, DType dtype) {
    Generator gen = new Generator(op.name.hashCode() * 31L + sample);
    List<Tensor> in = new ArrayList<>();
    for (int[] shape : op.samples.get(sample)) {
      Tensor u = Tensor.rand(gen, DType.F64, shape);
      in.add(u.mul(op.hi - op.lo).add(op.lo).to(dtype));
    }
    return in;
  }

  /** The same values laid out non-contiguously (transposed storage for rank >= 2, every other element for rank 1). */
  private static Tensor nonContiguous(Tensor x) {
    try (var ignored = Grad.off()) {
      if (x.dim() >= 2 && x.size(-1) > 1 && x.size(-2) > 1) {
        return x.transpose(-1, -2).contiguous().transpose(-1, -2);
      }
      if (x.dim() == 1 && x.size(0) > 1) {
        Tensor base = Tensor.zeros(x.dtype(), 2 * x.size(0));
        Tensor view = base.slice(0, 0, 2 * x.size(0), 2);
        view.copy_(x);
        return view;
      }
      return x;
    }
  }

  private static Arr oracle(OpInfo op, List<Tensor> in) {
    return op.oracle.apply(in.stream().map(Arr::of).toList());
  }

  private static String label(OpInfo op, int sample, String variant) {
    StringBuilder s = new StringBuilder(op.name).append(' ').append(variant).append(" sample ");
    for (int[] shape : op.samples.get(sample)) s.append(Arrays.toString(shape));
    return s.toString();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void forwardMatchesOracleInFloat64(OpInfo op) {
    for (int s = 0; s < op.samples.size(); s++) {
      List<Tensor> in = inputs(op, s, DType.F64);
      Assertions.assertClose(oracle(op, in), op.fn.apply(in), 1e-10, 1e-9, label(op, s, "f64"));
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void forwardMatchesOracleInFloat32(OpInfo op) {
    for (int s = 0; s < op.samples.size(); s++) {
      List<Tensor> in = inputs(op, s, DType.F32);
      Tensor out = op.fn.apply(in);
      if (out.dtype().isFloatingPoint()) assertEquals(DType.F32, out.dtype(), op.name + " keeps float32");
      Assertions.assertClose(oracle(op, in), out, 1e-5, op.f32Rtol, label(op, s, "f32"));
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void nonContiguousInputsGiveTheSameValues(OpInfo op) {
    if (op.contiguousOnly) return;
    for (int s = 0; s < op.samples.size(); s++) {
      List<Tensor> in = inputs(op, s, DType.F64);
      List<Tensor> nc = in.stream().map(OpTableTest::nonContiguous).toList();
      Assertions.assertClose(oracle(op, in), op.fn.apply(nc), 1e-10, 1e-9, label(op, s, "non-contiguous"));
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("differentiableOps")
  void backwardMatchesCentralDifferences(OpInfo op) {
    for (int s = 0; s < op.samples.size(); s++) {
      for (boolean contiguous : new boolean[] {true, false}) {
        if (!contiguous && op.contiguousOnly) continue;
        List<Tensor> in = inputs(op, s, DType.F64);
        if (!contiguous) in = in.stream().map(OpTableTest::nonContiguous).toList();
        for (Tensor x : in) x.requiresGrad(true);
        GradCheck.check(label(op, s, contiguous ? "contiguous" : "non-contiguous"), op.fn, in);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void badInputsGiveExactMessages(OpInfo op) {
    for (OpInfo.ErrorCase e : op.errors) {
      List<Tensor> in = new ArrayList<>();
      for (int[] shape : e.shapes()) in.add(Tensor.zeros(shape));
      var call = e.call() != null ? e.call() : op.fn;
      IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> call.apply(in), op.name);
      assertEquals(e.message(), ex.getMessage(), op.name);
    }
  }

  @Test
  void tableCoversAtLeastEightyOps() {
    List<OpInfo> all = OpTable.build();
    long distinct = all.stream().map(o -> o.name).distinct().count();
    assertEquals(all.size(), distinct, "op names are unique");
    assertTrue(distinct >= 80, "op table has " + distinct + " ops");
    for (OpInfo o : all) {
      assertTrue(!o.samples.isEmpty(), o.name + " has samples");
      assertTrue(o.oracle != null && o.fn != null, o.name + " has an oracle and a call");
    }
  }

  /** The table is keyed to the registry: no definition without an entry, no entry without a definition. */
  @Test
  void everyDefinitionHasAnEntryAndEveryEntryADefinition() {
    List<OpInfo> all = OpTable.build();
    java.util.Set<String> tested = new java.util.TreeSet<>();
    for (OpInfo o : all) {
      OpDef d = Ops.find(o.def).orElse(null);
      assertTrue(d != null, "op-table entry " + o.name + " names no registered definition (" + o.def + ")");
      assertTrue(d.differentiable() || !o.differentiable, o.name + ": " + d.name() + " has no gradient to check");
      tested.add(o.def);
    }
    List<String> untested = Ops.definitions().stream().map(OpDef::name).filter(n -> !tested.contains(n)).toList();
    assertEquals(List.of(), untested, "registered op definitions without an op-table entry");
    System.out.println("op table: " + all.size() + " entries for " + Ops.definitions().size() + " definitions");
    assertEquals(Ops.definitions().size(), tested.size());
  }
}
