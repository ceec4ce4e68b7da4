package dev.ember.nn.functional;

import static dev.ember.ops.DTypePolicy.FLOATING_ONLY;
import static dev.ember.ops.OpDef.of;
import static dev.ember.ops.Reads.INPUTS;
import static dev.ember.ops.Reads.INPUTS_AND_OUTPUT;
import static dev.ember.ops.Reads.NOTHING;

import dev.ember.ops.OpDef;
import dev.ember.ops.OpDefinitions;
import java.util.List;

/**
 * ember-nn's op definitions, contributed to {@link dev.ember.ops.Ops#definitions()} through {@link OpDefinitions}
 * (named in {@code META-INF/services/dev.ember.ops.OpDefinitions}); the nn op table has an entry for each.
 *
 * <p>Names are those the ops record on the autograd tape; interpolate records one per kernel
 * ({@code upsample_nearest1d}, {@code upsample_nearest2d}, {@code upsample_bilinear2d}). The losses other than
 * binary_cross_entropy(_with_logits) and cross_entropy, and the dropouts, record no node of their own: they are
 * composed of core ops, and what their backward reads is what those ops read. {@code embedding} is core's
 * definition (the nn function records under the same name). Every nn op takes floating-point tensors only and
 * computes in their dtype (BF16/F16 in F32, rounded once to the half dtype); arity counts every tensor argument,
 * optional ones (bias, weights, masks) included. Under {@link dev.ember.amp.Autocast} each follows the policy its
 * name has in {@code Autocast}'s lists.
 */
public final class NnOps implements OpDefinitions {
  /** For {@link java.util.ServiceLoader}. */
  public NnOps() {}

  private static final List<OpDef> DEFINITIONS = List.of(
      // convolution and padding (backward reads input and weight; pad only the recorded geometry)
      of("conv1d", 3, FLOATING_ONLY, INPUTS), of("conv2d", 3, FLOATING_ONLY, INPUTS),
      of("conv_transpose2d", 3, FLOATING_ONLY, INPUTS), of("pad", 1, FLOATING_ONLY, NOTHING),
      // pooling (max pooling reads the argmax it saved, not the input) and interpolation
      of("max_pool1d", 1, FLOATING_ONLY, NOTHING), of("max_pool2d", 1, FLOATING_ONLY, NOTHING),
      of("avg_pool1d", 1, FLOATING_ONLY, NOTHING), of("avg_pool2d", 1, FLOATING_ONLY, NOTHING),
      of("adaptive_avg_pool2d", 1, FLOATING_ONLY, NOTHING), of("adaptive_max_pool2d", 1, FLOATING_ONLY, NOTHING),
      of("upsample_nearest1d", 1, FLOATING_ONLY, NOTHING), of("upsample_nearest2d", 1, FLOATING_ONLY, NOTHING),
      of("upsample_bilinear2d", 1, FLOATING_ONLY, NOTHING),
      // normalization: input, running mean and var, weight, bias (backward reads the input and the saved stats)
      of("batch_norm", 5, FLOATING_ONLY, INPUTS), of("layer_norm", 3, FLOATING_ONLY, INPUTS),
      of("group_norm", 3, FLOATING_ONLY, INPUTS), of("rms_norm", 2, FLOATING_ONLY, INPUTS),
      // attention: q, k, v, mask
      of("scaled_dot_product_attention", 4, FLOATING_ONLY, INPUTS),
      // losses: those composed of core ops read what their parts read (mse's square reads input - target, not
      // the input); cross_entropy's own node reads the log-probabilities it saved, its weighted form the weights
      of("mse_loss", 2, FLOATING_ONLY, NOTHING), of("l1_loss", 2, FLOATING_ONLY, NOTHING),
      of("smooth_l1_loss", 2, FLOATING_ONLY, NOTHING), of("huber_loss", 2, FLOATING_ONLY, NOTHING),
      of("binary_cross_entropy", 3, FLOATING_ONLY, INPUTS),
      of("binary_cross_entropy_with_logits", 4, FLOATING_ONLY, INPUTS),
      of("cross_entropy", 3, FLOATING_ONLY, INPUTS), of("nll_loss", 3, FLOATING_ONLY, NOTHING),
      of("kl_div", 2, FLOATING_ONLY, INPUTS), of("cosine_embedding_loss", 3, FLOATING_ONLY, INPUTS),
      of("margin_ranking_loss", 3, FLOATING_ONLY, NOTHING), of("hinge_embedding_loss", 2, FLOATING_ONLY, NOTHING),
      of("triplet_margin_loss", 3, FLOATING_ONLY, NOTHING), of("sigmoid_focal_loss", 2, FLOATING_ONLY, INPUTS),
      of("focal_loss", 3, FLOATING_ONLY, NOTHING), of("dice_loss", 2, FLOATING_ONLY, NOTHING),
      of("poly_loss", 2, FLOATING_ONLY, NOTHING),
      // recurrent cells: lstm_cell's fused step takes gates and cell state; gru_cell and rnn_cell (input, hx, w_ih,
      // w_hh, b_ih, b_hh) and bilinear (input1, input2, weight, bias) are composed of core ops and read what they read
      of("lstm_cell", 2, FLOATING_ONLY, INPUTS), of("gru_cell", 6, FLOATING_ONLY, INPUTS),
      of("rnn_cell", 6, FLOATING_ONLY, INPUTS_AND_OUTPUT), of("bilinear", 4, FLOATING_ONLY, INPUTS),
      // whole-sequence layers (input, h0, [c0,] w_ih, w_hh, b_ih, b_hh): one node on the CPU, whose backward reads
      // the inputs and the gate activations it saved
      of("lstm", 7, FLOATING_ONLY, INPUTS), of("gru", 6, FLOATING_ONLY, INPUTS),
      // dropout: a product with a constant mask, whose backward reads the mask only (the identity in eval)
      of("dropout", 1, FLOATING_ONLY, NOTHING), of("dropout1d", 1, FLOATING_ONLY, NOTHING),
      of("dropout2d", 1, FLOATING_ONLY, NOTHING), of("alpha_dropout", 1, FLOATING_ONLY, NOTHING));

  @Override
  public List<OpDef> definitions() {
    return DEFINITIONS;
  }
}
