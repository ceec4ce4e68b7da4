package dev.ember.optim;

import dev.ember.autograd.Grad;
import dev.ember.backend.OptimizerKernels;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Deferred;
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
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Base of the optimizers: parameter groups with per-group hyperparameters, per-parameter state
 * held as tensors, {@link #step()}, {@link #zeroGrad(boolean)} and checkpoints in PyTorch's layout
 * ({@link #stateDict()}). Subclasses implement one fused update per parameter tensor.
 *
 * <p>Parameters are given either as a list of tensors (one group) or as a list of
 * {@link ParamGroup}s; options a group leaves unset come from the optimizer's defaults, which the
 * constructor's {@code hyper} map overrides. Each optimizer declares its options once as {@link Hyper}s
 * (name, check, typed read) with its defaults. Unknown option names and out-of-range values are
 * rejected with messages such as {@code AdamW: beta1 must be in [0, 1), got 1.2}.
 *
 * <p>The update rules run in the device's {@link OptimizerKernels}; the optimizers hold the options, the
 * state and the per-step coefficients.
 *
 * <p>Updates run under {@link Grad#off()}, write the parameters' storage in place and bump its
 * version counter, so a graph that saved a parameter before the step refuses to back-propagate.
 */
public abstract class Optimizer {
  private final String name;
  private final LinkedHashMap<String, Object> defaults;
  private final List<Hyper> options;
  private final List<ParamGroup> groups = new ArrayList<>();
  private final IdentityHashMap<Tensor, LinkedHashMap<String, Tensor>> state = new IdentityHashMap<>();
  private final List<Consumer<Optimizer>> stepPreHooks = new ArrayList<>();

  /**
   * An optimizer whose options are declared as {@link Hyper}s: {@link #validate} checks each of them.
   *
   * @param name the optimizer's name in messages ({@code "AdamW"})
   * @param params tensors (one group) or {@link ParamGroup}s
   * @param options every option this optimizer knows, with its default value, in checkpoint order
   * @param hyper overrides of the defaults (keys must be known)
   */
  protected Optimizer(String name, List<?> params, List<Hyper.Default> options, Map<String, ?> hyper) {
    this(name, params, defaultsOf(options), hyper, options.stream().map(Hyper.Default::hyper).toList());
  }

  /**
   * An optimizer with untyped options (a subclass then overrides {@link #validate} to check them).
   *
   * @param name the optimizer's name in messages ({@code "AdamW"})
   * @param params tensors (one group) or {@link ParamGroup}s
   * @param defaults every option this optimizer knows, with its default value
   * @param hyper overrides of the defaults (keys must be known)
   */
  protected Optimizer(String name, List<?> params, Map<String, Object> defaults, Map<String, ?> hyper) {
    this(name, params, defaults, hyper, List.of());
  }

  private Optimizer(String name, List<?> params, Map<String, Object> defaults, Map<String, ?> hyper,
      List<Hyper> options) {
    this.name = name;
    this.options = options;
    this.defaults = new LinkedHashMap<>();
    for (var e : defaults.entrySet()) this.defaults.put(e.getKey(), ParamGroup.normalize(e.getKey(), e.getValue()));
    for (var e : hyper.entrySet()) {
      checkKnown(e.getKey());
      this.defaults.put(e.getKey(), ParamGroup.normalize(e.getKey(), e.getValue()));
    }
    if (params == null || params.isEmpty()) throw new IllegalArgumentException(name + ": optimizer got an empty parameter list");
    if (params.stream().allMatch(p -> p instanceof Tensor)) {
      List<Tensor> ts = new ArrayList<>();
      for (Object p : params) ts.add((Tensor) p);
      addParamGroup(ParamGroup.of(ts));
    } else if (params.stream().allMatch(p -> p instanceof ParamGroup)) {
      for (Object g : params) addParamGroup((ParamGroup) g);
    } else {
      throw new IllegalArgumentException(name + ": params must be all tensors or all ParamGroups, got "
          + params.stream().map(p -> p == null ? "null" : p.getClass().getSimpleName()).distinct().toList());
    }
  }

  private static Map<String, Object> defaultsOf(List<Hyper.Default> options) {
    LinkedHashMap<String, Object> d = new LinkedHashMap<>();
    for (Hyper.Default o : options) d.put(o.hyper().name(), o.value());
    return d;
  }

  /** The optimizer's name, as used in messages. */
  public String name() {
    return name;
  }

  /** A copy of the default options (after the constructor's overrides). */
  public LinkedHashMap<String, Object> defaults() {
    LinkedHashMap<String, Object> out = new LinkedHashMap<>();
    for (var e : defaults.entrySet()) out.put(e.getKey(), e.getValue() instanceof double[] a ? a.clone() : e.getValue());
    return out;
  }

  /** The parameter groups, in order (the list is unmodifiable; the groups' options are live). */
  public List<ParamGroup> paramGroups() {
    return Collections.unmodifiableList(groups);
  }

  /** Adds a group; options it does not set come from the defaults. */
  public void addParamGroup(ParamGroup group) {
    for (String k : group.options().keySet()) checkKnown(k);
    IdentityHashMap<Tensor, Boolean> seen = new IdentityHashMap<>();
    for (ParamGroup g : groups) for (Tensor p : g.params()) seen.put(p, true);
    for (Tensor p : group.params()) {
      if (p == null) throw new IllegalArgumentException(name + ": a parameter group contains null");
      if (p.dtype() != DType.F32 && p.dtype() != DType.F64) {
        throw Check.fail(name, "can only optimize float32 or float64 tensors, got " + p.dtype().torchName(), "param", p);
      }
      if (!p.isLeaf()) {
        throw Check.fail(name, "can't optimize a non-leaf tensor", "param", p, "hint", "optimize the leaf, or detach() it and set requiresGrad(true)");
      }
      if (seen.put(p, true) != null) {
        throw Check.fail(name, "some parameters appear in more than one parameter group", "param", p);
      }
    }
    group.fillDefaults(defaults);
    validate(group);
    groups.add(group);
    for (Tensor p : group.params()) Deferred.consumeInBlocks(p, takesGradientsInBlocks());
  }

  /**
   * Whether {@link #update} takes each gradient in blocks (through its {@link OptimizerKernels} update), so that backward
   * may leave a wide float32 weight's gradient {@linkplain Deferred deferred} for it; declared on each parameter
   * as the optimizer takes it. True unless a subclass reads its gradients whole.
   */
  protected boolean takesGradientsInBlocks() {
    return true;
  }

  /**
   * Checks one group's options, each declared {@link Hyper} in order; throws {@link IllegalArgumentException}
   * naming the option and value. Subclasses add checks between options.
   */
  protected void validate(ParamGroup group) {
    Hyper.checkAll(name, options, group);
  }

  /**
   * Updates one parameter from its gradient in one fused pass.
   *
   * @param group the parameter's group (its options)
   * @param param the parameter, contiguous, written in place
   * @param grad its gradient, contiguous, same dtype and shape
   * @param state the parameter's state (empty on the first step); tensors put here are checkpointed
   */
  protected abstract void update(ParamGroup group, Tensor param, Tensor grad, Map<String, Tensor> state);

  /** Performs one optimization step on every parameter that has a gradient. */
  public void step() {
    for (Consumer<Optimizer> h : stepPreHooks) h.accept(this);
    try (Grad ignored = Grad.off()) {
      for (ParamGroup g : groups) stepGroup(g);
    }
  }

  /**
   * Re-evaluates the model with {@code closure} (with gradient recording on), then steps; returns
   * the closure's loss. The closure clears the gradients, computes the loss and calls backward.
   */
  public Tensor step(Supplier<Tensor> closure) {
    Tensor loss = null;
    if (closure != null) {
      try (Grad ignored = Grad.on()) {
        loss = closure.get();
      }
    }
    step();
    return loss;
  }

  /**
   * {@link #step()} with {@code gradients.get(p)} (by identity) as the gradient of each parameter p whose
   * {@code grad()} is null: the updates, and their bits, that {@code step()} makes after those gradients were set,
   * without storing them on the parameters (a compiled training step hands its gradients over this way, as
   * PyTorch's optimizer-in-backward does). A parameter with a gradient of its own steps on that one. Where
   * something may read {@code grad()} during the step (a step pre-hook, a subclass that overrides {@link #step()}
   * or {@link #stepGroup}), the gradients are set for the step and taken off again afterwards.
   */
  public void step(IdentityHashMap<Tensor, Tensor> gradients) {
    if (!stepPreHooks.isEmpty() || stepsOtherwise()) {
      List<Tensor> set = new ArrayList<>();
      try {
        for (ParamGroup g : groups) {
          for (Tensor p : g.params()) {
            Tensor grad = gradients.get(p);
            if (grad != null && p.grad() == null) {
              p.setGrad(grad);
              set.add(p);
            }
          }
        }
        step();
      } finally {
        for (Tensor p : set) p.setGrad(null);
      }
      return;
    }
    try (Grad ignored = Grad.off()) {
      for (ParamGroup g : groups) {
        for (Tensor p : g.params()) {
          Tensor grad = p.grad();
          if (grad == null) grad = gradients.get(p);
          if (grad != null) updateOne(g, p, grad);
        }
      }
    }
  }

  /** Whether this class overrides {@link #step()} or {@link #stepGroup} (computed once). */
  private Boolean stepsOtherwise;

  private boolean stepsOtherwise() {
    if (stepsOtherwise == null) {
      try {
        stepsOtherwise = getClass().getMethod("step").getDeclaringClass() != Optimizer.class
            || declaresStepGroup(getClass());
      } catch (NoSuchMethodException e) {
        throw new IllegalStateException(name + ": step() not found", e);
      }
    }
    return stepsOtherwise;
  }

  private static boolean declaresStepGroup(Class<?> c) {
    for (; c != Optimizer.class; c = c.getSuperclass()) {
      try {
        c.getDeclaredMethod("stepGroup", ParamGroup.class);
        return true;
      } catch (NoSuchMethodException e) {
        // not here: its superclass
      }
    }
    return false;
  }

  /** Steps one group: every parameter with a gradient, in order. */
  protected void stepGroup(ParamGroup g) {
    for (Tensor p : g.params()) {
      Tensor grad = p.grad();
      if (grad == null) continue;
      updateOne(g, p, grad);
    }
  }

  /** Runs {@link #update} on {@code p}, making param and grad contiguous and bumping versions. */
  protected final void updateOne(ParamGroup g, Tensor p, Tensor grad) {
    grad = checkedGrad(p, grad);
    LinkedHashMap<String, Tensor> st = state.get(p);
    if (st == null) {
      st = new LinkedHashMap<>();
      state.put(p, st);
    } else {
      followDevice(p, st);
    }
    if (p.isContiguous()) {
      update(g, p, grad, st);
    } else {
      updateCopy(g, p, grad, st);
    }
    p.storage().bumpVersion();
    for (Tensor s : st.values()) {
      s.storage().bumpVersion();
      MemoryScope.escape(s); // state made inside a MemoryScope (the first step) lives as long as the optimizer
    }
  }

  /** The model moved ({@link dev.ember.nn.Module#to(Device)}) after {@code p}'s state was made: the state follows it. */
  private static void followDevice(Tensor p, LinkedHashMap<String, Tensor> st) {
    Device device = p.device();
    for (Tensor s : st.values()) {
      if (s.dim() > 0 && s.device() != device) {
        for (var e : st.entrySet()) {
          if (e.getValue().dim() > 0 && e.getValue().device() != device) e.setValue(e.getValue().to(device));
        }
        return;
      }
    }
  }

  /** {@link #update} of a non-contiguous parameter: on a contiguous copy, written back (kept out of the hot path). */
  private void updateCopy(ParamGroup g, Tensor p, Tensor grad, Map<String, Tensor> st) {
    Tensor work = p.cloneContiguous();
    update(g, work, grad, st);
    p.copy_(work);
  }

  /** The gradient of {@code p}, validated and made contiguous. */
  protected final Tensor checkedGrad(Tensor p, Tensor grad) {
    if (!Arrays.equals(p.shapeRef(), grad.shapeRef())) {
      throw Check.fail(name, "gradient shape does not match the parameter's", "param", p, "grad", grad);
    }
    if (grad.device() != p.device()) {
      throw Check.fail(name, "gradient is on " + grad.device() + ", the parameter on " + p.device(), "param", p,
          "grad", grad);
    }
    if (grad.dtype() != p.dtype()) {
      throw Check.fail(name, "gradient dtype " + grad.dtype().torchName() + " differs from the parameter's "
          + p.dtype().torchName(), "param", p, "grad", grad);
    }
    return grad.contiguous();
  }

  /**
   * Clears gradients of all parameters: {@code setToNull} drops them, otherwise fills them with zeros.
   * Inside a {@link MemoryScope} the dropped gradients' buffers go back to the pool for the next
   * backward pass ({@link MemoryScope#recycle}): clone a gradient that must be read afterwards.
   */
  public void zeroGrad(boolean setToNull) {
    try (Grad ignored = Grad.off()) {
      for (ParamGroup g : groups) {
        for (Tensor p : g.params()) {
          Tensor grad = p.grad();
          if (grad == null) continue;
          if (setToNull) {
            p.setGrad(null);
            MemoryScope.recycle(grad);
          } else grad.zero_();
        }
      }
    }
  }

  /** Drops all gradients (PyTorch 2's default). */
  public void zeroGrad() {
    zeroGrad(true);
  }

  /**
   * Registers a hook run at the start of every {@link #step()}, before any update (for gradient
   * unscaling by a mixed-precision scaler, logging or clipping).
   */
  public void registerStepPreHook(Consumer<Optimizer> hook) {
    stepPreHooks.add(hook);
  }

  /** The live state of {@code param} (empty before its first update). */
  public Map<String, Tensor> state(Tensor param) {
    LinkedHashMap<String, Tensor> s = state.get(param);
    return s == null ? Map.of() : Collections.unmodifiableMap(s);
  }

  /** The live, mutable state map of {@code param} (subclasses). */
  protected final Map<String, Tensor> stateOf(Tensor param) {
    return state.computeIfAbsent(param, k -> new LinkedHashMap<>());
  }

  // ------------------------------------------------------------------ checkpoints

  /** A deep copy of the state and the groups' options in PyTorch's {@code state_dict()} layout. */
  public OptimizerState stateDict() {
    LinkedHashMap<Integer, Map<String, Tensor>> st = new LinkedHashMap<>();
    List<Map<String, Object>> pg = new ArrayList<>();
    int index = 0;
    try (Grad ignored = Grad.off()) {
      for (ParamGroup g : groups) {
        List<Integer> ids = new ArrayList<>();
        for (Tensor p : g.params()) {
          LinkedHashMap<String, Tensor> s = state.get(p);
          if (s != null && !s.isEmpty()) {
            LinkedHashMap<String, Tensor> copy = new LinkedHashMap<>();
            for (var e : s.entrySet()) copy.put(e.getKey(), e.getValue().cloneContiguous());
            st.put(index, copy);
          }
          ids.add(index++);
        }
        LinkedHashMap<String, Object> opts = g.options();
        opts.put("params", List.copyOf(ids));
        pg.add(opts);
      }
    }
    return new OptimizerState(st, pg);
  }

  /**
   * Restores state and options saved by {@link #stateDict()} (copied, so the argument stays
   * untouched). The groups must have the same sizes; state tensors must match their parameters'
   * shapes, floating state is cast to the parameter's dtype, 0-d entries (step counters) are kept.
   */
  public void loadStateDict(OptimizerState saved) {
    List<Map<String, Object>> sg = saved.paramGroups();
    if (sg.size() != groups.size()) {
      throw new IllegalArgumentException(name + ": loaded state dict has a different number of parameter groups ("
          + sg.size() + " vs " + groups.size() + ")");
    }
    List<Tensor> all = new ArrayList<>();
    for (int i = 0; i < groups.size(); i++) {
      Object ids = sg.get(i).get("params");
      int n = ids instanceof List<?> l ? l.size() : -1;
      if (n != groups.get(i).params().size()) {
        throw new IllegalArgumentException(name + ": loaded state dict contains a parameter group that doesn't match the size of"
            + " optimizer's group (group " + i + ": " + n + " vs " + groups.get(i).params().size() + " parameters)");
      }
      for (String k : sg.get(i).keySet()) if (!k.equals("params")) checkKnown(k);
    }
    IdentityHashMap<Tensor, LinkedHashMap<String, Tensor>> restored = new IdentityHashMap<>();
    for (int i = 0; i < groups.size(); i++) {
      List<?> ids = (List<?>) sg.get(i).get("params");
      List<Tensor> ps = groups.get(i).params();
      for (int j = 0; j < ps.size(); j++) {
        Map<String, Tensor> s = saved.state().get(((Number) ids.get(j)).intValue());
        if (s == null) continue;
        Tensor p = ps.get(j);
        LinkedHashMap<String, Tensor> copy = new LinkedHashMap<>();
        try (Grad ignored = Grad.off()) {
          for (var e : s.entrySet()) {
            Tensor t = e.getValue();
            if (t.dim() != 0 && !Arrays.equals(t.shapeRef(), p.shapeRef())) {
              throw Check.fail(name, "loaded state '" + e.getKey() + "' of parameter " + ids.get(j)
                  + " does not match the parameter's shape", "param", p, e.getKey(), t);
            }
            // step counters stay 0-d on the host; per-element state goes to the parameter's device
            Tensor c = t.dim() == 0 ? t.cpu().cloneContiguous() : t.to(p.dtype()).to(p.device()).cloneContiguous();
            copy.put(e.getKey(), c);
          }
        }
        restored.put(p, copy);
      }
      all.addAll(ps);
    }
    for (int i = 0; i < groups.size(); i++) {
      ParamGroup g = groups.get(i);
      for (var e : sg.get(i).entrySet()) if (!e.getKey().equals("params")) g.set(e.getKey(), e.getValue());
      validate(g);
    }
    state.clear();
    state.putAll(restored);
    for (LinkedHashMap<String, Tensor> m : restored.values()) for (Tensor t : m.values()) MemoryScope.escape(t);
  }

  // ------------------------------------------------------------------ validation helpers

  private void checkKnown(String key) {
    if (!defaults.containsKey(key)) {
      throw new IllegalArgumentException(name + ": unknown hyperparameter '" + key + "' (known: "
          + String.join(", ", defaults.keySet()) + ")");
    }
  }

  // ------------------------------------------------------------------ helpers for subclasses

  /** The fused update kernels of {@code param}'s device. */
  protected static OptimizerKernels kernels(Tensor param) {
    return param.device().backend().optimizer();
  }

  /** A zero tensor shaped and typed like {@code p}, on p's device. */
  protected static Tensor zerosLike(Tensor p) {
    return p.newZeros(p.shapeRef().clone());
  }

  /** Increments the 0-d float64 {@code step} counter in {@code state} (creating it at 0) and returns the new value. */
  protected static double incrementStep(Map<String, Tensor> state) {
    Tensor s = state.get("step");
    if (s == null) {
      s = Tensor.scalar(0.0, DType.F64);
      state.put("step", s);
    }
    double v = s.storage().getDouble(s.offset()) + 1;
    s.storage().setDouble(s.offset(), v);
    return v;
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder(name).append(" (");
    for (int i = 0; i < groups.size(); i++) {
      sb.append("\nParameter Group ").append(i);
      for (var e : groups.get(i).options().entrySet()) {
        Object v = e.getValue();
        String s = v instanceof double[] a ? "(" + a[0] + ", " + a[1] + ")" : v instanceof Boolean b ? (b ? "True" : "False") : String.valueOf(v);
        sb.append("\n    ").append(e.getKey()).append(": ").append(s);
      }
    }
    return sb.append("\n)").toString();
  }
}
