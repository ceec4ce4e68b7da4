package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import java.util.List;
import org.junit.jupiter.api.Test;

class OpsTest {

  @Test
  void definitionsAreUniqueAndFoundByName() {
    var all = Ops.definitions();
    assertEquals(all.size(), all.stream().map(OpDef::name).distinct().count(), "op names are unique");
    for (OpDef d : all) assertSame(d, Ops.find(d.name()).orElseThrow(), d.name());
    assertTrue(Ops.find("no_such_op").isEmpty());
    assertThrows(UnsupportedOperationException.class, () -> all.add(OpDef.of("x", 1, DTypePolicy.FLOATING, Reads.NOTHING)));
  }

  @Test
  void coreDefinitionsComeFirst() {
    assertEquals(CoreOps.definitions(), Ops.definitions().subList(0, CoreOps.definitions().size()));
  }

  static final class Extra implements OpDefinitions {
    final List<OpDef> defs;

    Extra(OpDef... defs) {
      this.defs = List.of(defs);
    }

    @Override
    public List<OpDef> definitions() {
      return defs;
    }
  }

  @Test
  void providersAddTheirDefinitionsAfterCoresAndMayNotRedefineAName() {
    OpDef conv = OpDef.of("conv_test", 3, DTypePolicy.FLOATING_ONLY, Reads.INPUTS);
    var byName = Ops.load(List.of(new Extra(conv)));
    assertEquals(CoreOps.definitions().size() + 1, byName.size());
    assertSame(conv, byName.get("conv_test"));
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> Ops.load(List.of(new Extra(OpDef.of("mul", 2, DTypePolicy.PROMOTED, Reads.INPUTS)))));
    assertEquals("op mul is defined twice: by ember-core and by " + Extra.class.getName(), e.getMessage());
  }

  @Test
  void dtypePolicies() {
    assertEquals(DType.F32, DTypePolicy.FLOATING.computeIn(DType.I64));
    assertEquals(DType.F64, DTypePolicy.FLOATING.computeIn(DType.F64));
    assertEquals(DType.I32, DTypePolicy.NUMERIC.computeIn(DType.I32));
    assertEquals(DType.F32, DTypePolicy.NUMERIC.computeIn(DType.BOOL));
    assertEquals(DType.I64, DTypePolicy.ACCUMULATING.result(DType.BOOL));
    assertEquals(DType.BOOL, DTypePolicy.PREDICATE.result(DType.F32));
    assertFalse(DTypePolicy.FLOATING_ONLY.accepts(DType.I64));
  }

  @Test
  void definitionsCheckTheirFields() {
    assertThrows(IllegalArgumentException.class, () -> OpDef.of("", 1, DTypePolicy.FLOATING, Reads.NOTHING));
    assertThrows(IllegalArgumentException.class, () -> OpDef.of("x", 0, DTypePolicy.FLOATING, Reads.NOTHING));
    assertThrows(IllegalArgumentException.class,
        () -> new OpDef("x", 1, DTypePolicy.PREDICATE, false, Reads.INPUTS));
  }
}
