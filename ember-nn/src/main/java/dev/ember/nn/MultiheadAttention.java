package dev.ember.nn;

import dev.ember.amp.Autocast;
import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.autograd.Tracing;
import dev.ember.backend.AttentionKernels;
import dev.ember.backend.Backend;
import dev.ember.nn.functional.Attention;
import dev.ember.nn.init.Init;
import dev.ember.ops.ElementwiseOps;
import dev.ember.ops.LinalgOps;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Multi-head attention as {@code nn.MultiheadAttention}: parameters {@code in_proj_weight} [3E, E]
 * (xavier uniform), {@code in_proj_bias} [3E] (zeros), {@code out_proj.weight} / {@code out_proj.bias}
 * (a Linear with a zero bias), so PyTorch state dicts load as they are; kdim/vdim other than E are
 * not supported. Inputs are [L, N, E] (or [N, L, E] with batchFirst, or unbatched [L, E]).
 *
 * <p>Masks follow PyTorch's MultiheadAttention (not scaled_dot_product_attention): a BOOL
 * {@code attnMask} [L, S] or [N*heads, L, S] is true where attention is NOT allowed, a float mask is
 * added to the scores; a BOOL {@code keyPaddingMask} [N, S] is true for keys to ignore (a float
 * one is added). Rows whose keys are all masked give NaN, as in PyTorch.
 *
 * <p>Without {@code needWeights} the attention runs through
 * {@link Attention#scaledDotProductAttention} (the masks converted to its additive form), so long
 * sequences take its tiled path and never hold the [L, S] scores; with it, the scores are formed
 * explicitly to return the weights. Both give the same values. Attention dropout draws its mask
 * differently on the two paths (both from the module's generator).
 */
public class MultiheadAttention extends Module {
  private final int embedDim;
  private final int numHeads;
  private final double dropout;
  private final boolean batchFirst;
  private final Generator gen;
  private final Linear outProj;
  private Attention.Kernel kernel = Attention.Kernel.AUTO;
  private boolean packedInProjection = true;

  /** The attention output [L, N, E] (batch layout as the input) and, if asked for, the weights. */
  public record Output(Tensor output, Tensor weights) {}

  public MultiheadAttention(int embedDim, int numHeads) {
    this(embedDim, numHeads, 0.0, true, false, Generator.global());
  }

  public MultiheadAttention(int embedDim, int numHeads, double dropout, boolean bias, boolean batchFirst, Generator gen) {
    if (embedDim <= 0 || numHeads <= 0 || embedDim % numHeads != 0) {
      throw new IllegalArgumentException("MultiheadAttention: embed_dim (" + embedDim + ") must be a positive multiple of num_heads ("
          + numHeads + ")");
    }
    if (!(dropout >= 0 && dropout < 1)) {
      throw new IllegalArgumentException("MultiheadAttention: dropout must be in [0, 1), got " + dropout);
    }
    this.embedDim = embedDim;
    this.numHeads = numHeads;
    this.dropout = dropout;
    this.batchFirst = batchFirst;
    this.gen = gen;
    registerParameter("in_proj_weight", Init.xavierUniform_(Tensor.empty(3 * embedDim, embedDim), 1.0, gen));
    registerParameter("in_proj_bias", bias ? Tensor.zeros(3 * embedDim) : null);
    outProj = registerModule("out_proj", new NonDynamicallyQuantizableLinear(embedDim, bias, gen));
    if (bias) Init.zeros_(outProj.bias());
  }

  public int embedDim() {
    return embedDim;
  }

  public int numHeads() {
    return numHeads;
  }

  public boolean batchFirst() {
    return batchFirst;
  }

  /** The attention dropout probability. */
  public double dropout() {
    return dropout;
  }

  /**
   * Chooses the scaled_dot_product_attention implementation used when no weights are asked for
   * ({@link Attention.Kernel#AUTO}, the default, takes the tiled path for long sequences); returns this.
   */
  public MultiheadAttention attentionKernel(Attention.Kernel kernel) {
    if (kernel == null) throw new IllegalArgumentException("MultiheadAttention: kernel must not be null");
    this.kernel = kernel;
    return this;
  }

  public Attention.Kernel attentionKernel() {
    return kernel;
  }

  /**
   * Whether self-attention (query, key and value the same tensor) projects q, k and v as one product with the packed
   * {@code in_proj_weight} [3E, E] (the default) instead of three with its [E, E] slices; returns this. The packed
   * product gives the same outputs bit for bit (each element is the same sum over E); its backward is one weight
   * gradient [3E, E] and one input gradient with K = 3E, whose bits differ from the three input gradients' sum. Off,
   * every call takes the three products (the A/B switch of the transformer benchmark).
   */
  public MultiheadAttention packedInProjection(boolean packed) {
    this.packedInProjection = packed;
    return this;
  }

  public boolean packedInProjection() {
    return packedInProjection;
  }

  /** Self-attention: query = key = value = x, no masks, output only. */
  @Override
  public Tensor forward(Tensor x) {
    return forward(x, x, x, null, null, false, false).output();
  }

  /**
   * Attention of {@code query} over {@code key}/{@code value}. With {@code needWeights} the
   * head-averaged weights [N, L, S] are returned too; {@code isCausal} masks keys after the query
   * position (in addition to {@code attnMask}).
   */
  public Output forward(Tensor query, Tensor key, Tensor value, Tensor keyPaddingMask, Tensor attnMask,
      boolean needWeights, boolean isCausal) {
    String op = "MultiheadAttention";
    boolean batched = query.dim() == 3;
    if ((query.dim() != 3 && query.dim() != 2) || key.dim() != query.dim() || value.dim() != query.dim()) {
      throw Check.fail(op, "query, key and value must all be 3-d (batched) or all 2-d (unbatched)", "query", query,
          "key", key, "value", value);
    }
    Tensor q = batched ? (batchFirst ? query.transpose(0, 1) : query) : query.unsqueeze(1); // [L, N, E]
    Tensor k = batched ? (batchFirst ? key.transpose(0, 1) : key) : key.unsqueeze(1);
    Tensor v = batched ? (batchFirst ? value.transpose(0, 1) : value) : value.unsqueeze(1);
    int l = q.size(0), n = q.size(1), s = k.size(0), e = embedDim, h = numHeads, hd = e / h;
    if (q.size(2) != e || k.size(2) != e || v.size(2) != e || k.size(1) != n || v.size(1) != n || v.size(0) != s) {
      throw Check.fail(op, "query, key and value must be [L, N, E], [S, N, E], [S, N, E] with E = embed_dim (" + e + ")",
          "query", query, "key", key, "value", value);
    }
    Tensor w = param("in_proj_weight");
    Tensor b = param("in_proj_bias");
    // A batch-first input is projected in its own [N, L, E] layout (a view as [N*L, E]) and stays
    // in it up to the output: going through [L, N, E] cost a transposed copy of each of query, key
    // and value and a strided output.
    boolean batchOuter = batched && batchFirst;
    boolean core = coreApplies(query, w, attnMask, keyPaddingMask, needWeights, l, s);
    Tensor qp;
    Tensor kp;
    Tensor vp;
    Tensor[] projections;
    if (packedApplies(query, key, value, w, attnMask, keyPaddingMask, needWeights)) {
      // self-attention: one product [.., E] x [3E, E]^T, read as q, k and v column slices
      Tensor qkv = projectPacked(batchOuter ? query : q, w, b);
      qp = qkv.narrow(2, 0, e);
      kp = qkv.narrow(2, e, e);
      vp = qkv.narrow(2, 2 * e, e);
      projections = new Tensor[] {qkv};
    } else {
      qp = project(batchOuter ? query : q, w.narrow(0, 0, e), b == null ? null : b.narrow(0, 0, e));
      kp = project(batchOuter ? key : k, w.narrow(0, e, e), b == null ? null : b.narrow(0, e, e));
      vp = project(batchOuter ? value : v, w.narrow(0, 2 * e, e), b == null ? null : b.narrow(0, 2 * e, e));
      projections = new Tensor[] {qp, kp, vp};
    }
    if (core) {
      // with a gradient to follow: the attention core as one autograd node over the projections (attentionCore)
      Tensor bias = additiveMask(op, attnMask, keyPaddingMask, isCausal, n, l, s, qp.dtype(), qp.device(),
          batched ? key : null);
      Tensor out = outProj.call(attentionCore(projections, bias, h, batchOuter));
      return new Output(batched ? out : out.squeeze(1), null);
    }
    Tensor qh = heads(qp, h, batchOuter); // [N, H, L, hd]
    Tensor kh = heads(kp, h, batchOuter);
    Tensor vh = heads(vp, h, batchOuter);

    Tensor ctx;
    Tensor weights = null;
    if (needWeights) {
      Tensor scores = qh.matmul(kh.transpose(2, 3)).mul(1 / Math.sqrt(hd)); // [N, H, L, S]
      Tensor bias = additiveMask(op, attnMask, keyPaddingMask, isCausal, n, l, s, scores.dtype(), scores.device(), batched ? key : null);
      if (bias != null) scores = scores.add(bias);
      Tensor attn = scores.softmax(3);
      if (dropout > 0 && isTraining()) {
        Tensor keep = Tensor.bernoulli(gen, Tensor.full(1 - dropout, attn.dtype(), attn.shape())).to(attn.device());
        attn = attn.mul(keep).div(1 - dropout);
      }
      ctx = attn.matmul(vh);
      weights = attn.mean(1, false); // [N, L, S]
    } else {
      // no weights wanted: scaled_dot_product_attention, whose tiled path never holds [L, S] for long
      // sequences; causality goes as its flag so that the tiled path skips the masked key blocks
      Tensor bias = additiveMask(op, attnMask, keyPaddingMask, false, n, l, s, qh.dtype(), qh.device(), batched ? key : null);
      double p = dropout > 0 && isTraining() ? dropout : 0;
      ctx = Attention.scaledDotProductAttention(qh, kh, vh, bias, p, isCausal, null, Attention.NO_WINDOW, gen, kernel);
    }
    // [N, H, L, hd] -> the input's layout, [N, L, E] or [L, N, E]
    ctx = batchOuter ? ctx.permute(0, 2, 1, 3).reshape(n, l, e) : ctx.permute(2, 0, 1, 3).reshape(l, n, e);
    Tensor out = outProj.call(ctx);
    if (!batched) {
      out = out.squeeze(1);
      if (weights != null) weights = weights.squeeze(0);
    }
    return new Output(out, weights);
  }

  /**
   * Whether {@link #forward} projects q, k and v as one product with the packed in-projection weight: self-attention
   * (query, key and value one tensor) with {@link #packedInProjection()} on, float32 or float64 like the weight, not
   * under autocast, and either no gradient recorded or one that {@link #attentionCore} takes or (when tracing, or
   * with another attention kernel or a long sequence) scaled_dot_product_attention over the slices: no attention
   * weights wanted, no attention dropout in effect, masks that take no gradient. The other calls with a gradient
   * keep three products, since the slices' backward would zero-fill the whole [.., 3E] gradient once per slice.
   * Tracing and eager decide alike, so a compiled step traces the product that eager runs.
   */
  boolean packedApplies(Tensor query, Tensor key, Tensor value, Tensor w, Tensor attnMask, Tensor keyPaddingMask,
      boolean needWeights) {
    DType dt = query.dtype();
    if (!packedInProjection || query != key || key != value || Autocast.dtype() != null
        || !(dt == DType.F32 || dt == DType.F64) || w.dtype() != dt) {
      return false;
    }
    return !Grad.enabled() || (!needWeights && !(dropout > 0 && isTraining())
        && (attnMask == null || !attnMask.requiresGrad()) && (keyPaddingMask == null || !keyPaddingMask.requiresGrad()));
  }

  /**
   * Whether {@link #forward} runs the attention core as one autograd node ({@link #attentionCore}): a gradient is
   * recorded (not under autocast; when tracing for a graph, only for a training step's, which captures the core as
   * one node and applies its backward rule: {@link Tracing#capturesBackward()}), float32 or float64 like the
   * projection weight, no attention weights wanted, no attention dropout in effect, masks that take no gradient,
   * and the kernel choice would take scaled_dot_product_attention's plain path (the default
   * {@link Attention.Kernel#AUTO} at up to {@link Attention.Kernel#tiledAbove()} scores per head). Other calls
   * compose scaled_dot_product_attention.
   */
  boolean coreApplies(Tensor query, Tensor w, Tensor attnMask, Tensor keyPaddingMask, boolean needWeights, int l,
      int s) {
    DType dt = query.dtype();
    return !needWeights && Grad.enabled() && (!Tracing.active() || Tracing.capturesBackward())
        && Autocast.dtype() == null && (dt == DType.F32 || dt == DType.F64) && w.dtype() == dt
        && !(dropout > 0 && isTraining())
        && kernel.path() == Attention.Path.AUTO && (long) l * s <= kernel.tiledAbove()
        && (attnMask == null || !attnMask.requiresGrad()) && (keyPaddingMask == null || !keyPaddingMask.requiresGrad());
  }

  /**
   * Scaled dot-product attention of the projected qp [N, L, E], kp and vp [N, S, E] (when {@code batchOuter}, else
   * [L, N, E] and [S, N, E]; E = H x hd) with the additive {@code bias} (broadcast to [N, H, L, S], or null), as one
   * autograd node whose output is laid out as qp for the output projection and whose gradients are contiguous in the
   * projections' layouts. {@code proj} is {qp, kp, vp}, or {qkv} for self-attention's packed projection [.., 3E]
   * (q, k and v its column slices), whose gradient is then one [.., 3E] tensor with dq, dk and dv written into its
   * slices. The same products, softmax and bits as scaled_dot_product_attention's plain path (q scaled, scores, mask
   * added, softmax, times v; its backward's products in the same orientations), without that path's chain of
   * per-head views and their copies in backward. The products read k, v and the output gradient, and write the
   * output, dq and dv, as per-head strided views of the projections' layout ({@link #head}), one batched product per
   * head over the N batch elements: GEMM packs its operands anyway, so nothing is copied per head; the scaled q is
   * one pass over q in its own layout (its heads read as views like k's), and dk is ds^T q, which has the bits of the
   * plain path's (q^T ds)^T (the same products in the same order over L), written into its head views. It goes head
   * by head: one head's [N, L, S] scores (1 MiB at N = 16, L = S = 128) are masked, softmaxed and multiplied while in
   * cache, and in backward one head's dp and ds buffers serve every head. Saves the scaled q, the projections and
   * the probabilities.
   *
   * <p>Traced (a training step's trace), it reports itself as one op, {@code attention_core(proj..., bias, heads,
   * batch_first)}, whose replay is this method: the compiled step runs this forward and, through the graph's
   * {@code attention_core_backward} node, this backward rule, as eager does. Its parts (kernels on views) are not
   * reported.
   */
  private static Tensor attentionCore(Tensor[] proj, Tensor bias, int h, boolean batchOuter) {
    Tensor out;
    try (Tracing.Scope inside = Tracing.suspend()) {
      out = attentionCoreUntraced(proj, bias, h, batchOuter);
    }
    if (!Tracing.active()) return out;
    Tensor[] in = Arrays.copyOf(proj, proj.length + 1);
    in[proj.length] = bias;
    return Tracing.op("attention_core", out, in, new Object[] {"heads", h, "batch_first", batchOuter},
        x -> attentionCore(Arrays.copyOf(x, x.length - 1), x[x.length - 1], h, batchOuter));
  }

  private static Tensor attentionCoreUntraced(Tensor[] proj, Tensor bias, int h, boolean batchOuter) {
    boolean packed = proj.length == 1;
    int e = packed ? proj[0].size(2) / 3 : proj[0].size(2);
    int hd = e / h;
    int[] qShape = packed ? new int[] {proj[0].size(0), proj[0].size(1), e} : proj[0].shape();
    int[] kShape = packed ? qShape : proj[1].shape();
    int[] pShape = proj[0].shape();
    int n = batchOuter ? qShape[0] : qShape[1];
    int l = batchOuter ? qShape[1] : qShape[0];
    int s = batchOuter ? kShape[1] : kShape[0];
    double scale = 1 / Math.sqrt(hd);
    Tensor qs;
    Tensor kp;
    Tensor vp;
    Tensor p;
    Tensor out;
    try (Grad off = Grad.off()) {
      Tensor qp = packed ? proj[0].detach().narrow(2, 0, e) : proj[0].detach();
      kp = packed ? proj[0].detach().narrow(2, e, e) : proj[1].detach();
      vp = packed ? proj[0].detach().narrow(2, 2 * e, e) : proj[2].detach();
      qs = qp.mul(scale).contiguous(); // in qp's layout, its heads read as column slices like k's and v's
      // head by head, each head's [N, L, S] block of scores made, masked, softmaxed and multiplied by v while it is
      // in cache; p is laid out head-major, [H, N, L, S]
      Backend be = qs.device().backend();
      p = qs.newEmpty(h, n, l, s);
      out = qs.newEmpty(qShape);
      Tensor scores = qs.newEmpty(n, l, s); // one head's, reused
      for (int i = 0; i < h; i++) {
        Tensor pi = p.select(0, i);
        mm(head(qs, i, hd, batchOuter), head(kp, i, hd, batchOuter).mT(), scores);
        if (bias != null) scores.add_(bias.select(1, bias.size(1) == 1 ? 0 : i));
        be.softmax(scores, 2, false, pi);
        mm(pi, head(vp, i, hd, batchOuter), head(out, i, hd, batchOuter));
      }
    }
    return Autograd.record("attention_core", out, (ctx, g0) -> {
      for (int i = 0; i < proj.length; i++) ctx.in(i); // fails, naming the op, if an input changed in place since the forward
      // under a training step's trace: the graph applies this rule as one node (the gradients are no traced op's)
      try (Grad off = Grad.off(); Tracing.Scope inside = Tracing.suspend()) {
        Backend be = p.device().backend();
        Tensor g = g0.reshape(qShape).contiguous();
        Tensor d = packed ? p.newEmpty(pShape) : null;
        Tensor dq = packed ? d.narrow(2, 0, e) : p.newEmpty(qShape);
        Tensor dk = packed ? d.narrow(2, e, e) : p.newEmpty(kShape);
        Tensor dv = packed ? d.narrow(2, 2 * e, e) : p.newEmpty(kShape);
        Tensor dp = p.newEmpty(n, l, s); // one head's, reused: each head's whole backward runs while they are in cache
        Tensor ds = p.newEmpty(n, l, s);
        for (int i = 0; i < h; i++) {
          Tensor gi = head(g, i, hd, batchOuter);
          Tensor pi = p.select(0, i);
          mm(pi.mT(), gi, head(dv, i, hd, batchOuter));
          mm(gi, head(vp, i, hd, batchOuter).mT(), dp);
          be.softmaxBackward(dp, pi, false, ds);
          mm(ds, head(kp, i, hd, batchOuter), head(dq, i, hd, batchOuter));
          // ds^T q into dk's per-head views: each element is the plain path's (q^T ds)^T element, the same products
          // (a b == b a) summed over L in the same order, written in place instead of transposed and copied
          mm(ds.mT(), head(qs, i, hd, batchOuter), head(dk, i, hd, batchOuter));
        }
        dq.mul_(scale);
        return packed ? new Tensor[] {d} : new Tensor[] {dq, dk, dv};
      }
    }, proj);
  }

  /**
   * Head {@code i} (columns i*hd to (i+1)*hd) of x [N, T, C] (batchOuter) or [T, N, C] as the view [N, T, hd]: a
   * batch of N matrices with rows C (or N*C) apart, which GEMM reads (and writes) in place.
   */
  private static Tensor head(Tensor x, int i, int hd, boolean batchOuter) {
    Tensor cols = x.narrow(2, i * hd, hd);
    return batchOuter ? cols : cols.transpose(0, 1);
  }

  /**
   * out = a b for rank-3 views: on the CPU the product is written straight into out's strides (its rows unit-stride);
   * elsewhere through a contiguous product and a copy.
   */
  private static void mm(Tensor a, Tensor b, Tensor out) {
    if (out.device().isCpu()) {
      out.device().backend().matmul(a, b, out, 0f);
    } else {
      out.copy_(LinalgOps.bmm(a, b));
    }
  }

  /** [L, N, E] (or [N, L, E] when batchOuter) as the per-head view [N, H, L, E / H]. */
  private static Tensor heads(Tensor x, int h, boolean batchOuter) {
    Tensor split = x.reshape(x.size(0), x.size(1), h, x.size(2) / h);
    return batchOuter ? split.permute(0, 2, 1, 3) : split.permute(1, 2, 0, 3);
  }

  /** x [A, B, E] times w [F, E]^T plus b [F] (or null): [A, B, F]. */
  private static Tensor project(Tensor x, Tensor w, Tensor b) {
    int l = x.size(0), n = x.size(1), e = x.size(2);
    Tensor flat = x.reshape(l * n, e);
    return (b == null ? flat.matmul(w.t()) : LinalgOps.addmm(b, flat, w.t())).reshape(l, n, w.size(0));
  }

  /**
   * x [A, B, E] times the packed in-projection weight [3E, E]^T plus its bias [3E] (or null): [A, B, 3E], as a
   * linear layer, whose backward writes the weight's gradient g^T x [3E, E] whole and takes x's as one product.
   */
  private static Tensor projectPacked(Tensor x, Tensor w, Tensor b) {
    int l = x.size(0), n = x.size(1), e = x.size(2);
    return LinalgOps.linear(x.reshape(l * n, e), w, b).reshape(l, n, w.size(0));
  }

  /** The masks as one additive [N or 1, H or 1, L, S] tensor (-inf where not allowed), or null. */
  private Tensor additiveMask(String op, Tensor attnMask, Tensor keyPaddingMask, boolean isCausal, int n, int l, int s,
      DType dtype, dev.ember.tensor.Device device, Tensor keyForMessages) {
    Tensor bias = null;
    if (attnMask != null) {
      Tensor m = toAdditive(attnMask, dtype);
      if (m.dim() == 2 && m.size(0) == l && m.size(1) == s) {
        bias = m.reshape(1, 1, l, s);
      } else if (m.dim() == 3 && m.size(0) == n * numHeads && m.size(1) == l && m.size(2) == s) {
        bias = m.reshape(n, numHeads, l, s);
      } else {
        throw Check.fail(op, "attn_mask must be [L, S] = [" + l + ", " + s + "] or [N*num_heads, L, S] = [" + n * numHeads
            + ", " + l + ", " + s + "]", "attn_mask", attnMask);
      }
    }
    if (keyPaddingMask != null) {
      Tensor m = toAdditive(keyPaddingMask, dtype);
      boolean ok = keyForMessages == null ? m.dim() == 1 && m.size(0) == s : m.dim() == 2 && m.size(0) == n && m.size(1) == s;
      if (!ok) {
        throw Check.fail(op, "key_padding_mask must be [N, S] = [" + n + ", " + s + "] (or [S] unbatched)",
            "key_padding_mask", keyPaddingMask);
      }
      Tensor kp = m.reshape(n, 1, 1, s);
      bias = bias == null ? kp : bias.add(kp);
    }
    if (isCausal) {
      Tensor cm;
      if (device.isCpu()) {
        double[] c = new double[l * s];
        for (int i = 0; i < l; i++) for (int j = i + 1; j < s; j++) c[i * s + j] = Double.NEGATIVE_INFINITY;
        cm = Tensor.of(c, 1, 1, l, s).to(dtype).to(device);
      } else { // the same 0 and -inf made on the device: no [L, S] upload, which would wait for the queue
        Tensor allowed = Tensor.zeros(device, DType.BOOL, l, s);
        device.backend().attention().bandMask(new AttentionKernels.Problem(1, l, s, 1, 1, 1, true, Attention.NO_WINDOW,
            1, 1, null, 0, 0), allowed);
        cm = ElementwiseOps.where(allowed, scalarOn(device, 0, dtype),
            scalarOn(device, Double.NEGATIVE_INFINITY, dtype)).reshape(1, 1, l, s);
      }
      bias = bias == null ? cm : bias.add(cm);
    }
    return bias;
  }

  /**
   * A 0-d {@code dtype} tensor holding {@code value} for an op on {@code device}: a host scalar on the CPU, else one
   * filled on the device (a host scalar meeting device operands is copied up by a transfer that waits for the queue).
   */
  private static Tensor scalarOn(dev.ember.tensor.Device device, double value, DType dtype) {
    return device.isCpu() ? Tensor.scalar(value, dtype) : Tensor.full(value, device, dtype);
  }

  private static Tensor toAdditive(Tensor mask, DType dtype) {
    if (mask.dtype() == DType.BOOL) {
      return ElementwiseOps.where(mask, scalarOn(mask.device(), Double.NEGATIVE_INFINITY, dtype),
          scalarOn(mask.device(), 0, dtype));
    }
    if (!mask.dtype().isFloatingPoint()) {
      throw new IllegalArgumentException("MultiheadAttention: masks must be BOOL or floating point, got " + mask.dtype()
          + " " + Arrays.toString(mask.shape()));
    }
    return mask.dtype() == dtype ? mask : mask.to(dtype);
  }

  @Override
  protected String extraRepr() {
    return "";
  }

  /** The output projection; PyTorch prints it under this class name. */
  static final class NonDynamicallyQuantizableLinear extends Linear {
    NonDynamicallyQuantizableLinear(int features, boolean bias, Generator gen) {
      super(features, features, bias, gen);
    }
  }
}
