package dev.ember.optim;

import dev.ember.autograd.Grad;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Dynamic loss scaling for float16 training, with the semantics of PyTorch's {@code torch.cuda.amp.GradScaler}:
 * <pre>{@code
 * GradScaler scaler = new GradScaler();
 * for (Batch batch : loader) {
 *   optimizer.zeroGrad();
 *   Tensor loss;
 *   try (var ac = Autocast.enable(DType.F16)) {
 *     loss = F.crossEntropy(model.call(batch.input()), batch.target());
 *   }
 *   scaler.scale(loss).backward();
 *   scaler.unscale(optimizer);                    // optional: before clipping, which needs the true gradients
 *   GradClip.clipGradNorm(model.parameters(), 1.0);
 *   scaler.step(optimizer);                       // skipped when a gradient holds an Inf or a NaN
 *   scaler.update();
 * }
 * }</pre>
 *
 * <p>{@link #scale} multiplies the loss by the scale (initially 2<sup>16</sup>), so that small float16 gradients
 * do not flush to zero. {@link #unscale} multiplies each gradient of an optimizer by the float32 inverse of the
 * scale and records whether any element was Inf or NaN (checked before the multiply, one read of each gradient by
 * the backend's {@code allFinite}); {@link #step} unscales if that was not done yet and runs the optimizer only
 * when every gradient was finite. {@link #update} then halves the scale ({@code backoffFactor}) after an Inf/NaN
 * in any optimizer's gradients, or doubles it ({@code growthFactor}) after {@code growthInterval} clean steps in a
 * row, never past the float32 range. The scale is a float32 value and its products are rounded as PyTorch's
 * kernels round them, so a trajectory matches PyTorch's bit for bit (see GradScalerTest).
 *
 * <p>Per optimizer, each iteration goes {@code unscale} (at most once), then {@code step} (once), then
 * {@code update}; out of that order the calls throw {@link IllegalStateException} with PyTorch's messages. A
 * disabled scaler ({@code enabled = false}) returns the loss unchanged, steps every time, and its other methods do
 * nothing. {@link #stateDict()} / {@link #loadStateDict} hold the scale and growth tracker (PyTorch's keys), so a
 * checkpoint resumes exactly.
 */
public final class GradScaler {
  /** Where an optimizer stands in the current iteration. */
  private enum Stage { READY, UNSCALED, STEPPED }

  /** One optimizer's iteration: its stage and, once unscaled, whether a gradient was not finite. */
  private static final class OptState {
    Stage stage = Stage.READY;
    Boolean foundInf;
  }

  private static final String FIX =
      "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration.";

  private final boolean enabled;
  private double initScale;
  private double growthFactor;
  private double backoffFactor;
  private int growthInterval;
  private int initGrowthTracker;
  /** Whether {@link #scale} has run once: from then on {@link #scale} and {@link #growthTracker} are the state. */
  private boolean initialized;
  private float scale;
  private int growthTracker;
  private final IdentityHashMap<Optimizer, OptState> perOptimizer = new IdentityHashMap<>();

  /** An enabled scaler with PyTorch's defaults: scale 2^16, growth 2.0 every 2000 clean steps, backoff 0.5. */
  public GradScaler() {
    this(65536.0, 2.0, 0.5, 2000, true);
  }

  /** A scaler with the defaults, enabled or not (a disabled one is a pass-through). */
  public GradScaler(boolean enabled) {
    this(65536.0, 2.0, 0.5, 2000, enabled);
  }

  /**
   * A scaler with the given settings.
   *
   * @param initScale the first scale, a finite positive number (stored as float32)
   * @param growthFactor the scale's factor after {@code growthInterval} clean steps, &gt; 1
   * @param backoffFactor the scale's factor after a step with an Inf or a NaN, in (0, 1)
   * @param growthInterval clean steps in a row before the scale grows, &gt;= 1
   * @param enabled false for a scaler that does nothing (a pass-through)
   * @throws IllegalArgumentException naming the setting and its value when one is out of range
   */
  public GradScaler(double initScale, double growthFactor, double backoffFactor, int growthInterval, boolean enabled) {
    this.enabled = enabled;
    if (!(initScale > 0) || !Float.isFinite((float) initScale)) {
      throw new IllegalArgumentException("GradScaler: init_scale must be a positive float32 value, got " + initScale);
    }
    this.initScale = initScale;
    setGrowthFactor(growthFactor);
    setBackoffFactor(backoffFactor);
    setGrowthInterval(growthInterval);
  }

  /** Whether this scaler scales and checks (false: a pass-through). */
  public boolean isEnabled() {
    return enabled;
  }

  /**
   * {@code loss} multiplied by the current scale (a float16 or bfloat16 loss is first cast to float32, so the
   * scaled value cannot overflow the low-precision type); {@code loss} itself when disabled.
   */
  public Tensor scale(Tensor loss) {
    if (!enabled) return loss;
    if (loss == null) throw new IllegalArgumentException("GradScaler.scale: loss must not be null");
    lazyInit();
    Tensor l = loss.dtype().isHalf() ? loss.to(DType.F32) : loss;
    return l.mul(scale);
  }

  /** {@link #scale(Tensor)} of each of {@code outputs}, in a new list. */
  public List<Tensor> scale(List<Tensor> outputs) {
    List<Tensor> out = new ArrayList<>(outputs.size());
    for (Tensor t : outputs) out.add(scale(t));
    return out;
  }

  /**
   * Divides ("unscales") every gradient of {@code optimizer}'s parameters by the scale, in place, and records
   * whether any was Inf or NaN: for clipping or inspecting true gradients between backward and {@link #step}.
   * Call it at most once per optimizer per iteration, after all gradients are accumulated.
   *
   * @throws IllegalStateException if called twice in an iteration, after {@link #step}, or before any {@link #scale}
   * @throws IllegalArgumentException if a gradient is float16 or bfloat16 (PyTorch refuses to unscale those)
   */
  public void unscale(Optimizer optimizer) {
    if (!enabled) return;
    checkInitialized("unscale");
    OptState st = perOptimizer.computeIfAbsent(optimizer, o -> new OptState());
    if (st.stage == Stage.UNSCALED) {
      throw new IllegalStateException("GradScaler.unscale: unscale() has already been called on this optimizer since the"
          + " last update()");
    }
    if (st.stage == Stage.STEPPED) throw new IllegalStateException("GradScaler.unscale: unscale() is being called after step()");
    float inv = (float) (1.0 / scale); // the float32 reciprocal of the float32 scale, as PyTorch's double().reciprocal().float()
    st.foundInf = unscaleGrads(optimizer, inv);
    st.stage = Stage.UNSCALED;
  }

  /** Checks each gradient for Inf/NaN, then multiplies it by {@code inv} (unless 1); true if any was not finite. */
  private static boolean unscaleGrads(Optimizer optimizer, float inv) {
    boolean found = false;
    try (Grad ignored = Grad.off()) {
      for (ParamGroup g : optimizer.paramGroups()) {
        for (Tensor p : g.params()) {
          Tensor grad = p.grad();
          if (grad == null) continue;
          if (grad.dtype().isHalf()) {
            throw Check.fail("GradScaler.unscale", "Attempting to unscale FP16 gradients (of dtype "
                + grad.dtype().torchName() + "); keep the parameters in float32", "grad", grad);
          }
          Tensor c = grad.isContiguous() ? grad : grad.contiguous();
          if (!found && !c.device().backend().allFinite(c)) found = true;
          if (inv != 1f) grad.mul_(inv);
        }
      }
    }
    return found;
  }

  /**
   * Unscales {@code optimizer}'s gradients if {@link #unscale} was not called this iteration, then runs
   * {@code optimizer.step()} unless a gradient held an Inf or a NaN. A disabled scaler always steps.
   *
   * @return whether the optimizer stepped
   * @throws IllegalStateException if called twice in an iteration or before any {@link #scale}
   */
  public boolean step(Optimizer optimizer) {
    if (!enabled) {
      optimizer.step();
      return true;
    }
    checkInitialized("step");
    OptState st = perOptimizer.computeIfAbsent(optimizer, o -> new OptState());
    if (st.stage == Stage.STEPPED) throw new IllegalStateException("GradScaler.step: step() has already been called since the last update()");
    if (st.stage == Stage.READY) unscale(optimizer);
    boolean stepped = !st.foundInf;
    if (stepped) optimizer.step();
    st.stage = Stage.STEPPED;
    return stepped;
  }

  /**
   * Whether the gradients of {@code optimizer} held an Inf or a NaN in this iteration: null before they were
   * unscaled (by {@link #unscale} or {@link #step}), and after {@link #update}.
   */
  public Boolean foundInf(Optimizer optimizer) {
    OptState st = perOptimizer.get(optimizer);
    return st == null ? null : st.foundInf;
  }

  /**
   * Updates the scale at the end of an iteration, after {@link #step} for every optimizer: times {@code
   * backoffFactor} (and the growth tracker reset) if any optimizer's gradients held an Inf or a NaN; otherwise
   * the tracker counts one more clean step and, on reaching {@code growthInterval}, the scale is multiplied by
   * {@code growthFactor} (kept when that would overflow float32) and the tracker reset.
   *
   * @throws IllegalStateException before any {@link #scale}, or when no optimizer was unscaled this iteration
   */
  public void update() {
    if (!enabled) return;
    checkInitialized("update");
    boolean any = false;
    boolean found = false;
    for (OptState st : perOptimizer.values()) {
      if (st.foundInf == null) continue;
      any = true;
      found |= st.foundInf;
    }
    if (!any) throw new IllegalStateException("GradScaler.update: No inf checks were recorded prior to update().");
    if (found) {
      scale = (float) (scale * backoffFactor); // the product in double, stored as float32 (the CUDA kernel's)
      growthTracker = 0;
    } else {
      int successful = growthTracker + 1;
      if (successful == growthInterval) {
        float grown = (float) (scale * growthFactor);
        if (Float.isFinite(grown)) scale = grown; // never grow past the float32 range to Inf
        growthTracker = 0;
      } else {
        growthTracker = successful;
      }
    }
    perOptimizer.clear();
  }

  /**
   * Ends the iteration with the scale set to {@code newScale} (rounded to float32) rather than computed; the growth
   * tracker is left as it is.
   *
   * @throws IllegalArgumentException if {@code newScale} is not positive or not finite in float32
   * @throws IllegalStateException before any {@link #scale}
   */
  public void update(double newScale) {
    if (!enabled) return;
    checkInitialized("update");
    if (!(newScale > 0) || !Float.isFinite((float) newScale)) {
      throw new IllegalArgumentException("GradScaler.update: new_scale must be a positive float32 value, got " + newScale);
    }
    scale = (float) newScale;
    perOptimizer.clear();
  }

  /** The current scale (before the first {@link #scale}, the initial one); 1.0 when disabled. */
  public double getScale() {
    if (!enabled) return 1.0;
    return initialized ? scale : initScale;
  }

  /** Clean steps in a row since the scale last changed by update (0 when disabled). */
  public int growthTracker() {
    if (!enabled) return 0;
    return initialized ? growthTracker : initGrowthTracker;
  }

  public double getGrowthFactor() {
    return growthFactor;
  }

  /** Sets the growth factor (&gt; 1). */
  public void setGrowthFactor(double factor) {
    if (!(factor > 1) || Double.isInfinite(factor)) {
      throw new IllegalArgumentException("GradScaler: growth_factor must be > 1.0, got " + factor);
    }
    this.growthFactor = factor;
  }

  public double getBackoffFactor() {
    return backoffFactor;
  }

  /** Sets the backoff factor (in (0, 1)). */
  public void setBackoffFactor(double factor) {
    if (!(factor > 0 && factor < 1)) {
      throw new IllegalArgumentException("GradScaler: backoff_factor must be in (0, 1), got " + factor);
    }
    this.backoffFactor = factor;
  }

  public int getGrowthInterval() {
    return growthInterval;
  }

  /** Sets the growth interval (&gt;= 1). */
  public void setGrowthInterval(int interval) {
    if (interval < 1) throw new IllegalArgumentException("GradScaler: growth_interval must be >= 1, got " + interval);
    this.growthInterval = interval;
  }

  /**
   * The scaler's state with PyTorch's keys: {@code scale} (a double holding the float32 scale), {@code
   * growth_factor}, {@code backoff_factor}, {@code growth_interval} and {@code _growth_tracker}; empty when
   * disabled. Take it after {@link #update}.
   */
  public Map<String, Object> stateDict() {
    LinkedHashMap<String, Object> s = new LinkedHashMap<>();
    if (!enabled) return s;
    s.put("scale", getScale());
    s.put("growth_factor", growthFactor);
    s.put("backoff_factor", backoffFactor);
    s.put("growth_interval", growthInterval);
    s.put("_growth_tracker", growthTracker());
    return s;
  }

  /**
   * Restores a {@link #stateDict()} (numbers of any boxed type); a no-op when disabled.
   *
   * @throws IllegalArgumentException if the map is empty (saved from a disabled scaler), misses a key or holds a
   *     value out of range
   */
  public void loadStateDict(Map<String, ?> state) {
    if (!enabled) return;
    if (state.isEmpty()) {
      throw new IllegalArgumentException("GradScaler.loadStateDict: The source state dict is empty, possibly because it"
          + " was saved from a disabled instance of GradScaler.");
    }
    double s = number(state, "scale").doubleValue();
    if (!(s > 0) || !Float.isFinite((float) s)) {
      throw new IllegalArgumentException("GradScaler.loadStateDict: scale must be a positive float32 value, got " + s);
    }
    double gf = number(state, "growth_factor").doubleValue();
    double bf = number(state, "backoff_factor").doubleValue();
    int gi = number(state, "growth_interval").intValue();
    int tracker = number(state, "_growth_tracker").intValue();
    if (tracker < 0) throw new IllegalArgumentException("GradScaler.loadStateDict: _growth_tracker must be >= 0, got " + tracker);
    setGrowthFactor(gf);
    setBackoffFactor(bf);
    setGrowthInterval(gi);
    initScale = s;
    initGrowthTracker = tracker;
    if (initialized) {
      scale = (float) s;
      growthTracker = tracker;
    }
  }

  private static Number number(Map<String, ?> state, String key) {
    if (!(state.get(key) instanceof Number n)) {
      throw new IllegalArgumentException("GradScaler.loadStateDict: '" + key + "' must be a number, got "
          + state.get(key) + " (keys: " + state.keySet() + ")");
    }
    return n;
  }

  private void lazyInit() {
    if (initialized) return;
    scale = (float) initScale;
    growthTracker = initGrowthTracker;
    initialized = true;
  }

  private void checkInitialized(String method) {
    if (!initialized) {
      throw new IllegalStateException("GradScaler." + method + ": Attempted " + method + " but the scale is not"
          + " initialized. " + FIX);
    }
  }

  @Override
  public String toString() {
    return enabled ? "GradScaler(scale=" + getScale() + ", growth_tracker=" + growthTracker() + ", growth_factor="
        + growthFactor + ", backoff_factor=" + backoffFactor + ", growth_interval=" + growthInterval + ")"
        : "GradScaler(enabled=false)";
  }
}
