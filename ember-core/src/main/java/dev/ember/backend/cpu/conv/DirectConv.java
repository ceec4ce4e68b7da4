package dev.ember.backend.cpu.conv;

import static dev.ember.backend.cpu.conv.ConvSupport.ROWS;
import static dev.ember.backend.cpu.conv.ConvSupport.floats;
import static dev.ember.backend.cpu.conv.ConvSupport.paddedPlanes;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.View;
import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.RowKernels;
import dev.ember.tensor.DType;

/**
 * Direct convolution for few input channels (a first layer on grey or RGB images): each output plane is
 * {@link RowKernels#convPlane} over the zero-padded image, and the weight gradient runs in blocks of
 * {@link RowKernels#convWeightTaps}, instead of column matrices that would be the input copied kh*kw
 * times for a GEMM whose M (the output channels) is too small to tile well.
 */
final class DirectConv {
  private DirectConv() {}

  /** Images per task of the direct kernels (fixed, so the weight-gradient partials do not depend on threads). */
  private static final int DIRECT_IMAGES = 8;
  /** An output gradient in the padded input's pitch, for the direct weight gradient. */
  private static final ThreadLocal<float[]> F_GRAD_PITCH = ThreadLocal.withInitial(() -> new float[0]);

  /**
   * Whether the direct kernels apply: F32, one group, stride 1, undilated, output rows no wider
   * than the kernel's two vectors and at most 4 input channels (a first layer on grey or RGB
   * images). There the column matrix would be the input copied kh*kw times and GEMM's M (the
   * output channels) is too small to tile well; the direct loops read the padded image instead.
   */
  static boolean applies(View x, int groups, ConvGeometry g) {
    return x.dtype() == DType.F32 && groups == 1 && x.shapeRef()[1] <= 4 && g.stride1() && g.ow() <= ROWS.directWidth();
  }

  /**
   * Image img of x copied into this thread's zero-padded buffer: cin planes of ph = oh + kh - 1
   * rows of pw = directWidth() + kw - 1 floats, the image at (top, left) = (ph, pw) padding.
   */
  private static float[] padded(float[] xs, int xOff, int cin, ConvGeometry g, int img, int ph, int pw) {
    return padded(xs, xOff, cin, g, img, ph, pw, 0);
  }

  /** {@link #padded(float[], int, int, ConvGeometry, int, int, int)} followed by {@code extra} zeros. */
  private static float[] padded(float[] xs, int xOff, int cin, ConvGeometry g, int img, int ph, int pw, int extra) {
    return paddedPlanes(xs, xOff + img * cin * g.hw(), cin, g.h(), g.w(), g.ph(), g.pw(), ph, pw, extra);
  }

  /** The forward; with {@code relu} each output plane is clamped at 0 right after it is written (in L1). */
  static void forward(View x, View w, double[] bias, View out, ConvGeometry g, boolean relu) {
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int ph = g.oh() + g.kh() - 1;
    int pw = ROWS.directWidth() + g.kw() - 1;
    int cols = g.cols();
    float[] xs = x.storage().floats();
    float[] ys = out.storage().floats();
    float[] wf = floats(w);
    int taps = cin * g.kk();
    Parallel.forEach(Parallel.chunks(n, DIRECT_IMAGES), t -> {
      for (int img = t * DIRECT_IMAGES, n1 = Math.min(n, img + DIRECT_IMAGES); img < n1; img++) {
        float[] xp = padded(xs, x.offset(), cin, g, img, ph, pw);
        for (int oc = 0; oc < o; oc++) {
          ROWS.convPlane(xp, 0, pw, ph * pw, cin, g.kh(), g.kw(), wf, oc * taps, bias == null ? 0f : (float) bias[oc],
              ys, (img * o + oc) * cols, g.oh(), g.ow());
          if (relu) ConvSupport.relu(out.storage(), (img * o + oc) * cols, (img * o + oc + 1) * cols);
        }
      }
    });
  }

  /**
   * The weight gradient of the direct path as blocks of {@link RowKernels#convWeightTaps}: per image,
   * the input zero-padded to pitch ow + kw - 1 (so tap (ci, i, j) of position p reads
   * xp[ci*plane + i*pitch + j + p]) and the output gradient copied into the same pitch with zeros
   * past ow; output channels in blocks of 6 (a zero plane fills the last), taps in blocks of 4 (extra
   * taps read tap 0 and are dropped). Each task of DIRECT_IMAGES images keeps its own slots, summed
   * in task order at the end, so the result does not depend on the thread count.
   */
  static void weightGrad(View x, View gOut, View dw, ConvGeometry g) {
    if (dw == null) return;
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int o = gOut.shapeRef()[1];
    int lanes = ROWS.convLanes();
    int rows = g.oh() + g.kh() - 1;
    int pitch = g.ow() + g.kw() - 1;
    int positions = (g.oh() * pitch + lanes - 1) / lanes * lanes; // whole vectors over the oh rows
    int cols = g.cols();
    int taps = cin * g.kk();
    int tapsPad = (taps + RowKernels.TAPS_TAPS - 1) / RowKernels.TAPS_TAPS * RowKernels.TAPS_TAPS;
    int chans = (o + RowKernels.TAPS_CHANNELS - 1) / RowKernels.TAPS_CHANNELS * RowKernels.TAPS_CHANNELS;
    int[] xOff = new int[tapsPad];
    for (int ci = 0, t = 0; ci < cin; ci++) {
      for (int i = 0; i < g.kh(); i++) {
        for (int j = 0; j < g.kw(); j++) xOff[t++] = ci * rows * pitch + i * pitch + j;
      }
    }
    int[] gOff = new int[chans];
    for (int k = 0; k < chans; k++) gOff[k] = Math.min(k, o) * positions; // plane o is all zeros
    // the furthest read: the last tap's offset plus the last vector, past the padded planes by at most this
    int extra = positions - g.oh() * pitch + g.kw();
    float[] xs = x.storage().floats();
    float[] gs = gOut.storage().floats();
    int go = gOut.offset();
    int chunks = Parallel.chunks(n, DIRECT_IMAGES);
    float[][] part = new float[chunks][chans * tapsPad * lanes];
    Parallel.forEach(chunks, t -> {
      float[] gp = F_GRAD_PITCH.get();
      int gSize = (o + 1) * positions;
      if (gp.length < gSize) F_GRAD_PITCH.set(gp = new float[gSize]);
      java.util.Arrays.fill(gp, 0, gSize, 0f);
      for (int img = t * DIRECT_IMAGES, n1 = Math.min(n, img + DIRECT_IMAGES); img < n1; img++) {
        float[] xp = padded(xs, x.offset(), cin, g, img, rows, pitch, extra);
        for (int oc = 0; oc < o; oc++) {
          for (int oy = 0; oy < g.oh(); oy++) {
            System.arraycopy(gs, go + (img * o + oc) * cols + oy * g.ow(), gp, oc * positions + oy * pitch, g.ow());
          }
        }
        for (int k0 = 0; k0 < chans; k0 += RowKernels.TAPS_CHANNELS) {
          for (int t0 = 0; t0 < tapsPad; t0 += RowKernels.TAPS_TAPS) {
            ROWS.convWeightTaps(gp, gOff, k0, xp, xOff, t0, positions, part[t], (k0 * tapsPad + t0) * lanes, tapsPad);
          }
        }
      }
    });
    float[] d = dw.storage().floats();
    for (int oc = 0; oc < o; oc++) { // each task's slots summed in slot order, then the tasks in order
      for (int tap = 0; tap < taps; tap++) {
        int at = (oc * tapsPad + tap) * lanes;
        float s = RowKernels.sumSlots(part[0], at, lanes);
        for (int t = 1; t < chunks; t++) s += RowKernels.sumSlots(part[t], at, lanes);
        d[dw.offset() + oc * taps + tap] = s;
      }
    }
  }
}
