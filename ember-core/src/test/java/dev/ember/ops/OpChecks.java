package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Arr;
import dev.ember.testing.Assertions;
import dev.ember.testing.FakeDevice;
import dev.ember.testing.GradCheck;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The checks generated from an {@link OpInfo}, shared by every module's op table ({@link OpTableTest} in core,
 * the nn table in ember-nn). An entry without an oracle (its values are checked against PyTorch fixtures
 * elsewhere) is compared with its own float64 result where the checks need a reference.
 */
public final class OpChecks {
  private OpChecks() {}

  /** Deterministic inputs in each input's domain, drawn as F64 (the values every variant starts from). */
  static List<Tensor> inputs(OpInfo op, int sample, DType dtype) {
    Generator gen = new Generator(op.name.hashCode() * 31L + sample);
    List<Tensor> in = new ArrayList<>();
    int[][] shapes = op.samples.get(sample);
    for (int i = 0; i < shapes.length; i++) {
      double[] d = op.domainOf(i);
      Tensor u = Tensor.rand(gen, DType.F64, shapes[i]);
      in.add(u.mul(d[1] - d[0]).add(d[0]).to(dtype));
    }
    return in;
  }

  /** The same values laid out non-contiguously (transposed storage for rank >= 2, every other element for rank 1). */
  static Tensor nonContiguous(Tensor x) {
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

  /** The expected values at {@code in}: the oracle's, or the op's own in float64 when it has none. */
  private static Arr reference(OpInfo op, List<Tensor> in) {
    if (op.oracle != null) return op.oracle.apply(in.stream().map(Arr::of).toList());
    try (var ignored = Grad.off()) {
      return Arr.of(op.fn.apply(in.stream().map(t -> t.to(DType.F64)).toList()));
    }
  }

  private static String label(OpInfo op, int sample, String variant) {
    StringBuilder s = new StringBuilder(op.name).append(' ').append(variant).append(" sample ");
    for (int[] shape : op.samples.get(sample)) s.append(Arrays.toString(shape));
    return s.toString();
  }

  /** Float64 forward values against the oracle (nothing to do for an entry without one). */
  public static void forwardMatchesOracleInFloat64(OpInfo op) {
    if (op.oracle == null) return;
    for (int s = 0; s < op.samples.size(); s++) {
      List<Tensor> in = inputs(op, s, DType.F64);
      Assertions.assertClose(reference(op, in), op.fn.apply(in), 1e-10, 1e-9, label(op, s, "f64"));
    }
  }

  /** Float32 inputs give a float32 result close to the reference on the same (rounded) values. */
  public static void forwardMatchesOracleInFloat32(OpInfo op) {
    for (int s = 0; s < op.samples.size(); s++) {
      List<Tensor> in = inputs(op, s, DType.F32);
      Tensor out = op.fn.apply(in);
      if (out.dtype().isFloatingPoint()) assertEquals(DType.F32, out.dtype(), op.name + " keeps float32");
      Assertions.assertClose(reference(op, in), out, 1e-5, op.f32Rtol, label(op, s, "f32"));
    }
  }

  /** Non-contiguous inputs give the values of contiguous ones. */
  public static void nonContiguousInputsGiveTheSameValues(OpInfo op) {
    if (op.contiguousOnly) return;
    for (int s = 0; s < op.samples.size(); s++) {
      List<Tensor> in = inputs(op, s, DType.F64);
      List<Tensor> nc = in.stream().map(OpChecks::nonContiguous).toList();
      Assertions.assertClose(reference(op, in), op.fn.apply(nc), 1e-10, 1e-9, label(op, s, "non-contiguous"));
    }
  }

  /**
   * Float64 gradients of every input against central differences, on contiguous inputs and, where
   * {@code alsoNonContiguous}, on non-contiguous ones too.
   */
  public static void backwardMatchesCentralDifferences(OpInfo op, boolean alsoNonContiguous) {
    for (int s = 0; s < op.samples.size(); s++) {
      for (boolean contiguous : new boolean[] {true, false}) {
        if (!contiguous && (op.contiguousOnly || !alsoNonContiguous)) continue;
        List<Tensor> in = inputs(op, s, DType.F64);
        if (!contiguous) in = in.stream().map(OpChecks::nonContiguous).toList();
        for (Tensor x : in) x.requiresGrad(true);
        GradCheck.check(label(op, s, contiguous ? "contiguous" : "non-contiguous"), op.fn, in);
      }
    }
  }

  /**
   * The op on inputs moved to the strict fake device ({@link FakeDevice}) gives, on that device, the values its
   * float32 CPU call gives, and (differentiable ops) the same input gradients for a weighted sum of the output: an op
   * that allocates on the CPU, reads device data on the host or drops the device fails here. An entry whose
   * function holds tensors of its own (a fixed index or mask) moves them to its input's device.
   */
  public static void sameValuesAndGradientsOnTheFakeDevice(OpInfo op) {
    Tolerance tight = new Tolerance(1e-6, 1e-6);
    sameValuesAndGradientsOn(FakeDevice.DEVICE, op, DType.F32, tight, tight);
  }

  /** An absolute and a relative tolerance: |actual - expected| <= atol + rtol * |expected|. */
  public record Tolerance(double atol, double rtol) {}

  /**
   * The op on inputs of {@code dtype} moved to {@code device} gives, on that device, the values its CPU call on the
   * same inputs gives (within {@code values}), and (differentiable ops) the same input gradients for a weighted sum
   * of the output (within {@code grads}). Returns false, having checked nothing, when the CPU call itself rejects
   * inputs of {@code dtype} (an op without that dtype).
   */
  public static boolean sameValuesAndGradientsOn(Device device, OpInfo op, DType dtype, Tolerance values,
      Tolerance grads) {
    for (int s = 0; s < op.samples.size(); s++) {
      String what = label(op, s, device + " " + dtype.torchName());
      List<Tensor> in = inputs(op, s, DType.F32).stream().map(t -> t.to(dtype)).toList();
      boolean grad = op.differentiable && dtype.isFloatingPoint();
      if (grad) {
        for (Tensor x : in) x.requiresGrad(true);
      }
      Tensor out;
      try {
        out = op.fn.apply(in);
      } catch (IllegalArgumentException e) {
        if (dtype == DType.F32) throw e;
        return false;
      }
      List<Tensor> din = in.stream().map(t -> t.detach().to(device)).toList();
      if (grad) {
        for (Tensor x : din) x.requiresGrad(true);
      }
      Tensor dout = op.fn.apply(din);
      if (!op.name.equals("to_device")) assertEquals(device, dout.device(), what + ": the result's device");
      Assertions.assertClose(Arr.of(out), dout.cpu(), values.atol(), values.rtol(), what + " values");
      if (!grad || !out.dtype().isFloatingPoint() || !out.requiresGrad()) continue;
      Tensor w = Tensor.rand(new Generator(s + 17L), out.dtype(), out.shapeRef());
      out.mul(w).sum().backward();
      dout.mul(w.to(dout.device())).sum().backward();
      for (int i = 0; i < in.size(); i++) {
        Tensor g = in.get(i).grad();
        Tensor dg = din.get(i).grad();
        if (g == null) continue;
        assertEquals(device, dg.device(), what + ": gradient of input " + i + " on the input's device");
        Assertions.assertClose(Arr.of(g), dg.cpu(), grads.atol(), grads.rtol(), what + " gradient of input " + i);
      }
    }
    return true;
  }

  /** Each error case throws IllegalArgumentException with exactly its message. */
  public static void badInputsGiveExactMessages(OpInfo op) {
    for (OpInfo.ErrorCase e : op.errors) {
      List<Tensor> in = new ArrayList<>();
      for (int[] shape : e.shapes()) in.add(Tensor.zeros(shape));
      var call = e.call() != null ? e.call() : op.fn;
      IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> call.apply(in), op.name);
      assertEquals(e.message(), ex.getMessage(), op.name);
    }
  }

  /**
   * Whether the backward of the entry's first sample fails after its inputs ({@code inputs}) or its output changed
   * in place, that is whether it reads them (see {@link Reads}); null for an entry whose result is one of its
   * inputs (an identity, e.g. dropout in eval).
   */
  public static Boolean backwardReadsAfterInPlaceChange(OpInfo op, boolean inputs) {
    List<Tensor> in = new ArrayList<>();
    for (Tensor leaf : inputs(op, 0, DType.F64)) in.add(leaf.requiresGrad(true).mul(1)); // non-leaf: may change
    Tensor y = op.fn.apply(in);
    if (in.contains(y)) return null;
    Tensor loss = y.sum(); // sum's backward reads nothing: only the op's own reads count
    try (var ignored = Grad.off()) {
      if (inputs) for (Tensor x : in) x.add_(0);
      else y.add_(0);
    }
    try {
      loss.backward();
      return false;
    } catch (IllegalStateException e) {
      return true;
    }
  }

  /**
   * The node an entry's output records on the tape is named by a registered definition: a differentiable entry's
   * result (on float64 inputs that require grad) has a grad_fn, and {@link Ops#find} knows its name, so a tape name
   * that drifts from its definition fails here. Null when the result is one of the inputs (an identity).
   */
  public static String recordedNodeIsADefinition(OpInfo op) {
    List<Tensor> in = new ArrayList<>();
    for (Tensor leaf : inputs(op, 0, DType.F64)) in.add(leaf.requiresGrad(true));
    Tensor y = op.fn.apply(in);
    if (in.contains(y)) return null;
    if (y.gradFn() == null) throw new AssertionError(op.name + ": the result records no node on the tape");
    String name = y.gradFn().name();
    if (Ops.find(name).isEmpty()) {
      throw new AssertionError(op.name + ": records a node named " + name + ", which no definition has");
    }
    return name;
  }

  /**
   * Integer (I64) inputs are rejected with an IllegalArgumentException when the entry's definition accepts floating
   * point only; nothing to check for an entry whose result is one of its inputs (an identity, e.g. dropout in eval).
   */
  public static void integerInputsAreRejectedUnlessAccepted(OpInfo op) {
    OpDef d = Ops.find(op.def).orElseThrow(() -> new AssertionError(op.name + ": no definition " + op.def));
    if (d.dtypes().accepts(DType.I64)) return;
    List<Tensor> f64 = inputs(op, 0, DType.F64);
    if (f64.contains(op.fn.apply(f64))) return;
    List<Tensor> ints = inputs(op, 0, DType.I64);
    assertThrows(IllegalArgumentException.class, () -> op.fn.apply(ints), op.name + " (" + d.dtypes() + ") on int64");
  }

  /** Names are unique and every entry has samples and a call (and, where {@code oracles}, an oracle). */
  public static void assertWellFormed(List<OpInfo> table, boolean oracles) {
    long distinct = table.stream().map(o -> o.name).distinct().count();
    assertEquals(table.size(), distinct, "op names are unique");
    for (OpInfo o : table) {
      if (o.samples.isEmpty()) throw new AssertionError(o.name + " has no samples");
      if (o.fn == null) throw new AssertionError(o.name + " has no call");
      if (oracles && o.oracle == null) throw new AssertionError(o.name + " has no oracle");
    }
  }

  /**
   * The table is keyed to the registry: every entry names a registered definition (one with a gradient when the
   * entry is differentiable), and each of {@code definitions} has an entry. Returns the definitions the table covers.
   */
  public static Set<String> assertKeyedTo(List<OpInfo> table, Collection<String> definitions, String what) {
    Set<String> tested = new TreeSet<>();
    for (OpInfo o : table) {
      OpDef d = Ops.find(o.def).orElse(null);
      assertTrue(d != null, what + " entry " + o.name + " names no registered definition (" + o.def + ")");
      assertTrue(d.differentiable() || !o.differentiable, o.name + ": " + d.name() + " has no gradient to check");
      tested.add(o.def);
    }
    Set<String> untested = new TreeSet<>(definitions);
    untested.removeAll(tested);
    assertEquals(Set.of(), untested, what + " definitions without an entry");
    return tested;
  }
}
