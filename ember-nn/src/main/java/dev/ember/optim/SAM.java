package dev.ember.optim;

import dev.ember.autograd.Grad;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Sharpness-aware minimization (Foret et al., https://arxiv.org/abs/2010.01412; adaptive variant,
 * ASAM, Kwon et al., https://arxiv.org/abs/2102.11600) wrapping any base optimizer, as the
 * reference {@code sam.py} (davda54/sam). With gradients g at the current point w:
 * <pre>
 *   norm = || (adaptive ? |w| : 1) * g ||_2          (over all parameters with gradients)
 *   e    = (adaptive ? w^2 : 1) * g * rho / (norm + 1e-12);   w = w + e      (ascent)
 *   recompute the gradients at w + e with the closure;    w = w - e restored; base step
 * </pre>
 * {@link #step(Supplier)} needs a closure that computes the loss and calls backward (the
 * gradients are cleared before it runs); a plain {@link #step()} is an error. The parameter groups
 * are the base optimizer's (a schedule on the SAM drives the base's learning rates); the checkpoint
 * is the base's state.
 * <pre>{@code
 * var sam = new SAM(new SGD(model.parameters(), Map.of("lr", 0.1, "momentum", 0.9)), 0.05, false);
 * loss(model, batch).backward();
 * sam.step(() -> { Tensor l = loss(model, batch); l.backward(); return l; });
 * sam.zeroGrad();
 * }</pre>
 */
public final class SAM extends Optimizer {
  private final Optimizer base;
  private final double rho;
  private final boolean adaptive;

  /**
   * @param base the optimizer taking the descent step (its parameters are SAM's)
   * @param rho the neighbourhood radius (0.05 in the paper; ~10x larger for adaptive)
   * @param adaptive scale the perturbation by |w| (ASAM)
   */
  public SAM(Optimizer base, double rho, boolean adaptive) {
    super("SAM", base.paramGroups(), base.defaults(), Map.of());
    if (!(rho >= 0)) throw new IllegalArgumentException("SAM: rho must be >= 0, got " + Hyper.fmt(rho));
    this.base = base;
    this.rho = rho;
    this.adaptive = adaptive;
  }

  /** SAM with rho = 0.05, not adaptive. */
  public SAM(Optimizer base) {
    this(base, 0.05, false);
  }

  /** The wrapped optimizer. */
  public Optimizer base() {
    return base;
  }

  @Override
  protected void validate(ParamGroup group) {
    // the groups are the base optimizer's, already validated by it
  }

  /** The descent update is the base optimizer's. */
  @Override
  protected void update(ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
    base.update(g, param, grad, state);
  }

  /** Always fails: SAM must re-evaluate the loss at the perturbed point. */
  @Override
  public void step() {
    throw new IllegalStateException("SAM: step() needs a closure that recomputes the loss and gradients;"
        + " call step(closure)");
  }

  /**
   * One SAM step: perturbs the parameters to the ascent point, clears the gradients, runs
   * {@code closure} (forward and backward, recording on), restores the parameters and lets the base
   * optimizer step with the new gradients. Returns the closure's loss (at the perturbed point).
   */
  @Override
  public Tensor step(Supplier<Tensor> closure) {
    if (closure == null) step();
    IdentityHashMap<Tensor, Tensor> perturbation = firstStep();
    zeroGrad(true);
    Tensor loss;
    try (Grad ignored = Grad.on()) {
      loss = closure.get();
    }
    try (Grad ignored = Grad.off()) {
      for (var e : perturbation.entrySet()) {
        e.getKey().copy_(e.getValue());
      }
    }
    base.step();
    return loss;
  }

  /** Moves every parameter with a gradient to w + e(w); returns the saved originals. */
  private IdentityHashMap<Tensor, Tensor> firstStep() {
    List<Tensor> withGrad = new ArrayList<>();
    for (ParamGroup g : paramGroups()) for (Tensor p : g.params()) if (p.grad() != null) withGrad.add(p);
    IdentityHashMap<Tensor, Tensor> saved = new IdentityHashMap<>();
    try (Grad ignored = Grad.off()) {
      double sq = 0;
      List<Tensor> grads = new ArrayList<>();
      for (Tensor p : withGrad) {
        Tensor g = checkedGrad(p, p.grad());
        grads.add(g);
        sq += kernels(p).samSquares(p.contiguous(), g, adaptive);
      }
      double scale = rho / (Math.sqrt(sq) + 1e-12);
      for (int i = 0; i < withGrad.size(); i++) {
        Tensor p = withGrad.get(i);
        saved.put(p, p.cloneContiguous());
        Tensor work = p.isContiguous() ? p : p.cloneContiguous();
        kernels(p).samAscend(work, grads.get(i), scale, adaptive);
        if (work != p) p.copy_(work);
        p.storage().bumpVersion();
      }
    }
    return saved;
  }

  @Override
  public OptimizerState stateDict() {
    return base.stateDict();
  }

  @Override
  public void loadStateDict(OptimizerState saved) {
    base.loadStateDict(saved);
  }

  @Override
  public Map<String, Tensor> state(Tensor param) {
    return base.state(param);
  }
}
