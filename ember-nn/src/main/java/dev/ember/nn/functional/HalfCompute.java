package dev.ember.nn.functional;

import dev.ember.amp.Autocast;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.function.Function;

/**
 * How every nn op computes on BF16 and F16 tensors and under {@link Autocast}, in one place. Its BF16/F16 inputs are
 * widened to F32 (exactly), the op runs on them in F32 and its F32 result is rounded once to the half dtype, as
 * PyTorch's CPU kernels do (and as ember-core's op layer does for its own ops): no nn kernel ever sees a half
 * operand. The widening and the rounding are the differentiable {@code to(dtype)} op, so the gradient of a half input
 * comes back in its dtype.
 *
 * <p>An op calls {@link #run} (through {@link #like} or {@link #loss}) at its entry when {@link #applies}, passing
 * itself as the F32 op; the widened call finds no half input and takes the ordinary path. Under autocast:
 * <ul>
 *   <li>an op of {@link Autocast#LOWER_PRECISION} first casts its F32 inputs to the scope's dtype with
 *       {@link #lowered} (so its products are formed from low-precision operands), then computes as above and
 *       returns the low dtype;
 *   <li>an op of {@link Autocast#FLOAT32} widens its half inputs and returns the F32 result unrounded (what casting
 *       its inputs with {@link Autocast#inputs} and running in F32 gives);
 *   <li>the F32 computation itself runs with autocast off, so an op's inner core ops (a loss's mean, attention's
 *       matmuls) do not apply their own policies inside it.
 * </ul>
 */
final class HalfCompute {
  private HalfCompute() {}

  /** Whether any of {@code xs} (nulls allowed) is BF16 or F16. */
  static boolean any(Tensor... xs) {
    for (Tensor x : xs) {
      if (x != null && x.dtype().isHalf()) return true;
    }
    return false;
  }

  /** Whether an op with inputs {@code xs} goes through {@link #run}: a half input, or autocast on. */
  static boolean applies(Tensor... xs) {
    return Autocast.enabled() || any(xs);
  }

  /**
   * The inputs of LOWER_PRECISION op {@code op} as autocast gives them ({@link Autocast#inputs}): F32 ones cast to the
   * scope's dtype; {@code xs} itself when autocast is off (the off path allocates nothing).
   */
  static Tensor[] lowered(String op, Tensor... xs) {
    return Autocast.enabled() ? Autocast.inputs(op, xs) : xs;
  }

  /**
   * Runs {@code op} on {@code inputs} with every BF16/F16 one widened to F32, autocast off, and rounds the F32 result
   * to {@code half} (none when {@code half} is null: the result stays F32).
   */
  static Tensor run(DType half, Function<Tensor[], Tensor> op, Tensor... inputs) {
    Tensor y;
    try (Autocast off = Autocast.disable()) {
      y = op.apply(widened(inputs));
    }
    return round(y, half);
  }

  /**
   * {@link #run} for an op whose result has its primary input's dtype (every nn op but the losses): rounded to it
   * when it is half, unless autocast runs op {@code name} in F32.
   */
  static Tensor like(String name, Tensor primary, Function<Tensor[], Tensor> op, Tensor... inputs) {
    boolean f32 = primary.dtype() != DType.F32 && inF32(name);
    return run(primary.dtype().isHalf() && !f32 ? primary.dtype() : null, op, inputs);
  }

  /**
   * {@link #run} for a loss: the result has the half dtype when every floating operand has that one half dtype (as
   * torch's losses return bfloat16 for bfloat16 operands), and is F32 when a half operand meets an F32 one (torch's
   * type promotion) or when autocast runs loss {@code name} in F32.
   */
  static Tensor loss(String name, Function<Tensor[], Tensor> op, Tensor... inputs) {
    return run(inF32(name) ? null : common(inputs), op, inputs);
  }

  /**
   * Whether op {@code name}, whose (lowered) primary input is {@code primary}, hands its half operands to a kernel
   * family that reads them ({@code readsHalf}: the product accumulated in F32 and rounded once, as {@link #like}
   * computes it) instead of going through {@link #like}: a half primary whose result autocast keeps half.
   */
  static boolean direct(String name, Tensor primary, boolean readsHalf) {
    return readsHalf && primary.dtype().isHalf() && !inF32(name);
  }

  /**
   * Whether half and F32 operands of op {@code name} meet in F32 (autocast is on and runs it in F32): a norm's F32
   * weight with the BF16 output of a linear layer before it, which it must not refuse as a dtype mismatch.
   */
  static boolean mixesInF32(String name, Tensor a, Tensor b) {
    return inF32(name) && (a.dtype().isHalf() || a.dtype() == DType.F32) && (b.dtype().isHalf() || b.dtype() == DType.F32);
  }

  /** Whether autocast is on and op {@code name} is one of its {@link Autocast#FLOAT32} ops. */
  private static boolean inF32(String name) {
    return Autocast.enabled() && Autocast.policy(name) == Autocast.Policy.FLOAT32;
  }

  /** The one half dtype of all the floating operands, or null when they are not all of it. */
  static DType common(Tensor... xs) {
    DType half = null;
    for (Tensor x : xs) {
      if (x == null || !x.dtype().isFloatingPoint()) continue;
      if (!x.dtype().isHalf() || (half != null && half != x.dtype())) return null;
      half = x.dtype();
    }
    return half;
  }

  /**
   * Fails, naming the op, when a floating operand's dtype differs from {@code primary}'s: for the ops that, as
   * torch, take no mixed dtypes (convolutions, attention, the recurrent cells). {@code named} alternates names and
   * tensors (nulls skipped).
   */
  static void requireSame(String op, String primaryName, Tensor primary, Object... named) {
    for (int i = 0; i + 1 < named.length; i += 2) {
      if (!(named[i + 1] instanceof Tensor t) || !t.dtype().isFloatingPoint() || t.dtype() == primary.dtype()) {
        continue;
      }
      throw Check.fail(op, named[i] + " has dtype " + t.dtype().torchName() + ", " + primaryName + " has "
          + primary.dtype().torchName(), primaryName, primary, String.valueOf(named[i]), t,
          "hint", "convert with to(), or use Autocast to mix precisions");
    }
  }

  /** {@code t}'s F32 copy when it is BF16/F16, else {@code t} (integer targets and masks stay as they are). */
  static Tensor widen(Tensor t) {
    return t != null && t.dtype().isHalf() ? t.to(DType.F32) : t;
  }

  static Tensor[] widened(Tensor... xs) {
    Tensor[] w = new Tensor[xs.length];
    for (int i = 0; i < xs.length; i++) w[i] = widen(xs[i]);
    return w;
  }

  /** {@code y} rounded once to {@code half} when it is F32; {@code y} itself when half is null. */
  static Tensor round(Tensor y, DType half) {
    return half != null && y.dtype() == DType.F32 ? y.to(half) : y;
  }
}
