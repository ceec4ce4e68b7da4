package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.ops.OpChecks;
import dev.ember.ops.OpDef;
import dev.ember.ops.OpInfo;
import dev.ember.ops.Ops;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Tests generated from {@link NnOpTable} by core's {@link OpChecks}: oracle values (float64), float32 against
 * float64, non-contiguous inputs, float64 gradients against central differences, and exact error messages; and
 * the table keyed to the nn op definitions.
 */
class NnOpTableTest {

  static Stream<OpInfo> ops() {
    return NnOpTable.all();
  }

  static Stream<OpInfo> differentiableOps() {
    return NnOpTable.differentiable();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void forwardMatchesOracleInFloat64(OpInfo op) {
    OpChecks.forwardMatchesOracleInFloat64(op);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void forwardInFloat32MatchesFloat64(OpInfo op) {
    OpChecks.forwardMatchesOracleInFloat32(op);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void nonContiguousInputsGiveTheSameValues(OpInfo op) {
    OpChecks.nonContiguousInputsGiveTheSameValues(op);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("differentiableOps")
  void backwardMatchesCentralDifferences(OpInfo op) {
    OpChecks.backwardMatchesCentralDifferences(op, true);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void badInputsGiveExactMessages(OpInfo op) {
    OpChecks.badInputsGiveExactMessages(op);
  }

  @Test
  void everyNnDefinitionHasAnEntryAndEveryEntryADefinition() {
    List<OpInfo> table = NnOpTable.build();
    OpChecks.assertWellFormed(table, false);
    Set<String> nn = new NnOps().definitions().stream().map(OpDef::name).collect(Collectors.toCollection(TreeSet::new));
    assertTrue(Ops.definitions().stream().map(OpDef::name).collect(Collectors.toSet()).containsAll(nn),
        "NnOps is registered through META-INF/services");
    Set<String> tested = new TreeSet<>();
    for (OpInfo o : table) {
      OpDef d = Ops.find(o.def()).orElse(null);
      assertTrue(d != null, "nn op-table entry " + o.name() + " names no registered definition (" + o.def() + ")");
      assertTrue(d.differentiable() || !o.differentiable(), o.name() + ": " + d.name() + " has no gradient to check");
      tested.add(o.def());
    }
    Set<String> untested = new TreeSet<>(nn);
    untested.removeAll(tested);
    assertEquals(Set.of(), untested, "nn op definitions without an op-table entry");
    int gradSamples = table.stream().filter(OpInfo::differentiable).mapToInt(OpInfo::sampleCount).sum();
    long oracles = table.stream().filter(OpInfo::hasOracle).count();
    System.out.println("nn op table: " + table.size() + " entries for " + tested.size() + " definitions, "
        + oracles + " with an oracle, " + gradSamples + " gradchecked samples (each contiguous and non-contiguous)");
    assertTrue(table.size() >= 100, "nn op table has " + table.size() + " entries");
  }
}
