package dev.ember.optim;

import dev.ember.autograd.Grad;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Deferred;
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
 * constructor's {@code hyper} map overrides. Unknown option names and out-of-range values are
 * rejected with messages such as {@code AdamW: beta1 must be in [0, 1), got 1.2}.
 *
 * <p>Updates run under {@link Grad#off()}, write the parameters' storage in place and bump its
 * version counter, so a graph that saved a parameter before the step refuses to back-propagate.
 */
public abstract class Optimizer {
  private final String name;
  private final LinkedHashMap<String, Object> defaults;
  private final List<ParamGroup> groups = new ArrayList<>();
  private final IdentityHashMap<Tensor, LinkedHashMap<String, Tensor>> state = new IdentityHashMap<>();
  private final List<Consumer<Optimizer>> stepPreHooks = new ArrayList<>();

  /**
   * @param name the optimizer's name in messages ({@code "AdamW"})
   * @param params tensors (one group) or {@link ParamGroup}s
   * @param defaults every option this optimizer knows, with its default value
   * @param hyper overrides of the defaults (keys must be known)
   */
  protected Optimizer(String name, List<?> params, Map<String, Object> defaults, Map<String, ?> hyper) {
    this.name = name;
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
   * Whether {@link #update} takes each gradient in blocks (through {@code Kernels.forGradient}), so that backward
   * may leave a wide float32 weight's gradient {@linkplain Deferred deferred} for it; declared on each parameter
   * as the optimizer takes it. True unless a subclass reads its gradients whole.
   */
  protected boolean takesGradientsInBlocks() {
    return true;
  }

  /** Checks one group's options; throws {@link IllegalArgumentException} naming the option and value. */
  protected abstract void validate(ParamGroup group);

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
    LinkedHashMap<String, Tensor> st = state.computeIfAbsent(p, k -> new LinkedHashMap<>());
    if (p.isContiguous()) {
      update(g, p, grad, st);
    } else {
      Tensor work = p.cloneContiguous();
      update(g, work, grad, st);
      p.copy_(work);
    }
    p.storage().bumpVersion();
    for (Tensor s : st.values()) {
      s.storage().bumpVersion();
      MemoryScope.escape(s); // state made inside a MemoryScope (the first step) lives as long as the optimizer
    }
  }

  /** The gradient of {@code p}, validated and made contiguous. */
  protected final Tensor checkedGrad(Tensor p, Tensor grad) {
    if (!Arrays.equals(p.shapeRef(), grad.shapeRef())) {
      throw Check.fail(name, "gradient shape does not match the parameter's", "param", p, "grad", grad);
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
            Tensor c = t.dim() == 0 ? t.cloneContiguous() : t.to(p.dtype()).cloneContiguous();
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

  /** Fails unless option {@code key} is a number >= 0 (named {@code label} in the message). */
  protected final void requireNonNegative(ParamGroup g, String key, String label) {
    double v = number(g, key);
    if (!(v >= 0)) throw new IllegalArgumentException(name + ": " + label + " must be >= 0, got " + fmt(v));
  }

  /** Fails unless option {@code key} is a number > 0. */
  protected final void requirePositive(ParamGroup g, String key, String label) {
    double v = number(g, key);
    if (!(v > 0)) throw new IllegalArgumentException(name + ": " + label + " must be > 0, got " + fmt(v));
  }

  /** Fails unless {@code v} lies in [lo, hi) ({@code hiClosed} makes it [lo, hi]). */
  protected final void requireInRange(double v, String label, double lo, double hi, boolean hiClosed) {
    boolean ok = v >= lo && (hiClosed ? v <= hi : v < hi);
    if (!ok) {
      throw new IllegalArgumentException(name + ": " + label + " must be in [" + bound(lo) + ", " + bound(hi)
          + (hiClosed ? "]" : ")") + ", got " + fmt(v));
    }
  }

  /** Checks option {@code key} is a pair of betas each in [0, 1), named beta1 and beta2. */
  protected final void requireBetas(ParamGroup g, String key) {
    Object v = g.get(key);
    if (!(v instanceof double[] b) || b.length != 2) {
      throw new IllegalArgumentException(name + ": " + key + " must be a pair of numbers, got " + ParamGroup.show(v));
    }
    requireInRange(b[0], "beta1", 0, 1, false);
    requireInRange(b[1], "beta2", 0, 1, false);
  }

  /** Checks option {@code key} is a boolean. */
  protected final void requireBoolean(ParamGroup g, String key) {
    if (!(g.get(key) instanceof Boolean)) {
      throw new IllegalArgumentException(name + ": " + key + " must be a boolean, got " + ParamGroup.show(g.get(key)));
    }
  }

  /** Option {@code key} as a number, or a message naming it. */
  protected final double number(ParamGroup g, String key) {
    Object v = g.get(key);
    if (v instanceof Double d) return d;
    throw new IllegalArgumentException(name + ": " + key + " must be a number, got " + ParamGroup.show(v));
  }

  /** A range bound as written in a message: whole numbers without a fraction ([0, 1)). */
  private static String bound(double v) {
    return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
  }

  /** Formats a value like Python's repr of a float for whole numbers too (1.0, not 1). */
  static String fmt(double v) {
    return Double.toString(v);
  }

  // ------------------------------------------------------------------ helpers for subclasses

  /** A zero tensor shaped and typed like {@code p}. */
  protected static Tensor zerosLike(Tensor p) {
    return Tensor.zeros(p.dtype(), p.shapeRef().clone());
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
