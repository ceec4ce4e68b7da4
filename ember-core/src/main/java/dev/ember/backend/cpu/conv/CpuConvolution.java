package dev.ember.backend.cpu.conv;

import static dev.ember.backend.cpu.conv.ConvSupport.GRAIN;
import static dev.ember.backend.cpu.conv.ConvSupport.ROWS;
import static dev.ember.backend.cpu.conv.ConvSupport.biasDoubles;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.ConvolutionKernels;
import dev.ember.backend.SavedColumns;
import dev.ember.backend.View;
import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.Rows;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;

/**
 * The CPU convolution kernels: picks a strategy from the shapes and runs it. Depthwise layers take
 * {@code DepthwiseConv}; F32 one-group 1 x 3 stride-1 layers of at least 32 channels (conv1d with kernel 3)
 * Winograd F(4, 3) ({@code WinogradConv}), 3 x 3 ones F(4x4, 3x3) ({@code Winograd2dConv}: forward, input
 * gradient, and the weight gradient from 64 channels); F32 one-group layers the implicit GEMM ({@code ImplicitConv}) where it fits,
 * the direct kernels ({@code DirectConv}) for few input channels, else GEMM over blocks of images; the
 * rest (F64, groups) GEMM per image ({@code GemmConv}). The transposed convolution is
 * {@code PhaseTransposedConv} (one output phase at a time) where its stride divides its kernel, else
 * {@code TransposedConv}.
 *
 * <p>Threads and determinism: the forward and the input gradient split work by image (each task owns its
 * output rows); the weight gradient splits the batch into a number of chunks fixed by the shapes, each
 * summing its images into its own partial, and the partials are added in chunk order. Inside one task,
 * im2col/col2im and GEMM run inline; with a single image they use the pool themselves. So results are
 * bitwise the same on any thread count. Tensors are contiguous, F32 or F64.
 */
public final class CpuConvolution implements ConvolutionKernels {
  /** The one instance: the kernels keep no state but per-thread scratch buffers. */
  public static final CpuConvolution INSTANCE = new CpuConvolution();

  private CpuConvolution() {}

  @Override
  public SavedColumns newSavedColumns() {
    return new GemmConv.KeptColumns();
  }

  /**
   * Every path writes each output element (bias or product, never adds to what is there): out may be a
   * pooled array that was not zero-filled (ConvolutionTest checks it with NaN-filled pool arrays). The
   * blocked path keeps its column matrices in {@code keep} when they fit the budget.
   */
  @Override
  public void forward(View x, View w, View biasView, int groups, ConvGeometry g, View out, SavedColumns keep) {
    forward(x, w, biasView, groups, g, out, keep, false);
  }

  /**
   * The ReLU is fused into each path's output: in the implicit GEMM's tile stores (registers) and the blocked
   * GEMM's bias copy; the direct, depthwise and per-image paths clamp each plane or group of rows as soon as
   * they have written it, while it is in cache. None reads the output back from memory.
   */
  @Override
  public boolean forwardRelu(View x, View w, View bias, int groups, ConvGeometry g, View out) {
    forward(x, w, bias, groups, g, out, null, true);
    return true;
  }

  private void forward(View x, View w, View biasView, int groups, ConvGeometry g, View out, SavedColumns keep,
      boolean relu) {
    if (out.numel() == 0) return;
    double[] bias = biasDoubles(biasView);
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int cg = c / groups;
    if (groups == c && cg == 1 && groups > 1) {
      DepthwiseConv.forward(x, w, bias, out, o / c, g, relu);
    } else if (WinogradConv.applies(x, o, groups, g)) {
      WinogradConv.forward(x, w, bias, out, g, relu);
    } else if (Winograd2dConv.applies(x, o, groups, g)) {
      Winograd2dConv.forward(x, w, bias, out, g, relu);
    } else if (ImplicitConv.forwardApplies(x, o, groups, g)) {
      ImplicitConv.forward(x, w, bias, out, g, relu);
    } else if (DirectConv.applies(x, groups, g)) {
      DirectConv.forward(x, w, bias, out, g, relu);
    } else if (GemmConv.blocked(x, groups, g)) {
      GemmConv.blockedForward(x, w, bias, out, g, (GemmConv.KeptColumns) keep, relu);
    } else {
      GemmConv.perImageForward(x, w, bias, groups, g, out, relu);
    }
  }

  /** Reuses the forward's column matrices when {@code saved} holds them. */
  @Override
  public void backward(View x, View w, View gOut, int groups, ConvGeometry g, View dx, View dw,
      SavedColumns saved) {
    if (gOut.numel() == 0) return;
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int cg = c / groups;
    if (groups == c && cg == 1 && groups > 1) {
      DepthwiseConv.backward(x, w, gOut, dx, dw, o / c, g);
      return;
    }
    if (WinogradConv.applies(x, o, groups, g)) {
      WinogradConv.backward(x, w, gOut, dx, dw, g);
      return;
    }
    boolean winogradX = dx != null && Winograd2dConv.applies(x, o, groups, g);
    boolean winogradW = dw != null && Winograd2dConv.weightGradApplies(x, o, groups, g);
    if (winogradX) Winograd2dConv.inputGrad(w, gOut, dx, g);
    if (winogradW) Winograd2dConv.weightGrad(x, gOut, dw, g);
    // the implicit passes first (they also take first layers the direct kernels would), then whatever is left
    boolean implicitX = !winogradX && dx != null && ImplicitConv.inputGradApplies(w, groups, g);
    boolean implicitW = !winogradW && dw != null && ImplicitConv.forwardApplies(x, o, groups, g);
    if (implicitX && implicitW) {
      ImplicitConv.backward(x, w, gOut, dx, dw, g); // one pass over the pool for both
    } else if (implicitX) {
      ImplicitConv.inputGrad(w, gOut, dx, g);
    } else if (implicitW) {
      ImplicitConv.weightGrad(x, gOut, dw, g);
    }
    View restX = implicitX || winogradX ? null : dx;
    View restW = implicitW || winogradW ? null : dw;
    if (restX == null && restW == null) return;
    if (dx == null && DirectConv.applies(x, groups, g)) {
      DirectConv.weightGrad(x, gOut, dw, g);
    } else if (GemmConv.blocked(x, groups, g)) { // always so when a pass went implicit or Winograd: never per image
      float[][] kept = saved == null ? null : ((GemmConv.KeptColumns) saved).blocks;
      GemmConv.blockedBackward(x, w, gOut, restX, restW, g, kept);
    } else {
      GemmConv.perImageBackward(x, w, gOut, groups, g, dx, dw);
    }
  }

  @Override
  public void transposedForward(View x, View w, View bias, int groups, ConvGeometry g, View out) {
    if (PhaseTransposedConv.applies(x, w, groups, g)) {
      PhaseTransposedConv.forward(x, w, biasDoubles(bias), g, out);
    } else {
      TransposedConv.forward(x, w, biasDoubles(bias), groups, g, out);
    }
  }

  /**
   * The phase path writes every output pixel (each belongs to one phase, each phase has k/s taps a side), every
   * element of dx (its tiles or the copy out of them) and of dw (laid out from the partials).
   */
  @Override
  public boolean transposedWritesAll(View x, View w, int groups, ConvGeometry g) {
    return PhaseTransposedConv.applies(x, w, groups, g);
  }

  @Override
  public void transposedBackward(View x, View w, View gOut, int groups, ConvGeometry g, View dx, View dw) {
    if (PhaseTransposedConv.applies(x, w, groups, g)) {
      PhaseTransposedConv.backward(x, w, gOut, g, dx, dw);
    } else {
      TransposedConv.backward(x, w, gOut, groups, g, dx, dw);
    }
  }

  /** Float32 planes are summed in float vector lanes, the planes in double. */
  @Override
  public double[] channelSums(View g, int n, int c, int s) {
    double[] out = new double[c];
    Storage gs = g.storage();
    int per = Math.max(1, GRAIN / Math.max(1, n * s));
    Parallel.forEach(Parallel.chunks(c, per), t -> {
      for (int ch = t * per, c1 = Math.min(c, ch + per); ch < c1; ch++) {
        double acc = 0;
        for (int img = 0; img < n; img++) {
          int o = g.offset() + (img * c + ch) * s;
          // float32: each plane summed in float vector lanes, the planes in double
          acc += gs.dtype() == DType.F32 ? ROWS.sum(gs.floats(), o, s) : Rows.sum(gs, o, s);
        }
        out[ch] = acc;
      }
    });
    return out;
  }
}
