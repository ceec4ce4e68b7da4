package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.ops.OpChecks;
import dev.ember.ops.OpDef;
import dev.ember.ops.OpInfo;
import dev.ember.ops.OpTableContract;
import dev.ember.ops.Ops;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Tests generated from {@link NnOpTable} by core's {@link OpChecks}: oracle values (float64), float32 against
 * float64, non-contiguous inputs, float64 gradients against central differences, exact error messages; and the
 * table keyed to the nn op definitions: every definition has an entry, every entry a definition, integer inputs are
 * rejected as the dtype policy says, and each backward reads what its definition declares.
 */
class NnOpTableTest extends OpTableContract {
  @Override
  protected List<OpInfo> table() {
    return NnOpTable.build();
  }

  /**
   * The device check ember-cuda's op-table test runs, in bfloat16 and float16 on the fake device (the CPU's kernels):
   * the CPU's values and gradients bit for bit, for every entry that takes the dtype.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void halfDtypesGiveTheCpusBitsOnTheFakeDevice(OpInfo op) {
    OpChecks.Tolerance exact = new OpChecks.Tolerance(0, 0);
    for (dev.ember.tensor.DType half : new dev.ember.tensor.DType[] {dev.ember.tensor.DType.BF16,
        dev.ember.tensor.DType.F16}) {
      OpChecks.sameValuesAndGradientsOn(dev.ember.testing.FakeDevice.DEVICE, op, half, exact, exact);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void integerInputsAreRejectedUnlessTheDefinitionAcceptsThem(OpInfo op) {
    OpChecks.integerInputsAreRejectedUnlessAccepted(op);
  }

  /**
   * Each nn definition's {@link Reads} is what its backward reads: some entry's backward fails after the inputs
   * (output) changed in place exactly when the definition says it reads them. (Variants may read less: cross_entropy
   * reads its class weights only when given.)
   */
  @Test
  void backwardReadsWhatEachDefinitionDeclares() {
    Map<String, boolean[]> seen = new TreeMap<>();
    for (OpInfo o : NnOpTable.build()) {
      if (!o.differentiable()) continue;
      Boolean in = OpChecks.backwardReadsAfterInPlaceChange(o, true);
      Boolean out = OpChecks.backwardReadsAfterInPlaceChange(o, false);
      if (in == null) continue;
      boolean[] r = seen.computeIfAbsent(o.def(), k -> new boolean[2]);
      r[0] |= in;
      r[1] |= out;
    }
    List<String> wrong = new ArrayList<>();
    for (OpDef d : new NnOps().definitions()) {
      boolean[] r = seen.get(d.name());
      if (r == null) continue;
      if (r[0] != d.reads().input() || r[1] != d.reads().output()) {
        wrong.add(d.name() + " declares " + d.reads() + ", reads inputs " + r[0] + ", output " + r[1]);
      }
    }
    assertEquals(List.of(), wrong, "definitions whose Reads differ from what their backward reads");
  }

  /**
   * Every differentiable entry's output node is named by a registered definition (core's or nn's), so an nn op whose
   * tape name drifts from its definition in NnOps fails here. (Composed ops end in a core node, e.g. a loss's mean.)
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("differentiableOps")
  void recordedTapeNameIsADefinition(OpInfo op) {
    OpChecks.recordedNodeIsADefinition(op);
  }

  @Test
  void everyNnDefinitionHasAnEntryAndEveryEntryADefinition() {
    List<OpInfo> table = NnOpTable.build();
    OpChecks.assertWellFormed(table, false);
    Set<String> nn = new NnOps().definitions().stream().map(OpDef::name).collect(Collectors.toCollection(TreeSet::new));
    assertTrue(Ops.definitions().stream().map(OpDef::name).collect(Collectors.toSet()).containsAll(nn),
        "NnOps is registered through META-INF/services");
    Set<String> tested = OpChecks.assertKeyedTo(table, nn, "nn op-table");
    int gradSamples = table.stream().filter(OpInfo::differentiable).mapToInt(OpInfo::sampleCount).sum();
    long oracles = table.stream().filter(OpInfo::hasOracle).count();
    System.out.println("nn op table: " + table.size() + " entries for " + tested.size() + " definitions, "
        + oracles + " with an oracle, " + gradSamples + " gradchecked samples (each contiguous and non-contiguous)");
    assertTrue(table.size() >= 100, "nn op table has " + table.size() + " entries");
  }
}
