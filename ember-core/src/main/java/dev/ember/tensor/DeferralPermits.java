package dev.ember.tensor;

import java.util.WeakHashMap;

/** The leaves {@link Deferred#permit} allowed (Tensor keeps Object's identity equality, so this is an identity map). */
final class DeferralPermits {
  static final WeakHashMap<Tensor, Boolean> LEAVES = new WeakHashMap<>();

  private DeferralPermits() {}
}
