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

  /** The table is keyed to the registry: no definition without an entry, no entry without a definition. */
  @Test
  void everyDefinitionHasAnEntryAndEveryEntryADefinition() {
    List<OpInfo> all = OpTable.build();
    Set<String> tested = OpChecks.assertKeyedTo(all, Ops.definitions().stream().map(OpDef::name).toList(), "op-table");
    System.out.println("op table: " + all.size() + " entries for " + Ops.definitions().size() + " definitions");
    assertEquals(Ops.definitions().size(), tested.size());
  }
}
