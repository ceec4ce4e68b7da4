package dev.ember.nn.functional;

import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.autograd.Tracing;
import dev.ember.ops.IndexOps;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Embedding lookup as F.embedding: rows of {@code weight} [numEmbeddings, dim] at integer indices
 * of any shape, giving {@code indices.shape + [dim]}. The forward is the core's index_select; the
 * backward scatter-adds the upstream gradient into the referenced rows (repeated indices add up),
 * except the {@code paddingIdx} row, which gets no gradient. With {@code maxNorm}, the referenced
 * rows whose {@code normType}-norm exceeds it are rescaled in place first, outside the graph (as
 * torch.embedding_renorm_).
 */
public final class Embeddings {
  private Embeddings() {}

  public static Tensor embedding(Tensor input, Tensor weight) {
    return embedding(input, weight, null, null, 2.0);
  }

  /**
   * @param paddingIdx the row that receives no gradient (negative counts from the end), or null
   * @param maxNorm rows referenced by {@code input} with a larger norm are rescaled to it, or null
   * @param normType p of the p-norm for maxNorm (PyTorch default 2)
   */
  public static Tensor embedding(Tensor input, Tensor weight, Integer paddingIdx, Double maxNorm, double normType) {
    String op = "embedding";
    if (maxNorm == null && Tracing.active() && !HalfCompute.applies(weight)) {
      // for a graph compiler, the rows [numel, dim] as one op (the indices are read into Java), then a reshape
      Tensor rows;
      try (Tracing.Scope untraced = Tracing.install(null)) {
        rows = embedding(input, weight, paddingIdx, null, normType, true);
      }
      rows = Tracing.op(op, rows, new Tensor[] {input, weight}, new Object[] {"padding_idx", paddingIdx},
          in -> embedding(in[0], in[1], paddingIdx, null, normType, true));
      int[] shape = Arrays.copyOf(input.shapeRef(), input.dim() + 1);
      shape[input.dim()] = weight.shapeRef()[1];
      return rows.reshape(shape);
    }
    return embedding(input, weight, paddingIdx, maxNorm, normType, false);
  }

  /** {@link #embedding(Tensor, Tensor, Integer, Double, double)}, as rows [input.numel(), dim] when {@code rowsOnly}. */
  private static Tensor embedding(Tensor input, Tensor weight, Integer paddingIdx, Double maxNorm, double normType,
      boolean rowsOnly) {
    String op = "embedding";
    if (input.dtype() != DType.I64 && input.dtype() != DType.I32) {
      throw Check.fail(op, "indices must be int64 or int32, got " + input.dtype().torchName(),
          "input", input, "weight", weight);
    }
    if (weight.dim() != 2) {
      throw Check.fail(op, "weight must be 2-d [num_embeddings, embedding_dim], got rank " + weight.dim(),
          "input", input, "weight", weight);
    }
    int num = weight.shapeRef()[0];
    int dim = weight.shapeRef()[1];
    Integer pad = null;
    if (paddingIdx != null) {
      if (paddingIdx < -num || paddingIdx >= num) {
        throw Check.fail(op, "padding_idx must be within num_embeddings (" + paddingIdx + ", num_embeddings " + num
            + ")", "input", input, "weight", weight);
      }
      pad = paddingIdx < 0 ? paddingIdx + num : paddingIdx;
    }
    if (input.device() != weight.device()) {
      throw Check.fail(op, "tensors are on different devices (" + input.device() + " vs " + weight.device() + ")",
          "input", input, "weight", weight);
    }
    long[] idx = null;
    if (!input.device().isCpu() && maxNorm == null) {
      // on a device the indices are not read on the host (on a GPU that waits for every queued kernel): the
      // backend checks the range (CUDA: deferred to the next synchronizing point, as PyTorch's device-side
      // asserts); a half weight's F32 call below checks them itself
      if (!HalfCompute.applies(weight)) {
        input.device().backend().checkIndexRange(input, 0, num, 0, (position, value) -> indexOutOfRange(op, value,
            (int) position, input, weight, num));
      }
    } else {
      idx = input.toLongArray(); // read on the host (copied from a device) for the bounds check and renorm
      for (int i = 0; i < idx.length; i++) {
        if (idx[i] < 0 || idx[i] >= num) throw indexOutOfRange(op, idx[i], i, input, weight, num);
      }
    }
    if (HalfCompute.applies(weight)) {
      // the rows are exact in F32 and the gradient of repeated indices adds up in F32 before its one rounding;
      // a max_norm renormalization of the F32 copy is rounded back into the caller's weight
      Tensor w32 = HalfCompute.widen(weight);
      long version = w32.version();
      Tensor y = HalfCompute.like(op, weight, t -> embedding(input, t[0], paddingIdx, maxNorm, normType), w32);
      if (w32 != weight && w32.version() != version) { // (under autocast an F32 weight was renormalized itself)
        try (Grad ignored = Grad.off()) {
          weight.copy_(w32);
        }
      }
      return y;
    }
    if (maxNorm != null) renorm(weight, idx, maxNorm, normType);
    // the indices the rows are gathered by and the backward scatters to: on a device, a device copy of the input
    // (not the host array uploaded again, which would wait for the device once more); on the CPU the array itself
    Tensor flat = input.device().isCpu() ? Tensor.of(idx, idx.length) : input.cloneContiguous().reshape(-1);
    Tensor rows;
    try (Grad ignored = Grad.off()) {
      rows = IndexOps.indexSelect(weight, 0, flat);
    }
    int[] shape = Arrays.copyOf(input.shapeRef(), input.dim() + 1);
    shape[input.dim()] = dim;
    Integer padRow = pad;
    Tensor out = Autograd.record(op, rows, (ctx, g) -> {
      Tensor gw = g.newEmpty(num, dim); // overwritten: zeros plus the rows of g
      gw.device().backend().indexAddIntoZeros(gw, flat, g.contiguous());
      if (padRow != null) gw.select(0, padRow).zero_();
      return new Tensor[] {gw};
    }, new Tensor[] {weight});
    return rowsOnly ? out : out.reshape(shape);
  }

  private static RuntimeException indexOutOfRange(String op, long value, int flat, Tensor input, Tensor weight,
      int num) {
    return Check.fail(op, "index out of range (" + value + " at position " + Arrays.toString(position(flat,
        input.shapeRef())) + ", num_embeddings " + num + ")", "input", input, "weight", weight,
        "hint", "indices must be in [0, num_embeddings)");
  }

  /** Rescales each distinct referenced row whose p-norm exceeds maxNorm to maxNorm / (norm + 1e-7). */
  private static void renorm(Tensor weight, long[] idx, double maxNorm, double p) {
    if (weight.device().backend().normalization().renormRows(weight, idx, maxNorm, p)) weight.storage().bumpVersion();
  }

  private static int[] position(int flat, int[] shape) {
    int[] pos = new int[shape.length];
    for (int d = shape.length - 1; d >= 0; d--) {
      pos[d] = flat % shape[d];
      flat /= shape[d];
    }
    return pos;
  }
}
