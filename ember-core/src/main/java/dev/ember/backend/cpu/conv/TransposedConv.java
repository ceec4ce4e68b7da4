package dev.ember.backend.cpu.conv;

import static dev.ember.backend.cpu.conv.ConvSupport.col2im;
import static dev.ember.backend.cpu.conv.ConvSupport.gemm;
import static dev.ember.backend.cpu.conv.ConvSupport.im2col;
import static dev.ember.backend.cpu.conv.ConvSupport.imagesPerChunk;
import static dev.ember.backend.cpu.conv.ConvSupport.partials;
import static dev.ember.backend.cpu.conv.ConvSupport.scratch;
import static dev.ember.backend.cpu.conv.ConvSupport.sumPartials;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.View;
import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.Rows;
import dev.ember.tensor.Storage;

/**
 * The transposed convolution: the pieces of {@link GemmConv}'s per-image path the other way round (the
 * forward is {@code col = W_g^T x} and col2im onto the output, the backward im2col of the upstream
 * gradient and one GEMM for each gradient).
 */
final class TransposedConv {
  private TransposedConv() {}

  /**
   * out [N, O, g.h, g.w] of the transposed convolution of x [N, Cin, g.oh, g.ow] with
   * w [Cin, O/groups, kh, kw]: per image and group, col = W_g^T x, then col2im onto the output.
   */
  static void forward(View x, View w, double[] bias, int groups, ConvGeometry g, View out) {
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int og = w.shapeRef()[1];
    int o = og * groups;
    int cig = cin / groups;
    int rows = og * g.kk();
    int cols = g.cols();
    if (out.numel() == 0) return;
    boolean direct = g.identity();
    Storage xs = x.storage();
    Storage ws = w.storage();
    Storage os = out.storage();
    Parallel.forEach(n, img -> {
      Storage col = direct ? null : scratch(x.dtype(), rows * cols);
      for (int gi = 0; gi < groups; gi++) {
        int xo = x.offset() + (img * cin + gi * cig) * cols;
        int wo = w.offset() + gi * cig * rows;
        int oo = (img * o + gi * og) * g.hw();
        if (direct) {
          gemm(ws, wo, rows, cig, rows, true, xs, xo, cols, cols, false, os, oo, cols, false);
        } else {
          gemm(ws, wo, rows, cig, rows, true, xs, xo, cols, cols, false, col, 0, cols, false);
          col2im(col, 0, og, g, os, oo);
        }
        if (bias != null) {
          for (int r = 0; r < og; r++) {
            Rows.add(os, oo + r * g.hw(), oo + (r + 1) * g.hw(), bias[gi * og + r]);
          }
        }
      }
    });
  }

  /** dx and dw (either null) of a transposed convolution: im2col of the upstream gradient, then one GEMM for each. */
  static void backward(View x, View w, View gOut, int groups, ConvGeometry g, View dx, View dw) {
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int og = w.shapeRef()[1];
    int o = og * groups;
    int cig = cin / groups;
    int rows = og * g.kk();
    int cols = g.cols();
    boolean needX = dx != null;
    boolean needW = dw != null;
    if (gOut.numel() == 0 || x.numel() == 0) return;
    boolean direct = g.identity();
    Storage xs = x.storage();
    Storage ws = w.storage();
    Storage gs = gOut.storage();
    int per = imagesPerChunk(n, w.numel());
    int chunks = Parallel.chunks(n, per);
    Storage[] part = partials(dw, chunks);
    Parallel.forEach(chunks, t -> {
      Storage col = direct ? null : scratch(x.dtype(), rows * cols);
      for (int img = t * per, n1 = Math.min(n, img + per), n0 = img; img < n1; img++) {
        for (int gi = 0; gi < groups; gi++) {
          int xo = x.offset() + (img * cin + gi * cig) * cols;
          int wo = w.offset() + gi * cig * rows;
          int go = gOut.offset() + (img * o + gi * og) * g.hw();
          Storage cs = gs;
          int cOff = go;
          if (!direct) {
            im2col(gs, go, og, g, col, 0);
            cs = col;
            cOff = 0;
          }
          if (needW) { // dW_g [cig, rows] (+)= x_g [cig, cols] x col^T [cols, rows]
            gemm(xs, xo, cig, cols, cols, false, cs, cOff, rows, cols, true, part[t], gi * cig * rows, rows, img != n0);
          }
          if (needX) { // dx_g [cig, cols] = W_g [cig, rows] x col [rows, cols]
            int dxo = (img * cin + gi * cig) * cols;
            gemm(ws, wo, cig, rows, rows, false, cs, cOff, cols, cols, false, dx.storage(), dxo, cols, false);
          }
        }
      }
    });
    if (needW) sumPartials(part, (int) dw.numel());
  }
}
