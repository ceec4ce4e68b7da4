package dev.ember.optim;

import dev.ember.autograd.Grad;
import dev.ember.nn.functional.Losses;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * SophiaG (Liu et al., "Sophia: A Scalable Stochastic Second-order Optimizer for Language Model
 * Pre-training", https://arxiv.org/abs/2305.14342), as the authors' {@code sophia.py}: a momentum
 * step preconditioned by an EMA of a diagonal Hessian estimate and clipped elementwise:
 * <pre>
 *   p = p * (1 - lr * weight_decay)
 *   m = beta1 * m + (1 - beta1) * g                       (g negated when maximize)
 *   p = p - lr * sign(m) * min(|m| / (rho * bs * h + 1e-15), 1)
 * </pre>
 * The Hessian EMA {@code h = beta2 * h + (1 - beta2) * g_hat^2} is refreshed every k steps by
 * {@link #updateHessian()} from the gradient {@code g_hat} of the Gauss-Newton-Bartlett estimator:
 * the loss against labels sampled from the model's own predictions ({@link #gnbLoss}). The batch
 * size {@code bs} (the reference's {@code step(bs=...)} argument) turns the per-example mean back
 * into the sum the estimator needs. The reference training loop, with {@code k = 10}:
 * <pre>{@code
 * var opt = new SophiaG(model.parameters(), Map.of("lr", 6e-4, "rho", 0.05, "weight_decay", 0.2, "bs", 480.0));
 * loss.backward(); opt.step(); opt.zeroGrad();
 * if (opt.hessianDue(10)) opt.updateHessian(() -> SophiaG.gnbLoss(model.forward(x), gen));
 * }</pre>
 * Options (defaults, the paper's GPT-2 settings): {@code lr} (1e-4), {@code betas} ((0.965, 0.99)),
 * {@code rho} (0.04), {@code weight_decay} (0.1), {@code bs} (5120, tokens per batch),
 * {@code maximize} (false). State: {@code step}, {@code exp_avg}, {@code hessian}.
 */
public final class SophiaG extends Optimizer {
  /** The clipping threshold rho, >= 0. */
  static final Hyper.Num RHO = Hyper.nonNegative("rho");
  /** The batch size the Hessian estimate was taken on, > 0. */
  static final Hyper.Num BS = Hyper.positive("bs");
  private static final List<Hyper.Default> OPTIONS = List.of(Hyper.LR.is(1e-4), Hyper.BETAS.is(0.965, 0.99),
      RHO.is(0.04), Hyper.WEIGHT_DECAY.is(0.1), BS.is(5120), Hyper.MAXIMIZE.is(false));

  /** SophiaG with learning rate {@code lr}. */
  public SophiaG(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** SophiaG with options overriding the defaults. */
  public SophiaG(List<?> params, Map<String, ?> hyper) {
    super("SophiaG", params, OPTIONS, hyper);
  }

  private static void init(Tensor p, Map<String, Tensor> state) {
    if (!state.containsKey("exp_avg")) {
      state.put("step", Tensor.scalar(0.0, DType.F64));
      state.put("exp_avg", zerosLike(p));
      state.put("hessian", zerosLike(p));
    }
  }

  /**
   * Whether the Hessian estimate is due after the step just taken, refreshing every {@code k} steps
   * (the reference refreshes after steps k, 2k, ...). Counts the steps of the first parameter with state.
   */
  public boolean hessianDue(int k) {
    if (k < 1) throw new IllegalArgumentException("SophiaG: hessian interval k must be >= 1, got " + k);
    for (ParamGroup g : paramGroups()) {
      for (Tensor p : g.params()) {
        Tensor s = state(p).get("step");
        if (s != null) {
          long steps = (long) s.item();
          return steps > 0 && steps % k == 0;
        }
      }
    }
    return false;
  }

  /** Folds the current gradients (of the sampled-label loss) into the Hessian EMA: h = beta2 h + (1 - beta2) g^2. */
  public void updateHessian() {
    try (Grad ignored = Grad.off()) {
      for (ParamGroup g : paramGroups()) {
        double b2 = Hyper.BETAS.second(g);
        for (Tensor param : g.params()) {
          if (param.grad() == null) continue;
          Tensor grad = checkedGrad(param, param.grad());
          Map<String, Tensor> state = stateOf(param);
          init(param, state);
          Tensor h = state.get("hessian");
          kernels(param).sophiaHessian(h, grad, b2);
          h.storage().bumpVersion();
        }
      }
    }
  }

  /**
   * The GNB refresh in one call: clears the gradients, back-propagates {@code sampledLoss} (evaluated
   * with recording on; typically {@link #gnbLoss}), folds the gradients into the Hessian EMA and
   * clears them again.
   */
  public void updateHessian(Supplier<Tensor> sampledLoss) {
    zeroGrad(true);
    try (Grad ignored = Grad.on()) {
      sampledLoss.get().backward();
    }
    updateHessian();
    zeroGrad(true);
  }

  /**
   * The Gauss-Newton-Bartlett loss: cross entropy of {@code logits} ([N, C]) against labels drawn
   * from {@code softmax(logits)} (detached), so its gradient's square estimates the Gauss-Newton diagonal.
   */
  public static Tensor gnbLoss(Tensor logits, Generator gen) {
    if (logits.dim() != 2) {
      throw dev.ember.tensor.Check.fail("SophiaG.gnbLoss", "logits must be [N, C], got rank " + logits.dim(), "logits", logits);
    }
    int n = logits.size(0), c = logits.size(1);
    double[] probs;
    try (Grad ignored = Grad.off()) {
      probs = logits.detach().to(DType.F64).softmax(1).toDoubleArray();
    }
    long[] labels = new long[n];
    for (int i = 0; i < n; i++) {
      double u = gen.nextDouble(), acc = 0;
      int y = c - 1;
      for (int j = 0; j < c; j++) {
        acc += probs[i * c + j];
        if (u < acc) {
          y = j;
          break;
        }
      }
      labels[i] = y;
    }
    return Losses.crossEntropy(logits, Tensor.of(labels, n));
  }

  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    init(param, state);
    incrementStep(state);
    double lr = Hyper.LR.of(g), b1 = Hyper.BETAS.first(g);
    double decay = 1 - lr * Hyper.WEIGHT_DECAY.of(g);
    double rhoBs = RHO.of(g) * BS.of(g);
    double sign = Hyper.MAXIMIZE.of(g) ? -1 : 1;
    kernels(param).sophia(param, grad, state.get("exp_avg"), state.get("hessian"), sign, decay, lr, b1, rhoBs);
  }
}
