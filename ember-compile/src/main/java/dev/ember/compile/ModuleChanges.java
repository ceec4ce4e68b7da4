package dev.ember.compile;

import dev.ember.nn.Module;

/**
 * Whether any module changed ({@link Module#changeCount()}: a parameter replaced or converted, a hook registered or
 * removed, a child added) since a compiled module or step made its plans: they may then hold stale tensors or skip a
 * hook, and every signature is traced again.
 */
final class ModuleChanges {
  private volatile long seen = Module.changeCount();

  /** True, once, when the count has moved since the last call or {@link #settle()}. */
  boolean moved() {
    long now = Module.changeCount();
    if (now == seen) return false;
    seen = now;
    return true;
  }

  /** Takes the count as it is now: what a trace itself registered (a lazy buffer) belongs to the plan it made. */
  void settle() {
    seen = Module.changeCount();
  }
}
