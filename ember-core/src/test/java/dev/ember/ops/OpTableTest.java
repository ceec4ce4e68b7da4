package dev.ember.ops;

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
}
