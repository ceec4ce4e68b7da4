package dev.ember.nn.functional;

import dev.ember.autograd.Checkpointing;
import dev.ember.autograd.Grad;
import dev.ember.autograd.Tracing;
import dev.ember.autograd.Autograd;
import dev.ember.backend.AttentionKernels;
import dev.ember.ops.ElementwiseOps;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import java.util.Arrays;

/**
 * Scaled dot-product attention as PyTorch 2's F.scaled_dot_product_attention:
 * {@code softmax(q k^T * scale + mask) v} for q [..., L, E], k [..., S, E], v [..., S, Ev] (the
 * same leading dims), giving [..., L, Ev]. {@code attnMask} broadcasts to [..., L, S] and is either
 * BOOL, true where a query may attend a key (SDPA's convention, the opposite of
 * MultiheadAttention's), or floating point and added to the scores. {@code isCausal} lets query i
 * see keys j &lt;= i (top-left aligned, as PyTorch); a sliding {@code window} w &gt;= 0 lets it see keys
 * with |i - j| &lt;= w, or i - w &lt;= j &lt;= i when causal. A mask, causality and a window may be combined
 * (all apply; PyTorch refuses a mask together with is_causal). A query row that sees no key gives
 * NaN, as the explicit formula does.
 *
 * <p>Two implementations agree to rounding: the plain path composes tensor ops and holds the
 * [..., L, S] scores (with no gradient to follow and no mask or dropout, the backend may run the same ops one batch
 * element at a time, {@link AttentionKernels#plainForward}: the same bits); the tiled path (the backend's {@link AttentionKernels}) never holds more
 * than one block of scores, keeps only a logsumexp per query row for its backward, and skips key
 * blocks outside the causal or window band. {@link Kernel#AUTO} takes the tiled path when L * S exceeds
 * {@link Kernel#tiledAbove()}, or {@link Kernel#FUSED_ABOVE} for a forward the backend runs fused. Attention dropout draws one counter-based uniform per (batch, i, j)
 * from a seed taken from the generator, so both paths drop the same weights.
 */
public final class Attention {
  private Attention() {}

  /** No sliding window: every key is visible (subject to the mask and causality). */
  public static final int NO_WINDOW = -1;

  /** Which implementation runs. */
  public enum Path { AUTO, PLAIN, TILED }

  /**
   * Implementation choice: the path, the tiled path's query and key block sizes, and the number of
   * scores per batch element (L * S) above which AUTO takes the tiled path. A forward that no gradient will
   * follow ({@link Grad#inference()}: recording off, outside a checkpoint segment), without mask, that the backend runs as one fused kernel (float32 on the
   * CPU's Vector API kernels, no dropout) takes the tiled path from {@link #FUSED_ABOVE} scores already.
   */
  public record Kernel(Path path, int blockQ, int blockK, long tiledAbove) {
    /** Tiled above 1M scores per (batch, head), i.e. beyond L = S = 1024; blocks of 64 queries x 128 keys. */
    public static final Kernel AUTO = new Kernel(Path.AUTO, 64, 128, 1L << 20);

    /**
     * Scores per batch element above which AUTO takes a fused tiled forward: between L = S = 512, where the plain
     * path's GEMMs and softmax were ~15% faster on one thread (6.6-6.9 against 7.4-7.8 ms for B=1, 8 heads, head dim 64,
     * CPU time, 2026-11-29, after the GEMM write-back work; it had been ~10% slower before), and 1024, where the fused
     * kernel is ~10% faster and holds no [L, S] block (~4 MB a call instead of ~70). With a gradient to follow the
     * tiled backward was ~10% slower than the plain one at 512 and 1024, so there the size alone decides.
     */
    public static final long FUSED_ABOVE = 1L << 18;

    public Kernel {
      if (blockQ <= 0 || blockK <= 0) {
        throw new IllegalArgumentException("scaled_dot_product_attention: block sizes must be positive, got "
            + blockQ + " x " + blockK);
      }
    }

    /** The score count above which AUTO takes the tiled path: {@code tiledAbove}, or less for a fused forward. */
    long threshold(boolean fused) {
      return fused ? Math.min(tiledAbove, FUSED_ABOVE) : tiledAbove;
    }

    /** The tiled path with the given block sizes, whatever the sequence lengths. */
    public static Kernel tiled(int blockQ, int blockK) {
      return new Kernel(Path.TILED, blockQ, blockK, 0);
    }

    /** The plain path, whatever the sequence lengths. */
    public static Kernel plain() {
      return new Kernel(Path.PLAIN, 64, 64, Long.MAX_VALUE);
    }
  }

  public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v) {
    return scaledDotProductAttention(q, k, v, null, 0, false, null, NO_WINDOW, null, Kernel.AUTO);
  }

  /** As F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale); gen null = global. */
  public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP,
      boolean isCausal, Double scale, Generator gen) {
    return scaledDotProductAttention(q, k, v, attnMask, dropoutP, isCausal, scale, NO_WINDOW, gen, Kernel.AUTO);
  }

  /**
   * The full form: {@code scale} null means 1 / sqrt(E); {@code window} is {@link #NO_WINDOW} or
   * w >= 0; {@code gen} (null = the global generator) is only read when dropoutP > 0.
   */
  public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP,
      boolean isCausal, Double scale, int window, Generator gen, Kernel kernel) {
    if (dropoutP > 0 && Tracing.active()) {
      // For a graph compiler: the dropout is drawn anew on every run, so no part of the op may be a graph node of
      // its own; the op is one checkpointed node (same bits), whose one backward rule a training graph can apply.
      Tensor out;
      try (Tracing.Scope untraced = Tracing.install(null)) {
        out = checkpointed(q, k, v, attnMask, dropoutP, isCausal, scale, window, gen, kernel);
      }
      return Tracing.op("scaled_dot_product_attention", out, new Tensor[] {q, k, v, attnMask}, new Object[] {
          "dropout_p", dropoutP, "is_causal", isCausal, "scale", scale, "window", window, "kernel", kernel},
          in -> checkpointed(in[0], in[1], in[2], in[3], dropoutP, isCausal, scale, window, gen, kernel));
    }
    Tensor out = scaledDotProductAttentionUntraced(q, k, v, attnMask, dropoutP, isCausal, scale, window, gen, kernel);
    return Tracing.active() ? Tracing.op("scaled_dot_product_attention", out,
        new Tensor[] {q, k, v, attnMask}, new Object[] {"dropout_p", dropoutP,
        "is_causal", isCausal, "scale", scale, "window", window, "kernel", kernel},
        in -> scaledDotProductAttention(in[0], in[1], in[2], in[3], dropoutP, isCausal, scale, window, gen, kernel)) : out;
  }

  /**
   * Attention with dropout as one {@link Checkpointing checkpoint} node (recomputed, its dropout redrawn from the
   * same generator state, in backward): the bits and gradients of the plain call.
   */
  private static Tensor checkpointed(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP, boolean isCausal,
      Double scale, int window, Generator gen, Kernel kernel) {
    return Checkpointing.apply(t -> scaledDotProductAttentionUntraced(t[0], t[1], t[2], attnMask, dropoutP, isCausal,
        scale, window, gen, kernel), q, k, v);
  }

  private static Tensor scaledDotProductAttentionUntraced(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP,
      boolean isCausal, Double scale, int window, Generator gen, Kernel kernel) {
    String op = "scaled_dot_product_attention";
    Tensor[] ac = HalfCompute.lowered(op, q, k, v, attnMask); // autocast: both products from low-precision operands
    q = ac[0];
    k = ac[1];
    v = ac[2];
    attnMask = ac[3];
    int[] batch = checkShapes(op, q, k, v);
    for (Tensor t : new Tensor[] {k, v, attnMask}) {
      if (t != null && t.device() != q.device()) {
        throw Check.fail(op, "tensors are on different devices (" + q.device() + " vs " + t.device() + ")",
            "query", q, t == k ? "key" : t == v ? "value" : "attn_mask", t);
      }
    }
    int l = q.size(-2);
    int s = k.size(-2);
    int e = q.size(-1);
    int ev = v.size(-1);
    int[] full = concat(batch, l, s);
    if (attnMask != null) checkMask(op, attnMask, full, q);
    if (!(dropoutP >= 0 && dropoutP <= 1)) {
      throw Check.fail(op, "dropout_p must be in [0, 1] (got " + dropoutP + ")", "query", q);
    }
    if (window < NO_WINDOW) {
      throw Check.fail(op, "window must be >= 0, or -1 for none (got " + window + ")", "query", q);
    }
    if (HalfCompute.applies(q, k, v, attnMask)) {
      return HalfCompute.like(op, q, t -> scaledDotProductAttention(t[0], t[1], t[2], t[3], dropoutP, isCausal, scale,
          window, gen, kernel), q, k, v, attnMask);
    }
    double sc = scale != null ? scale : 1 / Math.sqrt(e);
    long seed = dropoutP > 0 ? (gen == null ? Generator.global() : gen).nextLong() : 0;
    int nb = (int) Shapes.numel(batch);
    AttentionKernels.Problem p = new AttentionKernels.Problem(nb, l, s, e, ev, sc, isCausal, window, kernel.blockQ(),
        kernel.blockK(), null, dropoutP, seed);
    boolean tiled = kernel.path() == Path.TILED || (kernel.path() == Path.AUTO && (long) l * s > kernel.threshold(
        attnMask == null && Grad.inference() && q.device().backend().attention().fusedForward(p, q.dtype())));
    // The plain path scales q (L x E, in the pass that makes a strided q contiguous anyway) rather
    // than the L x S scores, as PyTorch's math path does; the tiled kernels apply the scale themselves.
    Tensor q3 = (tiled ? q : q.mul(sc)).reshape(nb, l, e);
    Tensor k3 = k.reshape(nb, s, e);
    Tensor v3 = v.reshape(nb, s, ev);
    Tensor out = tiled ? tiled(p, q3, k3, v3, attnMask, full) : plain(p, q3, k3, v3, attnMask, full);
    return out.reshape(concat(batch, l, ev));
  }

  // ================================================================== plain path

  private static Tensor plain(AttentionKernels.Problem p, Tensor q, Tensor k, Tensor v, Tensor mask, int[] full) {
    DType dt = q.dtype();
    AttentionKernels kernels = q.device().backend().attention();
    if (mask == null && Grad.inference() && kernels.runsPlainForward(p, dt)) {
      // no gradient to follow: the backend runs the same ops per batch element, its scores staying in cache
      Tensor out = q.newEmpty(p.batch(), p.l(), p.ev());
      kernels.plainForward(p, q.contiguous(), k.contiguous(), v.contiguous(), out);
      return out;
    }
    Tensor negInf = scalarOn(q.device(), Double.NEGATIVE_INFINITY, dt);
    Tensor scores = q.matmul(k.mT()); // [B, L, S]; q comes scaled
    if (mask != null) {
      Tensor m3 = mask.expand(full).reshape(p.batch(), p.l(), p.s());
      scores = mask.dtype() == DType.BOOL ? ElementwiseOps.where(m3, scores, negInf) : scores.add(m3);
    }
    if (p.causal() || p.window() >= 0) {
      Tensor allowed = q.newZeros(DType.BOOL, p.l(), p.s());
      kernels.bandMask(p, allowed);
      scores = ElementwiseOps.where(allowed, scores, negInf);
    }
    Tensor attn = scores.softmax(-1);
    if (p.dropoutP() > 0) {
      Tensor keep = q.newZeros(p.batch(), p.l(), p.s());
      kernels.dropoutKeep(p, keep);
      attn = attn.mul(keep);
    }
    return attn.matmul(v);
  }

  // ================================================================== tiled path

  private static Tensor tiled(AttentionKernels.Problem p0, Tensor q, Tensor k, Tensor v, Tensor mask, int[] full) {
    Tensor maskD = null;
    AttentionKernels.Problem p = p0;
    if (mask != null) {
      // the mask in its own (unexpanded) shape, additive, as doubles; broadcast through strides
      maskD = mask.dtype() == DType.BOOL ? ElementwiseOps.where(mask, scalarOn(q.device(), 0.0, DType.F64),
          scalarOn(q.device(), Double.NEGATIVE_INFINITY, DType.F64)) : mask.to(DType.F64);
      maskD = maskD.detach();
      // contiguous from offset 0: the kernels address the mask (and its gradient, sized by its elements) from there
      if (!maskD.isContiguous() || maskD.offset() != 0) maskD = maskD.cloneContiguous();
      p = withMask(p0, maskD, full);
    }
    Tensor qc = q.contiguous().detach();
    Tensor kc = k.contiguous().detach();
    Tensor vc = v.contiguous().detach();
    AttentionKernels kernels = q.device().backend().attention();
    boolean maskGrad = mask != null && mask.dtype().isFloatingPoint();
    if (!q.device().isCpu()) return tiledOnDevice(kernels, p, qc, kc, vc, mask, maskD, maskGrad, q, k, v);
    double[] lse = new double[p.batch() * p.l()];
    Tensor out = qc.newZeros(p.batch(), p.l(), p.ev());
    kernels.forward(p, qc, kc, vc, out, lse);
    AttentionKernels.Problem pf = p;
    int[] maskShape = mask == null ? null : mask.shape();
    DType maskType = mask == null ? null : mask.dtype();
    return Autograd.record("scaled_dot_product_attention", out, (ctx, g) -> {
      for (int i = 0; i < 3; i++) ctx.in(i); // fails, naming the op, if q, k or v changed in place since the forward
      double[] dm = maskGrad && ctx.edgeNeeded(3) ? new double[(int) Shapes.numel(maskShape)] : null;
      Tensor dq = qc.newZeros(qc.shapeRef());
      Tensor dk = qc.newZeros(kc.shapeRef());
      Tensor dv = qc.newZeros(vc.shapeRef());
      kernels.backward(pf, qc, kc, vc, out, lse, g.contiguous(), dq, dk, dv, dm);
      return new Tensor[] {dq, dk, dv, dm == null ? null : tensor(dm, maskType, maskShape).to(qc.device())};
    }, new Tensor[] {q, k, v, maskGrad ? mask : null});
  }

  /**
   * The tiled path on a device: the rows' logsumexps stay in an F64 device tensor from the forward to the backward
   * ({@link AttentionKernels#forwardInto}, {@link AttentionKernels#backwardFrom}) and the mask's gradient is summed
   * on the device, so neither direction waits for a copy to the host or uploads from it. The same kernels' arithmetic
   * as the CPU path's arrays.
   */
  private static Tensor tiledOnDevice(AttentionKernels kernels, AttentionKernels.Problem p, Tensor qc, Tensor kc,
      Tensor vc, Tensor mask, Tensor maskD, boolean maskGrad, Tensor q, Tensor k, Tensor v) {
    Tensor lse = qc.newEmpty(DType.F64, p.batch() * p.l());
    Tensor out = qc.newZeros(p.batch(), p.l(), p.ev());
    kernels.forwardInto(p, qc, kc, vc, out, lse);
    DType maskType = mask == null ? null : mask.dtype();
    return Autograd.record("scaled_dot_product_attention", out, (ctx, g) -> {
      for (int i = 0; i < 3; i++) ctx.in(i); // fails, naming the op, if q, k or v changed in place since the forward
      Tensor dm = maskGrad && ctx.edgeNeeded(3) ? qc.newZeros(DType.F64, maskD.shapeRef()) : null;
      Tensor dq = qc.newZeros(qc.shapeRef());
      Tensor dk = qc.newZeros(kc.shapeRef());
      Tensor dv = qc.newZeros(vc.shapeRef());
      kernels.backwardFrom(p, qc, kc, vc, out, lse, g.contiguous(), dq, dk, dv, dm);
      return new Tensor[] {dq, dk, dv, dm == null ? null : dm.to(maskType)};
    }, new Tensor[] {q, k, v, maskGrad ? mask : null});
  }

  /**
   * A 0-d {@code dtype} tensor holding {@code value} for an op on {@code device}: a host scalar on the CPU, else one
   * filled on the device, since a host scalar meeting device operands is copied up by a transfer that waits for
   * every queued kernel.
   */
  private static Tensor scalarOn(dev.ember.tensor.Device device, double value, DType dtype) {
    return device.isCpu() ? Tensor.scalar(value, dtype) : Tensor.full(value, device, dtype);
  }

  /** The problem with the mask's strides broadcast to [B..., L, S] and flattened to per-batch bases. */
  private static AttentionKernels.Problem withMask(AttentionKernels.Problem p, Tensor maskD, int[] full) {
    Tensor ex = Views.expand(maskD, full);
    int[] st = ex.stridesRef();
    int r = full.length;
    int[] base = new int[p.batch()];
    for (int b = 0; b < base.length; b++) {
      int rem = b;
      int off = ex.offset();
      for (int d = r - 3; d >= 0; d--) {
        off += (rem % full[d]) * st[d];
        rem /= full[d];
      }
      base[b] = off;
    }
    AttentionKernels.Mask m = new AttentionKernels.Mask(maskD, base, st[r - 2], st[r - 1]);
    return new AttentionKernels.Problem(p.batch(), p.l(), p.s(), p.e(), p.ev(), p.scale(), p.causal(), p.window(),
        p.bq(), p.bk(), m, p.dropoutP(), p.dropSeed());
  }

  // ================================================================== checks

  /** The common leading (batch) dims, after checking q [..., L, E], k [..., S, E], v [..., S, Ev]. */
  private static int[] checkShapes(String op, Tensor q, Tensor k, Tensor v) {
    for (Tensor t : new Tensor[] {q, k, v}) {
      if (!t.dtype().isFloatingPoint()) {
        throw Check.fail(op, "expected floating-point query, key and value, got " + t.dtype().torchName(),
            "query", q, "key", k, "value", v);
      }
    }
    if (q.dtype() != k.dtype() || q.dtype() != v.dtype()) {
      throw Check.fail(op, "query, key and value must have the same dtype (" + q.dtype().torchName() + ", "
          + k.dtype().torchName() + ", " + v.dtype().torchName() + ")", "query", q, "key", k, "value", v);
    }
    if (q.dim() < 2 || k.dim() != q.dim() || v.dim() != q.dim()) {
      throw Check.fail(op, "query, key and value must have the same rank >= 2 (" + q.dim() + ", " + k.dim() + ", "
          + v.dim() + ")", "query", q, "key", k, "value", v);
    }
    int r = q.dim();
    int[] batch = Arrays.copyOf(q.shapeRef(), r - 2);
    if (!Arrays.equals(batch, Arrays.copyOf(k.shapeRef(), r - 2))
        || !Arrays.equals(batch, Arrays.copyOf(v.shapeRef(), r - 2))) {
      throw Check.fail(op, "query, key and value must have the same leading (batch) dims", "query", q, "key", k,
          "value", v);
    }
    if (q.size(-1) != k.size(-1)) {
      throw Check.fail(op, "query and key embedding dims differ (" + q.size(-1) + " vs " + k.size(-1) + ")",
          "query", q, "key", k, "value", v);
    }
    if (k.size(-2) != v.size(-2)) {
      throw Check.fail(op, "key and value sequence lengths differ (" + k.size(-2) + " vs " + v.size(-2) + ")",
          "query", q, "key", k, "value", v);
    }
    return batch;
  }

  private static void checkMask(String op, Tensor mask, int[] full, Tensor q) {
    if (mask.dtype() != DType.BOOL && mask.dtype() != q.dtype()) {
      throw Check.fail(op, "attn_mask must be bool or the query's dtype " + q.dtype().torchName() + ", got "
          + mask.dtype().torchName(), "attn_mask", mask, "query", q);
    }
    boolean ok = mask.dim() <= full.length;
    for (int i = 1; ok && i <= mask.dim(); i++) {
      int m = mask.shapeRef()[mask.dim() - i];
      ok = m == 1 || m == full[full.length - i];
    }
    if (!ok) {
      throw Check.fail(op, "attn_mask does not broadcast to [..., L, S] = " + Arrays.toString(full), "attn_mask", mask,
          "query", q);
    }
  }

  /** A tensor of {@code dtype} holding {@code values} with {@code shape}. */
  private static Tensor tensor(double[] values, DType dtype, int... shape) {
    Tensor t = Tensor.of(values, shape);
    return dtype == DType.F64 ? t : t.to(dtype);
  }

  private static int[] concat(int[] batch, int x, int y) {
    int[] s = Arrays.copyOf(batch, batch.length + 2);
    s[batch.length] = x;
    s[batch.length + 1] = y;
    return s;
  }
}
