package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Tests generated from {@link OpTable}: oracle values, gradients, layouts and error messages for every op. */
class OpTableTest extends OpTableContract {
  @Override
  protected List<OpInfo> table() {
    return OpTable.build();
  }

  @Test
  void tableCoversAtLeastEightyOps() {
    List<OpInfo> all = OpTable.build();
    OpChecks.assertWellFormed(all, true);
    assertTrue(all.size() >= 80, "op table has " + all.size() + " ops");
  }

  /**
   * The device check of {@link OpChecks#sameValuesAndGradientsOn} in bfloat16 (as CUDA's op table test runs it) on
   * the fake device, whose kernels are the CPU's: the same bits, for every entry that takes bfloat16 inputs.
   */
  @Test
  void everyEntryTakingAHalfDtypeGivesTheCpusBitsOnTheFakeDevice() {
    OpChecks.Tolerance exact = new OpChecks.Tolerance(0, 0);
    for (dev.ember.tensor.DType half : new dev.ember.tensor.DType[] {dev.ember.tensor.DType.BF16,
        dev.ember.tensor.DType.F16}) {
      int checked = 0;
      for (OpInfo op : OpTable.build()) {
        if (OpChecks.sameValuesAndGradientsOn(dev.ember.testing.FakeDevice.DEVICE, op, half, exact, exact)) {
          checked++;
        }
      }
      System.out.println("op table: " + checked + " entries take " + half.torchName());
      assertTrue(checked >= 60, checked + " entries take " + half.torchName());
    }
  }

  /** The table is keyed to the registry: no definition without an entry, no entry without a definition. */
  @Test
  void everyDefinitionHasAnEntryAndEveryEntryADefinition() {
    List<OpInfo> all = OpTable.build();
    Set<String> tested = OpChecks.assertKeyedTo(all, Ops.definitions().stream().map(OpDef::name).toList(), "op-table");
    System.out.println("op table: " + all.size() + " entries for " + Ops.definitions().size() + " definitions");
    assertEquals(Ops.definitions().size(), tested.size());
  }
}
