package dev.ember.ops;

import java.util.ArrayList;
import java.util.List;

/**
 * ember-core's op definitions, the first part of {@link Ops#definitions()}, gathered from where each family defines
 * them: {@link Unary} and {@link Binary} constants, then the definitions declared next to the other ops.
 */
final class CoreOps {
  private CoreOps() {}

  static List<OpDef> definitions() {
    List<OpDef> defs = new ArrayList<>();
    for (Unary u : Unary.values()) defs.add(u.def());
    for (Binary b : Binary.values()) defs.add(b.def());
    defs.addAll(ElementwiseOps.DEFINITIONS);
    defs.addAll(ReduceOps.DEFINITIONS);
    defs.addAll(LinalgOps.DEFINITIONS);
    defs.addAll(MovementOps.DEFINITIONS);
    defs.addAll(IndexOps.DEFINITIONS);
    defs.addAll(FusedOps.DEFINITIONS);
    return List.copyOf(defs);
  }
}
