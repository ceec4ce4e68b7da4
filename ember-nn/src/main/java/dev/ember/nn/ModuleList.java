package dev.ember.nn;

import java.util.Iterator;
import java.util.List;

/** A list of modules registered as children "0", "1", ...; it has no forward of its own. */
public class ModuleList extends Module implements Iterable<Module> {
  private int count;

  public ModuleList(Module... modules) {
    for (Module m : modules) add(m);
  }

  public ModuleList(List<? extends Module> modules) {
    for (Module m : modules) add(m);
  }

  public ModuleList add(Module m) {
    registerModule(Integer.toString(count++), m);
    return this;
  }

  public Module get(int i) {
    if (i < 0) i += count;
    if (i < 0 || i >= count) throw new IndexOutOfBoundsException("ModuleList: index " + i + " out of range for " + count + " modules");
    return child(Integer.toString(i));
  }

  public int size() {
    return count;
  }

  @Override
  public Iterator<Module> iterator() {
    return children().iterator();
  }
}
