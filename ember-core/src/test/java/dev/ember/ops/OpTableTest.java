package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void forwardMatchesOracleInFloat64(OpInfo op) {
    OpChecks.forwardMatchesOracleInFloat64(op);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void forwardMatchesOracleInFloat32(OpInfo op) {
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
  void tableCoversAtLeastEightyOps() {
    List<OpInfo> all = OpTable.build();
    OpChecks.assertWellFormed(all, true);
    assertTrue(all.size() >= 80, "op table has " + all.size() + " ops");
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
