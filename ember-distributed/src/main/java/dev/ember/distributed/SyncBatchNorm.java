package dev.ember.distributed;

import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.autograd.Tracing;
import dev.ember.backend.NormalizationKernels;
import dev.ember.nn.BatchNormBase;
import dev.ember.nn.Module;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Map;
import java.util.Objects;

/**
 * Batch normalization whose training statistics are those of the global batch, all ranks of a
 * {@link ProcessGroup} together, as PyTorch's {@code nn.SyncBatchNorm}: N ranks at batch B normalize as one
 * {@code BatchNorm} on the concatenated batch of N*B (what a small per-rank batch needs). Opt-in: convert a model's
 * {@code BatchNorm1d}/{@code BatchNorm2d} layers with {@link #convertSyncBatchNorm(Module, ProcessGroup)} before
 * wrapping it in {@link DistributedDataParallel}.
 *
 * <ul>
 *   <li><b>Forward (training).</b> Each rank computes its per-channel count, mean and sum of squared deviations
 *       (M2) in float64; one {@link ProcessGroup#allGather(double[]) allgather} exchanges them and every rank
 *       combines them in rank order (Chan's parallel formula: the sum, the sum of squares and the count of the
 *       global batch without the cancellation of {@code E[x^2] - E[x]^2}), so every rank gets the same bits. The
 *       ranks' batch sizes may differ (a rank may even have none). The running statistics are updated from the
 *       global statistics (unbiased variance), so they stay equal on every rank.
 *   <li><b>Backward.</b> The two per-channel reductions of batch norm's input gradient, {@code sum(g)} and
 *       {@code sum(g * xhat)}, are allreduced (one float64 SUM of 2C values), so
 *       {@code dx = w rstd (g - sum(g) / N - xhat sum(g xhat) / N)} is the gradient of the sum of every rank's
 *       loss. The weight and bias gradients are the rank's own ({@code sum(g xhat)}, {@code sum(g)}), which DDP
 *       averages as it does every parameter's.
 *   <li><b>Eval</b>, a world of one, or a module without running statistics in eval: a plain batch norm, no
 *       collective (as PyTorch).
 * </ul>
 *
 * <p>Every rank must run the same forwards and backwards (each is a collective). Float32 and float64 inputs
 * [N, C, *]; the input gradient is computed in float64 and rounded once.
 */
public final class SyncBatchNorm extends BatchNormBase {
  private static final String OP = "sync_batch_norm";
  private final ProcessGroup group;

  /** eps 1e-5, momentum 0.1, affine, tracking running statistics (PyTorch's defaults), synchronized over {@code group}. */
  public SyncBatchNorm(int numFeatures, ProcessGroup group) {
    this(numFeatures, 1e-5, 0.1, true, true, group);
  }

  /** {@code momentum} null gives a cumulative moving average of the batch statistics. */
  public SyncBatchNorm(int numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats,
      ProcessGroup group) {
    super(numFeatures, eps, momentum, affine, trackRunningStats);
    this.group = Objects.requireNonNull(group, "SyncBatchNorm: group is null");
  }

  /** The process group the statistics are synchronized over. */
  public ProcessGroup group() {
    return group;
  }

  /**
   * Replaces every {@code BatchNorm1d}/{@code BatchNorm2d} (any {@link BatchNormBase} but a SyncBatchNorm) in
   * {@code module}'s tree by a SyncBatchNorm over {@code group} with the same settings, training mode and the same
   * parameter and buffer tensors (an optimizer built before keeps working), as PyTorch's
   * {@code nn.SyncBatchNorm.convert_sync_batchnorm}. Returns {@code module}, or its replacement when it is itself a
   * batch norm.
   */
  public static Module convertSyncBatchNorm(Module module, ProcessGroup group) {
    Objects.requireNonNull(module, "convertSyncBatchNorm: module is null");
    Objects.requireNonNull(group, "convertSyncBatchNorm: group is null");
    if (module instanceof BatchNormBase bn && !(module instanceof SyncBatchNorm)) return convert(bn, group);
    for (Map.Entry<String, Module> e : new ArrayList<>(module.namedChildren().entrySet())) {
      Module converted = convertSyncBatchNorm(e.getValue(), group);
      if (converted != e.getValue()) module.replaceChild(e.getKey(), converted);
    }
    return module;
  }

  private static SyncBatchNorm convert(BatchNormBase bn, ProcessGroup group) {
    SyncBatchNorm s = new SyncBatchNorm(bn.numFeatures(), bn.eps(), bn.momentum(), bn.affine(),
        bn.trackRunningStats(), group);
    String[] names = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
    for (String n : names) { // re-registered in PyTorch's order, so state-dict keys keep it
      if (s.hasParam(n)) s.removeParameter(n);
      if (s.hasBuffer(n)) s.removeBuffer(n);
    }
    for (String n : names) {
      if (bn.hasParam(n)) {
        Tensor p = bn.param(n);
        boolean trainable = p == null || p.requiresGrad();
        s.registerParameter(n, p);
        if (p != null) p.requiresGrad(trainable);
      } else if (bn.hasBuffer(n)) {
        s.registerBuffer(n, bn.buffer(n));
      }
    }
    s.train(bn.isTraining());
    return s;
  }

  @Override
  protected void checkInputDim(Tensor input) {
    if (input.dim() < 2) {
      throw Check.fail("SyncBatchNorm", "expected at least 2-d input [N, C, *] (got " + input.dim() + "-d input)",
          "input", input);
    }
  }

  @Override
  public Tensor forward(Tensor input) {
    if (!isTraining() || group.worldSize() == 1) return super.forward(input);
    checkInputDim(input);
    if (input.size(1) != numFeatures()) {
      throw Check.fail("SyncBatchNorm", "expected " + numFeatures() + " channels in dimension 1, got "
          + input.size(1), "input", input);
    }
    if (input.dtype() != DType.F32 && input.dtype() != DType.F64) {
      throw Check.fail(OP, "input must be float32 or float64, got " + input.dtype().torchName(), "input", input);
    }
    Tracing.unsupported(OP, "a collective across the ranks of a process group");
    double factor = momentum() == null ? 0.0 : momentum();
    if (trackRunningStats()) {
      Tensor nbt = buffer("num_batches_tracked");
      try (Grad ignored = Grad.off()) {
        nbt.add_(1);
      }
      if (momentum() == null) factor = 1.0 / nbt.toLongArray()[0];
    }
    return syncBatchNorm(input, runningMean(), runningVar(), weight(), bias(), factor, eps(), group);
  }

  /**
   * The training forward: global statistics, the affine pass, the running statistics, and the backward whose two
   * reductions are allreduced.
   */
  static Tensor syncBatchNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
      double momentum, double eps, ProcessGroup group) {
    int[] shape = input.shape();
    int n = shape[0];
    int c = shape[1];
    int spatial = 1;
    for (int d = 2; d < shape.length; d++) spatial *= shape[d];
    int s = spatial;
    for (Tensor t : new Tensor[] {weight, bias, runningMean, runningVar}) {
      if (t != null && t.dtype() != input.dtype()) {
        throw Check.fail(OP, "parameters and statistics must have the input's dtype " + input.dtype().torchName()
            + ", got " + t.dtype().torchName(), "input", input, "tensor", t);
      }
    }
    NormalizationKernels kernels = input.device().backend().normalization();
    Tensor x = input.contiguous();
    long localCount = (long) n * s;
    double[] local = new double[1 + 2 * c]; // count, mean[c], M2[c]
    local[0] = localCount;
    if (localCount > 0) {
      double[][] st = kernels.channelStats(x, n, c, s);
      for (int ch = 0; ch < c; ch++) {
        local[1 + ch] = st[0][ch];
        local[1 + c + ch] = st[1][ch] * localCount;
      }
    }
    double[] all = group.allGather(local);
    double total = 0;
    double[] mean = new double[c];
    double[] m2 = new double[c];
    for (int r = 0; r < group.worldSize(); r++) { // Chan et al.: merge (count, mean, M2) in rank order
      int o = r * local.length;
      double cnt = all[o];
      if (cnt == 0) continue;
      double merged = total + cnt;
      for (int ch = 0; ch < c; ch++) {
        double delta = all[o + 1 + ch] - mean[ch];
        mean[ch] += delta * cnt / merged;
        m2[ch] += all[o + 1 + c + ch] + delta * delta * total * cnt / merged;
      }
      total = merged;
    }
    if (total <= 1) {
      throw Check.fail(OP, "expected more than 1 value per channel across the " + group.worldSize()
          + " ranks when training (got " + (long) total + ")", "input", input);
    }
    double count = total;
    double[] rstd = new double[c];
    for (int ch = 0; ch < c; ch++) rstd[ch] = 1 / Math.sqrt(m2[ch] / count + eps);
    double[] w = weight == null ? null : weight.toDoubleArray();
    double[] b = bias == null ? null : bias.toDoubleArray();
    Tensor out = input.newEmpty(shape);
    if (localCount > 0) {
      double[][] ss = NormalizationKernels.channelScaleShift(mean, rstd, w, b, n);
      kernels.channelAffine(x, ss[0], ss[1], out, n, c, s);
    }
    if (runningMean != null) {
      double[] unbiased = new double[c];
      for (int ch = 0; ch < c; ch++) unbiased[ch] = m2[ch] / (count - 1);
      kernels.updateRunning(runningMean, mean, momentum);
      runningMean.storage().bumpVersion();
      kernels.updateRunning(runningVar, unbiased, momentum);
      runningVar.storage().bumpVersion();
    }
    return Autograd.record(OP, out, (ctx, g) -> {
      Tensor xs = ctx.in(0).contiguous();
      Tensor gs = g.contiguous();
      Tensor sums = xs.newZeros(DType.F64, 2, c); // row 0: sum(g xhat), row 1: sum(g), this rank's
      if (localCount > 0) {
        kernels.channelBackward(xs, gs, mean, rstd, null, n, c, s, true, null, sums.select(0, 0), sums.select(0, 1));
      }
      double[] mine = sums.toDoubleArray();
      Tensor[] grads = new Tensor[3];
      if (ctx.edgeNeeded(0)) { // every rank's input needs its gradient, or none does: the same collectives
        double[] global = mine.clone();
        group.allReduce(global, AllReduceOp.SUM);
        grads[0] = inputGrad(xs, gs, mean, rstd, w, global, count, n, c, s);
      }
      if (ctx.edgeNeeded(1)) grads[1] = Tensor.of(java.util.Arrays.copyOfRange(mine, 0, c), c).to(ctx.in(1).dtype());
      if (ctx.edgeNeeded(2)) grads[2] = Tensor.of(java.util.Arrays.copyOfRange(mine, c, 2 * c), c).to(ctx.in(2).dtype());
      for (int i = 1; i < 3; i++) {
        if (grads[i] != null && !ctx.in(i).device().equals(Device.CPU)) grads[i] = grads[i].to(ctx.in(i).device());
      }
      return grads;
    }, new Tensor[] {input, weight, bias});
  }

  /** dx = w rstd (g - sum(g) / N - xhat sum(g xhat) / N) with the global sums, in float64, rounded once. */
  private static Tensor inputGrad(Tensor x, Tensor g, double[] mean, double[] rstd, double[] w, double[] sums,
      double count, int n, int c, int s) {
    boolean f64 = x.dtype() == DType.F64;
    double[] xd = f64 ? x.toDoubleArray() : null;
    double[] gd = f64 ? g.toDoubleArray() : null;
    float[] xf = f64 ? null : x.toFloatArray();
    float[] gf = f64 ? null : g.toFloatArray();
    double[] od = f64 ? new double[xd.length] : null;
    float[] of = f64 ? null : new float[xf.length];
    for (int bi = 0; bi < n; bi++) {
      for (int ch = 0; ch < c; ch++) {
        double mu = mean[ch];
        double rs = rstd[ch];
        double wr = (w == null ? 1 : w[ch]) * rs;
        double a = sums[c + ch] / count;
        double bb = sums[ch] / count;
        int o = (bi * c + ch) * s;
        if (f64) {
          for (int i = o; i < o + s; i++) od[i] = wr * (gd[i] - a - (xd[i] - mu) * rs * bb);
        } else {
          for (int i = o; i < o + s; i++) of[i] = (float) (wr * (gf[i] - a - (xf[i] - mu) * rs * bb));
        }
      }
    }
    Tensor dx = f64 ? Tensor.of(od, x.shape()) : Tensor.of(of, x.shape());
    return x.device().equals(Device.CPU) ? dx : dx.to(x.device());
  }
}
