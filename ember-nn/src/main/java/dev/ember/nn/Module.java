package dev.ember.nn;

import dev.ember.autograd.Grad;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Base class of every layer and model, as PyTorch's {@code nn.Module}: parameters, buffers and
 * child modules registered under names, in registration order, so that every traversal
 * ({@link #namedParameters()}, {@link #stateDict()}, the printed tree) is deterministic and the
 * dotted names ({@code features.0.weight}) match PyTorch's for the same structure.
 *
 * <p>Parameters are looked up by name ({@link #param(String)}) rather than cached in fields, so
 * {@link #to(DType)} can replace them and {@link #loadStateDict(Map, boolean)} can copy into them
 * without a layer holding a stale reference.
 *
 * <p>Single-input modules override {@link #forward(Tensor)}; modules with several inputs (for
 * example {@link Bilinear}) add their own {@code forward} overloads. Containers run their children
 * with {@link #call(Tensor)}, PyTorch's {@code module(x)}, so that {@link ForwardHook}s see every
 * layer.
 */
public abstract class Module {
  private final LinkedHashMap<String, Tensor> params = new LinkedHashMap<>();
  private final LinkedHashMap<String, Tensor> buffers = new LinkedHashMap<>();
  private final Set<String> nonPersistent = new TreeSet<>();
  private final LinkedHashMap<String, Module> children = new LinkedHashMap<>();
  /**
   * Tensors computed from parameters and buffers on every read (pruning's {@code weight = weight_orig * weight_mask},
   * as PyTorch's parametrizations): neither parameters nor state, looked up by {@link #param(String)}. Null until one
   * is set.
   */
  private LinkedHashMap<String, Supplier<Tensor>> computed;
  private boolean training = true;
  /**
   * The forward hooks in registration order, null when none (a call of a module without hooks costs one field read).
   * Never mutated: registering or removing one swaps in a new array under this module's lock, so a call on one thread
   * reads a whole list while another thread registers or removes a hook (a test-set tap does, from a loader thread).
   */
  private volatile ForwardHook[] forwardHooks;
  /** Whether {@link #call} runs the forward through {@link dev.ember.autograd.Checkpointing} ({@link #checkpoint}). */
  private boolean checkpointed;
  /**
   * Counts the changes to any module's parameters, buffers or children (registration, removal, replacement,
   * {@link #to(DType)}): a traversal cached under an older count is stale. One counter for all modules, because a
   * module does not know its parents; modules are built before training, so the caches hold during a run.
   */
  private static final java.util.concurrent.atomic.AtomicLong STRUCTURE = new java.util.concurrent.atomic.AtomicLong();
  /** {@link #namedModules()}, {@link #namedParameters()} and {@link #namedBuffers()} as of {@link #STRUCTURE}'s count. */
  private Traversal traversal;

  /** One traversal of a module tree; the maps are never written after construction. */
  private record Traversal(long structure, LinkedHashMap<String, Module> modules, LinkedHashMap<String, Tensor> params,
      LinkedHashMap<String, Tensor> buffers) {}

  /** Marks every cached traversal stale (a module's parameters, buffers or children changed). */
  private static void changed() {
    STRUCTURE.incrementAndGet();
  }

  /**
   * A count that moves whenever any module's parameters, buffers or children change, a forward hook is registered
   * or removed, or {@link #to(DType)} / {@link #to(Device)} converts or moves a tensor: what a graph compiled from a
   * module holds (its tensors, the hooks it ran, their dtypes and devices) may be stale once it has moved, so a
   * compiled module traces again (ember-compile's guard). One counter for all modules, as for the traversals.
   */
  public static long changeCount() {
    return STRUCTURE.get();
  }

  /** The module's name in printed trees and messages; PyTorch's class name by default. */
  public String name() {
    return getClass().getSimpleName();
  }

  /**
   * Applies the module to one input. Modules that take several inputs do not override it and say
   * so when called.
   */
  public Tensor forward(Tensor input) {
    throw new IllegalArgumentException(name() + ".forward: this module does not take a single input; "
        + "call one of its forward(...) overloads");
  }

  /**
   * Applies the module to {@code input} through its forward hooks: the way containers run their
   * children (PyTorch's {@code module(x)}). Without hooks it is {@link #forward(Tensor)}.
   */
  public final Tensor call(Tensor input) {
    if (forwardHooks == null && !checkpointed) return forward(input);
    return call(Collections.singletonList(input), () -> forward(input));
  }

  /**
   * Runs {@code body}, which must be one of this module's {@code forward} overloads applied to
   * {@code inputs} (plus any masks or flags), through the forward hooks: the call form for modules
   * with several inputs, whose hooks see the tensor inputs and the main output.
   */
  public final Tensor call(List<Tensor> inputs, Supplier<Tensor> body) {
    if (checkpointed) body = checkpointed(inputs, body);
    ForwardHook[] hooks = forwardHooks; // read once: the hooks as of this call, whatever happens during it
    if (hooks == null) return body.get();
    if (dev.ember.autograd.Tracing.active()) { // a hook is Java code that a captured graph would not run again
      dev.ember.autograd.Tracing.unsupported("forward hook", name() + " has " + hooks.length + " forward hook"
          + (hooks.length == 1 ? "" : "s") + ", which a graph would not call");
    }
    for (ForwardHook h : hooks) h.beforeForward(this, inputs);
    Tensor out = body.get();
    for (ForwardHook h : hooks) h.afterForward(this, inputs, out);
    return out;
  }

  /**
   * Gradient checkpointing of this module's calls (PyTorch's per-block {@code checkpoint(block, x)}, as a memory
   * budget plans it): with {@code on}, every {@link #call} while recording runs the forward through
   * {@link dev.ember.autograd.Checkpointing#apply}, so backward keeps only the call's inputs and output and runs the
   * forward again when the gradient gets here (inside a {@link MemoryScope} the segment's other buffers go back to
   * the pool at once). It works on any module, such as the layers an encoder runs in its own loop, without
   * renaming parameters. Gradients are those of the plain call (see Checkpointing). Returns this module.
   */
  public Module checkpoint(boolean on) {
    this.checkpointed = on;
    return this;
  }

  /** Whether {@link #checkpoint(boolean)} is on. */
  public final boolean isCheckpointed() {
    return checkpointed;
  }

  private static Supplier<Tensor> checkpointed(List<Tensor> inputs, Supplier<Tensor> body) {
    if (!Grad.enabled()) return body;
    List<Tensor> given = new ArrayList<>();
    for (Tensor t : inputs) if (t != null) given.add(t);
    // the body reads the original inputs when it runs again: Checkpointing routes their gradients to them
    return () -> dev.ember.autograd.Checkpointing.apply(xs -> body.get(), given.toArray(new Tensor[0]));
  }

  /**
   * Registers a hook run around every {@link #call(Tensor)} of this module (not its descendants:
   * register on each of {@link #modules()} to see them all), after those registered before it.
   * Returns the handle that removes it.
   */
  public final HookHandle registerForwardHook(ForwardHook hook) {
    if (hook == null) throw new IllegalArgumentException(name() + ".registerForwardHook: hook is null");
    synchronized (this) {
      ForwardHook[] old = forwardHooks;
      ForwardHook[] now = old == null ? new ForwardHook[1] : java.util.Arrays.copyOf(old, old.length + 1);
      now[now.length - 1] = hook;
      forwardHooks = now;
    }
    changed(); // a compiled graph ran without it: trace again, so that the hook runs (and breaks the graph)
    return new HookHandle(() -> {
      synchronized (this) {
        ForwardHook[] old = forwardHooks;
        if (old == null) return;
        for (int i = 0; i < old.length; i++) {
          if (old[i] == hook) {
            ForwardHook[] now = new ForwardHook[old.length - 1];
            System.arraycopy(old, 0, now, 0, i);
            System.arraycopy(old, i + 1, now, i, old.length - 1 - i);
            forwardHooks = now.length == 0 ? null : now;
            changed();
            return;
          }
        }
      }
    });
  }

  /** The number of forward hooks registered on this module (not its descendants). */
  public final int forwardHookCount() {
    ForwardHook[] hooks = forwardHooks;
    return hooks == null ? 0 : hooks.length;
  }

  // ---------------------------------------------------------------------------------------------
  // Registration

  private void checkName(String kind, String name) {
    if (name == null || name.isEmpty() || name.contains(".")) {
      throw new IllegalArgumentException(name() + ": " + kind + " name must be non-empty and contain no '.', got '"
          + name + "'");
    }
    if (params.containsKey(name) || buffers.containsKey(name) || children.containsKey(name)
        || (computed != null && computed.containsKey(name))) {
      throw new IllegalArgumentException(name() + ": '" + name + "' is already registered");
    }
  }

  /**
   * Registers {@code value} as a trainable parameter (a leaf that requires grad) and returns it. A
   * null value registers an absent parameter (a layer built without bias): it is skipped by every
   * traversal, and {@link #param(String)} returns null for it. Public, as PyTorch's {@code register_parameter}, so that
   * model surgery ({@link dev.ember.nn.prune.Prune}) can re-register a tensor under another name.
   */
  public Tensor registerParameter(String name, Tensor value) {
    checkName("parameter", name);
    if (value == null) {
      params.put(name, null);
      changed();
      return null;
    }
    if (!value.dtype().isFloatingPoint()) {
      throw new IllegalArgumentException(name() + ": parameter '" + name + "' must be floating point, got " + value.dtype());
    }
    Tensor p = value.isLeaf() ? value : value.detach();
    p.requiresGrad(true);
    params.put(name, p);
    changed();
    return p;
  }

  /** Registers a buffer: state saved in {@link #stateDict()} (if persistent) but not trained. */
  public Tensor registerBuffer(String name, Tensor value, boolean persistent) {
    checkName("buffer", name);
    if (value == null) throw new IllegalArgumentException(name() + ": buffer '" + name + "' is null");
    buffers.put(name, value);
    changed();
    if (!persistent) nonPersistent.add(name);
    return value;
  }

  public Tensor registerBuffer(String name, Tensor value) {
    return registerBuffer(name, value, true);
  }

  /** Registers a child module and returns it. */
  protected <M extends Module> M registerModule(String name, M module) {
    checkName("module", name);
    if (module == null) throw new IllegalArgumentException(name() + ": module '" + name + "' is null");
    if (module == this) throw new IllegalArgumentException(name() + ": a module cannot contain itself");
    children.put(name, module);
    changed();
    return module;
  }

  /**
   * Unregisters the parameter {@code name} of this module and returns it (PyTorch's {@code del
   * module._parameters[name]}): model surgery, such as pruning, re-registers it under another name.
   */
  public final Tensor removeParameter(String name) {
    if (!params.containsKey(name)) {
      throw new IllegalArgumentException(name() + ".removeParameter: no parameter '" + name + "'; has " + params.keySet());
    }
    changed();
    return params.remove(name);
  }

  /** Unregisters the buffer {@code name} of this module and returns it (PyTorch's {@code del module._buffers[name]}). */
  public final Tensor removeBuffer(String name) {
    if (!buffers.containsKey(name)) {
      throw new IllegalArgumentException(name() + ".removeBuffer: no buffer '" + name + "'; has " + buffers.keySet());
    }
    nonPersistent.remove(name);
    changed();
    return buffers.remove(name);
  }

  /**
   * Makes {@code name} a tensor computed by {@code fn} on every {@link #param(String)} read, as PyTorch's
   * parametrizations: a pruned layer's {@code weight} is {@code weight_orig * weight_mask}, recomputed for each forward,
   * so the gradient reaches {@code weight_orig} masked. It is neither a parameter nor saved; the name must be free.
   */
  public final void setComputed(String name, Supplier<Tensor> fn) {
    if (fn == null) throw new IllegalArgumentException(name() + ".setComputed: function for '" + name + "' is null");
    checkName("computed tensor", name);
    if (computed == null) computed = new LinkedHashMap<>();
    computed.put(name, fn);
  }

  /** Removes the computed tensor {@code name} ({@link #setComputed}); the name is free again. */
  public final void removeComputed(String name) {
    if (!isComputed(name)) {
      throw new IllegalArgumentException(name() + ".removeComputed: no computed tensor '" + name + "'");
    }
    computed.remove(name);
    if (computed.isEmpty()) computed = null;
  }

  /** Whether {@code name} is a computed tensor of this module ({@link #setComputed}). */
  public final boolean isComputed(String name) {
    return computed != null && computed.containsKey(name);
  }

  /**
   * The parameter registered as {@code name} on this module (not its children), or the tensor computed under that
   * name ({@link #setComputed}, a pruned weight).
   */
  public Tensor param(String name) {
    Tensor p = params.get(name);
    if (p == null && !params.containsKey(name)) {
      if (computed != null) {
        Supplier<Tensor> fn = computed.get(name);
        if (fn != null) return fn.get();
      }
      throw new IllegalArgumentException(name() + ": no parameter '" + name + "'; has " + params.keySet());
    }
    return p;
  }

  /**
   * Whether this module has a parameter called {@code name} (it may be absent, like a disabled bias), or a tensor
   * computed under that name (a pruned weight).
   */
  public boolean hasParam(String name) {
    return params.get(name) != null || isComputed(name);
  }

  /** Whether this module has a buffer called {@code name}. */
  public boolean hasBuffer(String name) {
    return buffers.get(name) != null;
  }

  /** The buffer registered as {@code name} on this module. */
  public Tensor buffer(String name) {
    if (!buffers.containsKey(name)) {
      throw new IllegalArgumentException(name() + ": no buffer '" + name + "'; has " + buffers.keySet());
    }
    return buffers.get(name);
  }

  /** Replaces a buffer's tensor (running statistics are updated this way or in place). */
  protected void setBuffer(String name, Tensor value) {
    if (!buffers.containsKey(name)) throw new IllegalArgumentException(name() + ": no buffer '" + name + "'");
    buffers.put(name, value);
    changed();
  }

  /** The child registered as {@code name}. */
  public Module child(String name) {
    Module m = children.get(name);
    if (m == null) throw new IllegalArgumentException(name() + ": no child module '" + name + "'; has " + children.keySet());
    return m;
  }

  /**
   * Puts {@code replacement} in the place of the existing child {@code name} (same position in the traversal order)
   * and returns the child it replaced: model surgery such as {@code Quantize.dynamic} swapping each Linear for its
   * quantized version, as PyTorch's {@code setattr(parent, name, new_module)}.
   */
  public final Module replaceChild(String name, Module replacement) {
    Module old = child(name);
    if (replacement == null) throw new IllegalArgumentException(name() + ": replacement for child '" + name + "' is null");
    if (replacement == this) throw new IllegalArgumentException(name() + ": a module cannot contain itself");
    children.put(name, replacement);
    changed();
    return old;
  }

  // ---------------------------------------------------------------------------------------------
  // Traversal

  /** Direct children in registration order. */
  public Map<String, Module> namedChildren() {
    return Collections.unmodifiableMap(children);
  }

  public List<Module> children() {
    return List.copyOf(children.values());
  }

  /** This module and every descendant, pre-order, each once, with dotted names ("" for this one). */
  public LinkedHashMap<String, Module> namedModules() {
    return new LinkedHashMap<>(traversal().modules());
  }

  /**
   * The tree's modules, parameters and buffers by dotted name, walked once per change of any module's structure: a
   * training step reads them (memory accounting, gradient checks), and a walk joins strings and hashes them.
   */
  private Traversal traversal() {
    long structure = STRUCTURE.get();
    Traversal t = traversal;
    if (t != null && t.structure() == structure) return t;
    t = walk(structure);
    traversal = t;
    return t;
  }

  private Traversal walk(long structure) {
    LinkedHashMap<String, Module> modules = new LinkedHashMap<>();
    collectModules("", this, modules, Collections.newSetFromMap(new IdentityHashMap<>()));
    LinkedHashMap<String, Tensor> params = new LinkedHashMap<>();
    Set<Tensor> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    LinkedHashMap<String, Tensor> buffers = new LinkedHashMap<>();
    for (var e : modules.entrySet()) {
      for (var p : e.getValue().params.entrySet()) {
        if (p.getValue() != null && seen.add(p.getValue())) params.put(join(e.getKey(), p.getKey()), p.getValue());
      }
      for (var b : e.getValue().buffers.entrySet()) {
        if (b.getValue() != null) buffers.put(join(e.getKey(), b.getKey()), b.getValue());
      }
    }
    return new Traversal(structure, modules, params, buffers);
  }

  private static void collectModules(String prefix, Module m, Map<String, Module> out, Set<Module> seen) {
    if (!seen.add(m)) return;
    out.put(prefix, m);
    for (var e : m.children.entrySet()) collectModules(join(prefix, e.getKey()), e.getValue(), out, seen);
  }

  public List<Module> modules() {
    return new ArrayList<>(traversal().modules().values());
  }

  private static String join(String prefix, String name) {
    return prefix.isEmpty() ? name : prefix + "." + name;
  }

  /**
   * Every parameter with its dotted name, in PyTorch's order (each module's own parameters, then
   * its children's, pre-order). A tensor shared by two modules appears once, under its first name.
   */
  public LinkedHashMap<String, Tensor> namedParameters() {
    return new LinkedHashMap<>(traversal().params());
  }

  public List<Tensor> parameters() {
    return new ArrayList<>(traversal().params().values());
  }

  /** Every buffer with its dotted name, in the same order as parameters. */
  public LinkedHashMap<String, Tensor> namedBuffers() {
    return new LinkedHashMap<>(traversal().buffers());
  }

  /** Total number of elements over all parameters (optionally only the trainable ones). */
  public long numParameters(boolean trainableOnly) {
    long n = 0;
    for (Tensor p : parameters()) if (!trainableOnly || p.requiresGrad()) n += p.numel();
    return n;
  }

  // ---------------------------------------------------------------------------------------------
  // Mode, gradients, freezing

  /** Sets training mode on this module and every descendant; returns this. */
  public Module train(boolean mode) {
    for (Module m : modules()) m.training = mode;
    return this;
  }

  public Module train() {
    return train(true);
  }

  public Module eval() {
    return train(false);
  }

  public boolean isTraining() {
    return training;
  }

  /** Clears the gradients of every parameter (sets them to null, PyTorch's default). */
  public void zeroGrad() {
    zeroGrad(true);
  }

  /**
   * Clears gradients: {@code setToNull} drops them, otherwise they are filled with zeros. Inside a
   * {@link MemoryScope} dropped gradients go back to the pool ({@link MemoryScope#recycle}).
   */
  public void zeroGrad(boolean setToNull) {
    for (Tensor p : parameters()) {
      Tensor grad = p.grad();
      if (grad == null) continue;
      if (setToNull) {
        p.setGrad(null);
        MemoryScope.recycle(grad);
      } else {
        try (Grad ignored = Grad.off()) {
          p.grad().zero_();
        }
      }
    }
  }

  /** Freezes ({@code false}) or unfreezes every parameter of this subtree; returns this. */
  public Module requiresGrad(boolean flag) {
    for (Tensor p : parameters()) p.requiresGrad(flag);
    return this;
  }

  /** Calls {@code fn} on every descendant and then on this module (children first, as PyTorch). */
  public Module apply(Consumer<Module> fn) {
    for (Module c : children.values()) c.apply(fn);
    fn.accept(this);
    return this;
  }

  /**
   * Converts every floating-point parameter and buffer of the subtree to {@code dtype} (float64 for
   * gradient checks, say), in place as PyTorch's {@code model.to(dtype)}: each parameter keeps its identity (its
   * data is replaced, {@link Tensor#setData}), so an optimizer built before the conversion updates the converted
   * tensors, and a gradient is converted with its parameter.
   */
  public Module to(DType dtype) {
    if (!dtype.isFloatingPoint()) throw new IllegalArgumentException(name() + ".to: parameters must stay floating point, got " + dtype);
    try (Grad ignored = Grad.off()) {
      for (Module m : modules()) {
        for (Tensor p : m.params.values()) {
          if (p == null || p.dtype() == dtype) continue;
          p.setData(p.detach().to(dtype));
          changed();
        }
        for (var e : m.buffers.entrySet()) {
          Tensor b = e.getValue();
          if (b == null || !b.dtype().isFloatingPoint() || b.dtype() == dtype) continue;
          if (b.isLeaf()) b.setData(b.detach().to(dtype));
          else e.setValue(b.detach().to(dtype));
          changed();
        }
      }
    }
    return this;
  }

  /**
   * Moves every parameter and buffer of the subtree to {@code device}, in place: each keeps its identity (its data
   * is replaced, {@link Tensor#setData}), so an optimizer built before or after the move holds the same tensors,
   * and a gradient moves with its parameter. As PyTorch's {@code model.to(device)}.
   */
  public Module to(Device device) {
    if (device == null) throw new IllegalArgumentException(name() + ".to: device is null");
    try (Grad ignored = Grad.off()) {
      for (Module m : modules()) {
        for (Tensor p : m.params.values()) {
          if (p == null || p.device() == device) continue;
          p.setData(p.detach().to(device));
          changed();
        }
        for (var e : m.buffers.entrySet()) {
          Tensor b = e.getValue();
          if (b == null || b.device() == device) continue;
          if (b.isLeaf()) b.setData(b.detach().to(device));
          else e.setValue(b.detach().to(device));
          changed();
        }
      }
    }
    return this;
  }

  /**
   * The device of this module's parameters and buffers (PyTorch reads {@code next(model.parameters()).device});
   * the CPU for a module that has none.
   *
   * @throws IllegalStateException if they are on more than one device, naming two of them
   */
  public Device device() {
    Device found = null;
    String where = null;
    for (var e : namedModules().entrySet()) {
      List<Map.Entry<String, Tensor>> all = new ArrayList<>(e.getValue().params.entrySet());
      all.addAll(e.getValue().buffers.entrySet());
      for (var t : all) {
        if (t.getValue() == null) continue;
        String n = join(e.getKey(), t.getKey());
        if (found == null) {
          found = t.getValue().device();
          where = n;
        } else if (t.getValue().device() != found) {
          throw new IllegalStateException(name() + ".device: parameters and buffers are on more than one device ("
              + where + " on " + found + ", " + n + " on " + t.getValue().device() + "); hint: model.to(device)");
        }
      }
    }
    return found == null ? Device.CPU : found;
  }

  // ---------------------------------------------------------------------------------------------
  // State dict

  /**
   * Parameters and persistent buffers by dotted name, detached (they share storage with the model:
   * copy them to keep a snapshot).
   */
  public LinkedHashMap<String, Tensor> stateDict() {
    LinkedHashMap<String, Tensor> out = new LinkedHashMap<>();
    for (var e : namedModules().entrySet()) {
      Module m = e.getValue();
      for (var p : m.params.entrySet()) {
        if (p.getValue() != null) out.put(join(e.getKey(), p.getKey()), p.getValue().detach());
      }
      for (var b : m.buffers.entrySet()) {
        if (b.getValue() != null && !m.nonPersistent.contains(b.getKey())) {
          out.put(join(e.getKey(), b.getKey()), b.getValue().detach());
        }
      }
    }
    return out;
  }

  /** Keys that {@link #loadStateDict(Map, boolean)} did not match. */
  public record LoadResult(List<String> missingKeys, List<String> unexpectedKeys) {}

  /** {@link #loadStateDict(Map, boolean)} with {@code strict = true}. */
  public LoadResult loadStateDict(Map<String, Tensor> state) {
    return loadStateDict(state, true);
  }

  /**
   * Copies {@code state} into this model's parameters and buffers, in place and without recording
   * on the tape; values are converted to each target's dtype. A shape mismatch is always an error;
   * missing and unexpected keys are errors when {@code strict}, else returned. Nothing is copied
   * unless every check passes.
   */
  public LoadResult loadStateDict(Map<String, Tensor> state, boolean strict) {
    LinkedHashMap<String, Tensor> own = stateDict();
    List<String> missing = new ArrayList<>();
    List<String> unexpected = new ArrayList<>();
    List<String> misShaped = new ArrayList<>();
    for (var e : own.entrySet()) {
      Tensor src = state.get(e.getKey());
      if (src == null) {
        missing.add(e.getKey());
      } else if (!Arrays.equals(src.shape(), e.getValue().shape())) {
        misShaped.add(e.getKey() + ": checkpoint " + Arrays.toString(src.shape()) + " vs model "
            + Arrays.toString(e.getValue().shape()));
      }
    }
    for (String k : state.keySet()) if (!own.containsKey(k)) unexpected.add(k);
    if (!misShaped.isEmpty() || (strict && (!missing.isEmpty() || !unexpected.isEmpty()))) {
      StringBuilder sb = new StringBuilder(name() + ".loadStateDict: state dict does not match the model");
      if (!missing.isEmpty()) sb.append("\n  missing keys: ").append(missing);
      if (!unexpected.isEmpty()) sb.append("\n  unexpected keys: ").append(unexpected);
      if (!misShaped.isEmpty()) sb.append("\n  shape mismatch: ").append(String.join("; ", misShaped));
      throw new StateDictException(sb.toString(), missing, unexpected, misShaped);
    }
    for (var e : namedModules().entrySet()) e.getValue().checkState(e.getKey().isEmpty() ? "" : e.getKey() + ".", state);
    try (Grad ignored = Grad.off()) {
      for (var e : own.entrySet()) {
        Tensor src = state.get(e.getKey());
        if (src != null) e.getValue().copy_(src.dtype() == e.getValue().dtype() ? src : src.to(e.getValue().dtype()));
      }
    }
    return new LoadResult(List.copyOf(missing), List.copyOf(unexpected));
  }

  /**
   * Checks the values {@code state} holds for this module (keys {@code prefix + name}) before
   * {@link #loadStateDict(Map, boolean)} copies anything, which converts each value to its target's dtype and
   * checks only shapes: a module whose buffers must hold exact dtypes or valid values (a quantized layer's int8
   * weight, positive scales) overrides this and throws, naming the key. Default: nothing to check.
   */
  protected void checkState(String prefix, Map<String, Tensor> state) {}

  // ---------------------------------------------------------------------------------------------
  // Printing

  /** The text inside the parentheses of this module's line, e.g. {@code in_features=4, out_features=2, bias=true}. */
  protected String extraRepr() {
    return "";
  }

  /** A tree in PyTorch's {@code print(model)} format. */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder(name()).append('(');
    String extra = extraRepr();
    if (children.isEmpty()) return sb.append(extra).append(')').toString();
    sb.append('\n');
    if (!extra.isEmpty()) sb.append("  ").append(extra).append('\n');
    for (var e : children.entrySet()) {
      String child = e.getValue().toString().replace("\n", "\n  ");
      sb.append("  (").append(e.getKey()).append("): ").append(child).append('\n');
    }
    return sb.append(')').toString();
  }
}
