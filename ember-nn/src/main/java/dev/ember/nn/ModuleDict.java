package dev.ember.nn;

import java.util.Map;
import java.util.Set;

/** Modules registered under names of your choosing, in insertion order; no forward of its own. */
public class ModuleDict extends Module {
  public ModuleDict() {}

  public ModuleDict(Map<String, ? extends Module> modules) {
    modules.forEach(this::put);
  }

  public ModuleDict put(String name, Module m) {
    registerModule(name, m);
    return this;
  }

  public Module get(String name) {
    return child(name);
  }

  public boolean containsKey(String name) {
    return namedChildren().containsKey(name);
  }

  public Set<String> keySet() {
    return namedChildren().keySet();
  }

  public int size() {
    return namedChildren().size();
  }
}
