package dev.ember.ops;

import java.util.List;

/**
 * A module's contribution to {@link Ops#definitions()}, found with {@link java.util.ServiceLoader}: a module that
 * defines ops (ember-nn: convolution, pooling, losses, ...) implements this interface in a public class with a public
 * no-argument constructor and names that class in {@code META-INF/services/dev.ember.ops.OpDefinitions}.
 */
public interface OpDefinitions {
  /** The ops this module defines, in the order they should be listed. */
  List<OpDef> definitions();
}
