package dev.ember.cuda.ops;

import dev.ember.ops.OpChecks.Tolerance;
import java.util.Map;
import java.util.Set;

/**
 * How far an op on {@code cuda:0} may be from the same op on the CPU, per op definition (an entry {@code
 * linear_nobias} is {@code linear}'s) and precision: the tolerances of
 * {@link CudaOpTableTest}, stated once here (issue #39: "tolerances for TF32/BF16 stated per op").
 *
 * <ul>
 *   <li><b>float32</b>: 1e-5 absolute and relative for every op. The GPU's exp, log, tanh and pow are within a few
 *       ulps of the CPU's, and its reductions and products sum in another order; at the table's sizes (tens of terms)
 *       both stay far inside 1e-5. Comparisons, selections, moves and integer results are exact.
 *   <li><b>TF32</b> ({@code allowTf32}, the products only: matmul and its variants, linear and its epilogues, addmm,
 *       bmm, dot, outer, the convolutions, bilinear, attention, the recurrent cells and layers): inputs rounded to 10
 *       mantissa bits (2^-11 relative each) before float32 accumulation, so 5e-3 absolute and relative at the
 *       table's sizes (tens of terms of O(1) products); 1e-2 for gradients, which are products of the products'
 *       gradients; 2e-2 for the recurrent ops, whose steps carry the difference along.
 *   <li><b>bfloat16</b>: inputs and results carry 8 significant bits, so one rounding is up to 2^-8 relative (one
 *       ulp is 2^-7 just above a power of two). Both sides compute in float32 and round once, so results differ by at
 *       most an ulp where the float32 values straddle a rounding boundary: 2e-2 absolute and relative (2.5 ulps);
 *       gradients, which round the upstream gradient and each partial product again, 4e-2. Ops that cancel large
 *       terms (variance, standard deviation, cumulative sums, log-sum-exp, vector norms, log-softmax, and the batch,
 *       layer, group and RMS norms, which divide by a standard deviation) 6e-2 absolute; the recurrent ops, which
 *       round every step's gates and state, 1e-1.
 * </ul>
 */
final class CudaTolerances {
  private CudaTolerances() {}

  /** The precisions an op is checked in. */
  enum Precision { F32, TF32, BF16 }

  /** The ops (by definition: an entry {@code conv2d:stride2} is conv2d's) that multiply on tensor cores in TF32. */
  static final Set<String> PRODUCTS = Set.of("matmul", "bmm", "addmm", "dot", "outer", "linear", "linear_epilogue",
      "conv1d", "conv2d", "conv_transpose2d", "bilinear", "scaled_dot_product_attention", "rnn_cell", "lstm_cell",
      "gru_cell", "lstm", "gru");

  /** Recurrent ops: each step's products feed the next step, so a rounding difference is carried along. */
  static final Set<String> RECURRENT = Set.of("rnn_cell", "lstm_cell", "gru_cell", "lstm", "gru");

  private static final Tolerance F32 = new Tolerance(1e-5, 1e-5);
  private static final Tolerance TF32_VALUES = new Tolerance(5e-3, 5e-3);
  private static final Tolerance TF32_GRADS = new Tolerance(1e-2, 1e-2);
  private static final Tolerance BF16_VALUES = new Tolerance(2e-2, 2e-2);
  private static final Tolerance BF16_GRADS = new Tolerance(4e-2, 4e-2);
  private static final Tolerance BF16_CANCELLING = new Tolerance(6e-2, 4e-2);
  private static final Tolerance BF16_RECURRENT = new Tolerance(1e-1, 1e-1);
  private static final Tolerance TF32_RECURRENT = new Tolerance(2e-2, 2e-2);

  /** bfloat16 ops whose results cancel large terms: values and gradients. */
  private static final Map<String, Tolerance> BF16_WIDER = Map.ofEntries(
      Map.entry("var", BF16_CANCELLING), Map.entry("std", BF16_CANCELLING), Map.entry("cumsum", BF16_CANCELLING),
      Map.entry("logsumexp", BF16_CANCELLING), Map.entry("norm", BF16_CANCELLING),
      Map.entry("log_softmax", BF16_CANCELLING), Map.entry("batch_norm", BF16_CANCELLING),
      Map.entry("layer_norm", BF16_CANCELLING), Map.entry("group_norm", BF16_CANCELLING),
      Map.entry("rms_norm", BF16_CANCELLING));

  /** The bfloat16 ops given a wider tolerance than the default. */
  static Set<String> widerInBfloat16() {
    return BF16_WIDER.keySet();
  }

  /** The tolerance of the values of definition {@code op}'s entries in {@code p}. */
  static Tolerance values(String op, Precision p) {
    return switch (p) {
      case F32 -> F32;
      case TF32 -> RECURRENT.contains(op) ? TF32_RECURRENT : TF32_VALUES;
      case BF16 -> RECURRENT.contains(op) ? BF16_RECURRENT : BF16_WIDER.getOrDefault(op, BF16_VALUES);
    };
  }

  /** The tolerance of the input gradients of definition {@code op}'s entries in {@code p}. */
  static Tolerance grads(String op, Precision p) {
    return switch (p) {
      case F32 -> F32;
      case TF32 -> RECURRENT.contains(op) ? TF32_RECURRENT : TF32_GRADS;
      case BF16 -> RECURRENT.contains(op) ? BF16_RECURRENT : BF16_WIDER.containsKey(op) ? BF16_CANCELLING : BF16_GRADS;
    };
  }
}
