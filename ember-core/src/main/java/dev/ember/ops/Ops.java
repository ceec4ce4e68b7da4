package dev.ember.ops;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * The registry of op definitions: ember-core's own, then those every {@link OpDefinitions} provider on the class
 * path contributes (found once, with {@link ServiceLoader}, on first use). The op-table tests are keyed to it.
 */
public final class Ops {
  private Ops() {}

  /** Loaded on first use: the ops path itself never reads the registry. */
  private static final class Holder {
    static final Map<String, OpDef> BY_NAME = load();
    static final List<OpDef> ALL = Collections.unmodifiableList(new ArrayList<>(BY_NAME.values()));
  }

  /**
   * Every registered op definition: core's, then each provider's, in order.
   *
   * @throws IllegalStateException (on first use) if two definitions share a name
   */
  public static List<OpDef> definitions() {
    return Holder.ALL;
  }

  /** The definition named {@code name}, if one is registered. */
  public static Optional<OpDef> find(String name) {
    return Optional.ofNullable(Holder.BY_NAME.get(name));
  }

  private static Map<String, OpDef> load() {
    return load(ServiceLoader.load(OpDefinitions.class));
  }

  /** Core's definitions, then each provider's, by name in that order; a name defined twice fails. */
  static Map<String, OpDef> load(Iterable<OpDefinitions> providers) {
    Map<String, OpDef> byName = new LinkedHashMap<>();
    Map<String, String> source = new LinkedHashMap<>();
    add(byName, source, "ember-core", CoreOps.definitions());
    for (OpDefinitions provider : providers) {
      add(byName, source, provider.getClass().getName(), provider.definitions());
    }
    return byName;
  }

  private static void add(Map<String, OpDef> byName, Map<String, String> source, String from, List<OpDef> defs) {
    for (OpDef d : defs) {
      String before = source.putIfAbsent(d.name(), from);
      if (before != null) {
        throw new IllegalStateException("op " + d.name() + " is defined twice: by " + before + " and by " + from);
      }
      byName.put(d.name(), d);
    }
  }
}
