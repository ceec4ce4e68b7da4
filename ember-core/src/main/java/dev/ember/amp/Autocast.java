package dev.ember.amp;

import dev.ember.autograd.Grad;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Automatic mixed precision for a scope, as PyTorch's {@code torch.autocast(device, dtype)}, with one op policy on
 * every device: the lists below follow torch's CUDA policy (softmax, norms, reductions, exp/log and the losses in
 * F32), which is stricter than torch 1.13's CPU lists (there softmax, layer_norm, sum, exp and the like keep bfloat16
 * inputs in bfloat16, and dot, outer and conv_transpose2d stay float32). An LSTM's outputs come back in the low
 * dtype (its cells are lowered; torch's CPU LSTM returns float32):
 * <pre>{@code
 * try (var ac = Autocast.enable(DType.BF16)) {
 *   Tensor logits = model.forward(x);          // linear/conv/matmul take BF16 inputs, accumulate in F32
 *   Tensor loss = F.crossEntropy(logits, y);   // losses, softmax, norms, reductions, exp/log run in F32
 * }
 * loss.backward();                             // parameters stay F32, so their gradients are F32
 * }</pre>
 *
 * <p>Inside the scope each op looks up its name in the two lists below (the only place they are written down):
 * <ul>
 *   <li>{@link #LOWER_PRECISION} ops cast their F32 inputs to the scope's dtype (BF16 or F16): their products are
 *       formed from low-precision operands, accumulated in F32, and returned in the low dtype.
 *   <li>{@link #FLOAT32} ops cast their BF16/F16 inputs to F32 and return F32: they are the numerically sensitive
 *       ones.
 *   <li>Every other op runs on the dtypes it is given; ops of two inputs promote as usual (BF16 with F32 is F32).
 * </ul>
 * F64 and integer tensors are never cast. The casts are ordinary differentiable {@code to(dtype)} ops, so the
 * gradient of a parameter used in low precision reaches it in the parameter's own dtype (F32: master weights).
 * Within a scope a leaf that requires grad (a parameter) is cast once per dtype and version and the cast reused,
 * so a weight shared by many time steps is converted once; the cache is dropped when the outermost scope closes.
 *
 * <p>Scopes are per thread and nest ({@link #disable()} opens one where autocast is off); each restores the state
 * it found when closed. The backward pass runs with autocast off, so gradients follow the dtypes of the forward.
 */
public final class Autocast implements AutoCloseable {
  /** Ops whose F32 inputs autocast casts to the low-precision dtype: the matmul class. */
  public static final Set<String> LOWER_PRECISION = Set.of(
      "matmul", "bmm", "addmm", "dot", "outer", "linear", "bilinear",
      "conv1d", "conv2d", "conv_transpose2d",
      "scaled_dot_product_attention", "lstm_cell", "gru_cell", "rnn_cell");

  /** Ops whose BF16/F16 inputs autocast casts to F32: numerically sensitive ones. */
  public static final Set<String> FLOAT32 = Set.of(
      // softmax family
      "softmax", "log_softmax", "logsumexp",
      // exponentials, logarithms, powers
      "exp", "expm1", "log", "log1p", "pow", "pow_scalar", "reciprocal", "rsqrt", "softplus",
      // reductions
      "sum", "mean", "var", "std", "prod", "norm", "cumsum",
      // normalization
      "layer_norm", "batch_norm", "group_norm", "rms_norm",
      // losses
      "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
      "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
      "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "focal_loss", "sigmoid_focal_loss",
      "dice_loss", "poly_loss");

  /** What autocast does to an op's floating inputs. */
  public enum Policy {
    /** Casts F32 inputs to the scope's low-precision dtype. */
    LOWER,
    /** Casts BF16/F16 inputs to F32. */
    FLOAT32,
    /** Leaves the inputs as they are. */
    UNCHANGED
  }

  private static final class State {
    DType dtype; // null when off
    int depth; // open scopes that enabled autocast
    final Map<Tensor, Tensor> cache = new IdentityHashMap<>();
    final Map<Tensor, Integer> cacheVersion = new IdentityHashMap<>();
  }

  private static final ThreadLocal<State> STATE = ThreadLocal.withInitial(State::new);

  private final State state;
  private final DType previous;
  private final boolean counts;
  private boolean closed;

  private Autocast(DType dtype) {
    state = STATE.get();
    previous = state.dtype;
    state.dtype = dtype;
    counts = dtype != null;
    if (counts) state.depth++;
  }

  /**
   * Enables autocast to {@code dtype} until the returned scope is closed.
   *
   * @throws IllegalArgumentException if {@code dtype} is not BF16 or F16
   */
  public static Autocast enable(DType dtype) {
    if (dtype == null || !dtype.isHalf()) {
      throw new IllegalArgumentException("Autocast.enable: the low-precision dtype must be BF16 or F16, got " + dtype);
    }
    return new Autocast(dtype);
  }

  /** Turns autocast off until the returned scope is closed (inside an enabled scope). */
  public static Autocast disable() {
    return new Autocast(null);
  }

  /** Whether autocast is on for this thread. */
  public static boolean enabled() {
    return STATE.get().dtype != null;
  }

  /** The low-precision dtype of the innermost enabled scope, or null when autocast is off. */
  public static DType dtype() {
    return STATE.get().dtype;
  }

  /** The policy of op {@code op} (its name in the op table, e.g. {@code "linear"}). */
  public static Policy policy(String op) {
    if (LOWER_PRECISION.contains(op)) return Policy.LOWER;
    if (FLOAT32.contains(op)) return Policy.FLOAT32;
    return Policy.UNCHANGED;
  }

  /**
   * Input {@code x} of op {@code op} as the op should see it under the current state: {@code x} itself when
   * autocast is off, when the op is in neither list, or when {@code x} is null, not floating-point or F64.
   */
  public static Tensor input(String op, Tensor x) {
    State s = STATE.get();
    if (s.dtype == null || x == null) return x;
    return cast(s, policy(op), x);
  }

  /** {@link #input} for each of {@code xs}, in a new array (nulls stay null). */
  public static Tensor[] inputs(String op, Tensor... xs) {
    State s = STATE.get();
    Tensor[] out = xs.clone();
    if (s.dtype == null) return out;
    Policy p = policy(op);
    for (int i = 0; i < out.length; i++) {
      if (out[i] != null) out[i] = cast(s, p, out[i]);
    }
    return out;
  }

  private static Tensor cast(State s, Policy p, Tensor x) {
    DType d = x.dtype();
    return switch (p) {
      case LOWER -> d == DType.F32 ? lower(s, x) : x;
      case FLOAT32 -> d.isHalf() ? x.to(DType.F32) : x;
      case UNCHANGED -> x;
    };
  }

  /** The cast of {@code x} to the scope's dtype; for a leaf that requires grad, cached per version. */
  private static Tensor lower(State s, Tensor x) {
    boolean cacheable = x.isLeaf() && x.requiresGrad() && Grad.enabled();
    if (!cacheable) return x.to(s.dtype);
    Tensor hit = s.cache.get(x);
    if (hit != null && hit.dtype() == s.dtype && s.cacheVersion.get(x) == x.version()) return hit;
    Tensor c = x.to(s.dtype);
    s.cache.put(x, c);
    s.cacheVersion.put(x, x.version());
    return c;
  }

  /** Number of parameter casts held in this thread's cache (for tests and memory accounting). */
  static int cachedCasts() {
    return STATE.get().cache.size();
  }

  /** Restores the state found when this scope opened; the outermost enabled scope also drops the cast cache. */
  @Override
  public void close() {
    if (closed) return;
    closed = true;
    state.dtype = previous;
    if (counts && --state.depth == 0) {
      state.cache.clear();
      state.cacheVersion.clear();
    }
  }
}
