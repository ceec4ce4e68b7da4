package dev.ember.ops;

import static dev.ember.ops.DTypePolicy.FLOATING_ONLY;
import static dev.ember.ops.DTypePolicy.PROMOTED;
import static dev.ember.ops.OpDef.of;
import static dev.ember.ops.Reads.INPUTS;

import java.util.ArrayList;
import java.util.List;

/**
 * ember-core's op definitions, the first part of {@link Ops#definitions()}, gathered from where each family defines
 * them: {@link Unary} and {@link Binary} constants, then the definitions declared next to the other ops.
 */
final class CoreOps {
  private CoreOps() {}

  // LinalgOps is being reworked on its own branch; these move next to its ops once both are merged
  private static final List<OpDef> LINALG = List.of(of("matmul", 2, PROMOTED, INPUTS), of("bmm", 2, PROMOTED, INPUTS),
      of("outer", 2, PROMOTED, INPUTS), of("addmm", 3, PROMOTED, INPUTS), of("linear", 3, FLOATING_ONLY, INPUTS),
      of("dot", 2, PROMOTED, INPUTS));

  static List<OpDef> definitions() {
    List<OpDef> defs = new ArrayList<>();
    for (Unary u : Unary.values()) defs.add(u.def());
    for (Binary b : Binary.values()) defs.add(b.def());
    defs.addAll(ElementwiseOps.DEFINITIONS);
    defs.addAll(ReduceOps.DEFINITIONS);
    defs.addAll(LINALG);
    defs.addAll(MovementOps.DEFINITIONS);
    defs.addAll(IndexOps.DEFINITIONS);
    return List.copyOf(defs);
  }
}
