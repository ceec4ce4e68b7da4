package dev.ember.ops;

import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The checks {@link OpChecks} generates for every entry of an op table: oracle values in float64, float32 against
 * float64, non-contiguous inputs, float64 gradients against central differences, exact error messages. A table's
 * test class (core's {@code OpTableTest}, ember-nn's {@code NnOpTableTest}) extends this, names its entries and adds
 * its own checks.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class OpTableContract {
  /** The table's entries, built afresh. */
  protected abstract List<OpInfo> table();

  protected Stream<OpInfo> ops() {
    return table().stream();
  }

  protected Stream<OpInfo> differentiableOps() {
    return table().stream().filter(OpInfo::differentiable);
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
  void sameValuesAndGradientsOnTheFakeDevice(OpInfo op) {
    OpChecks.sameValuesAndGradientsOnTheFakeDevice(op);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void badInputsGiveExactMessages(OpInfo op) {
    OpChecks.badInputsGiveExactMessages(op);
  }
}
