package dev.ember.metrics;

/** The checks every {@link Metric#merge} starts with. */
final class Merges {
  private Merges() {}

  /**
   * {@code other} cast to {@code type}, or an {@link IllegalArgumentException} when it is another
   * kind of metric or {@code self} (merging a metric into itself would count its data twice).
   */
  static <T> T sameKind(Object self, Object other, Class<T> type) {
    if (other == self) {
      throw new IllegalArgumentException(type.getSimpleName() + ".merge: cannot merge a metric into itself");
    }
    if (other == null || other.getClass() != type) {
      throw new IllegalArgumentException(type.getSimpleName() + ".merge: expected another "
          + type.getSimpleName() + ", got " + (other == null ? "null" : other.getClass().getSimpleName()));
    }
    return type.cast(other);
  }
}
