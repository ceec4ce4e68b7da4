package dev.ember.optim;

import java.util.List;
import java.util.Map;

/**
 * AdamW (Loshchilov and Hutter, https://arxiv.org/abs/1711.05101), as {@code torch.optim.AdamW}:
 * Adam whose weight decay shrinks the parameters directly, {@code p = p * (1 - lr * weight_decay)},
 * before the Adam update, instead of adding an L2 term to the gradient.
 * Options (defaults): {@code lr} (1e-3), {@code betas} ((0.9, 0.999)), {@code eps} (1e-8),
 * {@code weight_decay} (1e-2), {@code amsgrad} (false), {@code maximize} (false).
 * <pre>{@code
 * var opt = new AdamW(List.of(
 *     ParamGroup.of(weights),
 *     ParamGroup.of(biases).set("weight_decay", 0.0)), Map.of("lr", 3e-4, "betas", new double[] {0.9, 0.95}));
 * }</pre>
 */
public final class AdamW extends Adam {
  /** AdamW with learning rate {@code lr} and the other defaults (weight_decay 0.01). */
  public AdamW(List<?> params, double lr) {
    this(params, Map.of("lr", lr));
  }

  /** AdamW with options overriding the defaults. */
  public AdamW(List<?> params, Map<String, ?> hyper) {
    super("AdamW", params, hyper, 1e-2, true);
  }
}
