package dev.ember.cuda.ops;

import dev.ember.ops.OpChecks.Tolerance;
import java.util.Map;
import java.util.Set;

/**
 * How far an op on {@code cuda:0} may be from the same op on the CPU, per op and precision: the tolerances of
 * {@link CudaOpTableTest}, stated once here (issue #39: "tolerances for TF32/BF16 stated per op").
 *
 * <ul>
 *   <li><b>float32</b>: 1e-5 absolute and relative for every op. The GPU's exp, log, tanh and pow are within a few
 *       ulps of the CPU's, and its reductions and products sum in another order; at the table's sizes (tens of terms)
 *       both stay far inside 1e-5. Comparisons, selections, moves and integer results are exact.
 *   <li><b>TF32</b> ({@code allowTf32}, the products only: matmul and its variants, linear and its epilogues, addmm,
 *       bmm, dot, outer): inputs rounded to 10 mantissa bits (2^-11 relative each) before float32 accumulation, so
 *       5e-3 absolute and relative at the table's K (at most 16 terms of O(1) products); 1e-2 for gradients, which
 *       are products of the products' gradients.
 *   <li><b>bfloat16</b>: inputs and results carry 8 significant bits, so one rounding is up to 2^-8 relative (one
 *       ulp is 2^-7 just above a power of two). Both sides compute in float32 and round once, so results differ by at
 *       most an ulp where the float32 values straddle a rounding boundary: 2e-2 absolute and relative (2.5 ulps);
 *       gradients, which round the upstream gradient and each partial product again, 4e-2. Ops that cancel large
 *       terms (variance, standard deviation, cumulative sums, log-sum-exp, norms) 6e-2 absolute.
 * </ul>
 */
final class CudaTolerances {
  private CudaTolerances() {}

  /** The precisions an op is checked in. */
  enum Precision { F32, TF32, BF16 }

  /** The products that run on tensor cores in TF32 when {@code allowTf32} is on. */
  static final Set<String> PRODUCTS = Set.of("matmul", "matmul_batched", "matmul_vector", "bmm", "addmm", "dot",
      "outer", "linear", "linear_nobias", "linear_epilogue", "linear_epilogue_gelu", "linear_epilogue_gelu_tanh",
      "linear_epilogue_residual", "linear_epilogue_sigmoid", "linear_epilogue_silu");

  private static final Tolerance F32 = new Tolerance(1e-5, 1e-5);
  private static final Tolerance TF32_VALUES = new Tolerance(5e-3, 5e-3);
  private static final Tolerance TF32_GRADS = new Tolerance(1e-2, 1e-2);
  private static final Tolerance BF16_VALUES = new Tolerance(2e-2, 2e-2);
  private static final Tolerance BF16_GRADS = new Tolerance(4e-2, 4e-2);
  private static final Tolerance BF16_CANCELLING = new Tolerance(6e-2, 4e-2);

  /** bfloat16 ops whose results cancel large terms: values and gradients. */
  private static final Map<String, Tolerance> BF16_WIDER = Map.ofEntries(
      Map.entry("var_biased", BF16_CANCELLING), Map.entry("var_unbiased", BF16_CANCELLING),
      Map.entry("std", BF16_CANCELLING), Map.entry("cumsum", BF16_CANCELLING),
      Map.entry("cumsum_dim0", BF16_CANCELLING), Map.entry("logsumexp", BF16_CANCELLING),
      Map.entry("norm_1", BF16_CANCELLING), Map.entry("norm_2", BF16_CANCELLING),
      Map.entry("log_softmax", BF16_CANCELLING));

  /** The tolerance of op {@code op}'s values in {@code p}. */
  static Tolerance values(String op, Precision p) {
    return switch (p) {
      case F32 -> F32;
      case TF32 -> TF32_VALUES;
      case BF16 -> BF16_WIDER.getOrDefault(op, BF16_VALUES);
    };
  }

  /** The tolerance of op {@code op}'s input gradients in {@code p}. */
  static Tolerance grads(String op, Precision p) {
    return switch (p) {
      case F32 -> F32;
      case TF32 -> TF32_GRADS;
      case BF16 -> BF16_WIDER.containsKey(op) ? BF16_CANCELLING : BF16_GRADS;
    };
  }
}
