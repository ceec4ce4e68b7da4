package dev.ember.backend.cpu.conv;

import static dev.ember.backend.cpu.conv.ConvSupport.ROWS;
import static dev.ember.backend.cpu.conv.ConvSupport.floats;
import static dev.ember.backend.cpu.conv.ConvSupport.imagesPerChunk;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.View;
import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.RowKernels;
import dev.ember.tensor.DType;
import java.util.Arrays;

/**
 * The transposed convolution of stride s with a kernel that is a multiple of s, by output phase (the sub-pixel
 * decomposition): output pixel (s*q + a, s*r + b) receives exactly the taps i = (a + p) mod s + s*t, j likewise, of
 * input pixels (q + const - t, r + const' - t'), so each of the s*s phases is a stride-1 convolution of the input with
 * a (k/s) x (k/s) slice of the kernel, run as {@link ImplicitConv}'s implicit GEMM (K = Cin * (k/s)^2, no column
 * matrix, no col2im) and stored straight into its phase of the output. The backward splits the upstream gradient
 * into its s*s dense phase planes once per image; on them the input gradient is one stride-1 implicit GEMM with
 * K = O*kh*kw (tap (o, i, j) reads phase ((i - p) mod s, (j - p) mod s) shifted by floor((i - p) / s)), and the
 * weight gradient {@link RowKernels#convWeightTile} (or {@link RowKernels#convWeightTile6}) over the same planes and
 * taps with the input as the packed operand. F32, one group, undilated; other layers keep {@link TransposedConv}.
 *
 * <p>Threads: the forward runs one task per image (per phase for one image), the backward one per chunk of images (fixed by the
 * shapes, as {@link ConvSupport#imagesPerChunk}), each with its own weight-gradient partial summed in chunk order,
 * so the bits do not depend on the thread count. Each output element is one fma chain in a fixed tap order.
 */
final class PhaseTransposedConv {
  private PhaseTransposedConv() {}

  /** Most floats of padded planes per image: the input's (forward) or the upstream gradient's phase planes. */
  private static final long PLANE_FLOATS = 1L << 21;
  private static final ThreadLocal<float[]> F_PHASES = ThreadLocal.withInitial(() -> new float[0]);
  private static final ThreadLocal<float[]> F_TILES = ThreadLocal.withInitial(() -> new float[0]);
  private static final ThreadLocal<float[]> F_PACKED = ThreadLocal.withInitial(() -> new float[0]);

  /** This thread's buffer held in {@code local}, of at least n floats (contents undefined). */
  private static float[] buffer(ThreadLocal<float[]> local, int n) {
    float[] a = local.get();
    if (a.length < n) local.set(a = new float[n]);
    return a;
  }

  /**
   * One dimension of the transposed convolution: stride s, kernel k (a multiple of s), padding p, input size n and
   * output size big. Output index s*q + a (phase a) takes kernel indices first(a) + s*t from input q + shift(a) - t,
   * t &lt; taps(); the input gradient's tap i reads phase gradPhase(i) at q + gradShift(i).
   */
  record Axis(int s, int k, int p, int n, int big) {
    int taps() {
      return k / s;
    }

    /** Output positions of phase a. */
    int count(int a) {
      return big > a ? (big - a + s - 1) / s : 0;
    }

    int first(int a) {
      return (a + p) % s;
    }

    int shift(int a) {
      return (a + p) / s;
    }

    /** Zeros before the input so that every phase's first tap reads at or after index 0. */
    int pad() {
      int m = 0;
      for (int a = 0; a < s; a++) if (count(a) > 0) m = Math.max(m, taps() - 1 - shift(a));
      return m;
    }

    /** The padded input's length: the input after pad() and every phase's last read. */
    int padded() {
      int len = n + pad();
      for (int a = 0; a < s; a++) if (count(a) > 0) len = Math.max(len, count(a) + shift(a) + pad());
      return len;
    }

    int gradPhase(int i) {
      return Math.floorMod(i - p, s);
    }

    int gradShift(int i) {
      return Math.floorDiv(i - p, s);
    }

    /** Zeros before each phase plane of the upstream gradient: -gradShift(0). */
    int gradPad() {
      return Math.max(0, -gradShift(0));
    }

    /** A phase plane's padded length: its positions and the input gradient's last read. */
    int gradPadded() {
      return Math.max(count(0) + gradPad(), n + gradShift(k - 1) + gradPad());
    }
  }

  /**
   * F32, one group, undilated, k a multiple of s in both dimensions with a stride above 1 in one, at least 8 input and
   * output channels (narrower layers would fill little of the 8-channel tiles; not measured), padding below the
   * kernel (output_padding any), and the padded planes within PLANE_FLOATS.
   */
  static boolean applies(View x, View w, int groups, ConvGeometry g) {
    int cin = x.shapeRef()[1];
    int o = w.shapeRef()[1];
    if (x.dtype() != DType.F32 || groups != 1 || g.dh() != 1 || g.dw() != 1 || cin < 8 || o < 8) return false;
    if (g.kh() % g.sh() != 0 || g.kw() % g.sw() != 0 || g.sh() * g.sw() < 2) return false;
    if (g.ph() >= g.kh() || g.pw() >= g.kw() || g.h() <= 0 || g.w() <= 0 || g.oh() <= 0 || g.ow() <= 0) return false;
    Axis ay = axisY(g);
    Axis ax = axisX(g);
    long fwd = (long) cin * ay.padded() * ax.padded();
    long bwd = (long) o * g.sh() * g.sw() * ay.gradPadded() * ax.gradPadded();
    return fwd <= PLANE_FLOATS && bwd <= PLANE_FLOATS;
  }

  private static Axis axisY(ConvGeometry g) {
    return new Axis(g.sh(), g.kh(), g.ph(), g.oh(), g.h());
  }

  private static Axis axisX(ConvGeometry g) {
    return new Axis(g.sw(), g.kw(), g.pw(), g.ow(), g.w());
  }

  /**
   * out [N, O, g.h, g.w] = the transposed convolution of x [N, Cin, g.oh, g.ow] with w [Cin, O, kh, kw] plus bias (or
   * null): per image and phase, the implicit GEMM over the input zero-padded once for all phases, the tiles stored in
   * this thread's buffer, then spread into the phase's pixels. Each chain starts from the bias and takes the taps
   * in (input channel, kernel row, kernel column) order, the kernel rows and columns of the phase from last to first.
   */
  static void forward(View x, View w, double[] bias, ConvGeometry g, View out) {
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int o = w.shapeRef()[1];
    int kh = g.kh();
    int kw = g.kw();
    int sh = g.sh();
    int sw = g.sw();
    Axis ay = axisY(g);
    Axis ax = axisX(g);
    int ty = ay.taps();
    int tx = ax.taps();
    int kdim = cin * ty * tx;
    int top = ay.pad();
    int left = ax.pad();
    int rows = ay.padded();
    int pitch = ax.padded();
    int plane = rows * pitch;
    int phases = sh * sw;
    int tile = ImplicitConv.tileFor(o);
    int tiles = Math.ceilDiv(o, tile);
    int lanes = ROWS.convLanes();
    float[] wf = floats(w);
    ImplicitConv.Taps[] taps = new ImplicitConv.Taps[phases];
    ImplicitConv.Slots[] slots = new ImplicitConv.Slots[phases];
    for (int a = 0; a < sh; a++) {
      for (int b = 0; b < sw; b++) {
        if (ay.count(a) == 0 || ax.count(b) == 0) continue;
        int r0 = ay.shift(a) - (ty - 1) + top;
        int c0 = ax.shift(b) - (tx - 1) + left;
        int[] offs = new int[kdim];
        for (int ci = 0, k = 0; ci < cin; ci++) {
          for (int u = 0; u < ty; u++) {
            for (int v = 0; v < tx; v++) offs[k++] = ci * plane + (r0 + u) * pitch + c0 + v;
          }
        }
        int i0 = ay.first(a);
        int j0 = ax.first(b);
        int[] kbase = new int[kdim]; // tap k = (ci, u, v) multiplies w[ci, oc, i0 + sh*(ty-1-u), j0 + sw*(tx-1-v)]
        for (int k = 0; k < kdim; k++) {
          int ci = k / (ty * tx);
          int i = i0 + sh * (ty - 1 - (k / tx) % ty);
          int j = j0 + sw * (tx - 1 - k % tx);
          kbase[k] = (ci * o * kh + i) * kw + j;
        }
        float[] wp = ImplicitConv.packTiles(o, tile, kh * kw, kbase, wf);
        taps[a * sw + b] = ImplicitConv.Taps.of(tile, offs, wp, null);
        slots[a * sw + b] = ImplicitConv.slots(ay.count(a), ax.count(b), pitch);
      }
    }
    float[] init = null;
    if (bias != null) { // whole tiles: convTile reads init per tile
      init = new float[tiles * tile];
      for (int i = 0; i < o; i++) init[i] = (float) bias[i];
    }
    float[] b0 = init;
    float[] xs = x.storage().floats();
    float[] ys = out.storage().floats();
    int inPlane = g.oh() * g.ow();
    int outPlane = g.hw();
    // one task per image (its input padded once for all phases), or per row phase for a single image
    boolean byImage = n > 1;
    int[] base = new int[sw + 1]; // where the tiles of column phase b start in a task's buffer (room for any layout)
    for (int b = 0; b < sw; b++) base[b + 1] = base[b] + tiles * tile * (ay.count(0) * pitch + lanes);
    Parallel.forEach(byImage ? n : sh, task -> {
      int img = byImage ? task : 0;
      float[] xp = ConvSupport.paddedPlanes(xs, x.offset() + img * cin * inPlane, cin, g.oh(), g.ow(), top, left, rows,
          pitch, pitch + lanes);
      float[] y = buffer(F_TILES, base[sw]);
      for (int a = byImage ? 0 : task, a1 = byImage ? sh : task + 1; a < a1; a++) {
        int qh = ay.count(a);
        if (qh == 0) continue;
        for (int b = 0; b < sw; b++) { // the tiles of every column phase of row phase a
          int ph = a * sw + b;
          if (taps[ph] == null) continue;
          ImplicitConv.Slots sl = slots[ph];
          int ldy = ldy(qh, ax.count(b), pitch, sl);
          for (int t = 0; t < tiles; t++) taps[ph].tile(t, xp, b0, sl, sl.direct(), y, base[b] + t * tile * ldy, ldy, false);
        }
        // then each output row s*q + a of each channel from its phases' rows, written front to back
        if (sw == 2 && taps[a * sw] != null && taps[a * sw + 1] != null) { // both column phases zipped, row by row
          ImplicitConv.Slots s0 = slots[a * sw];
          ImplicitConv.Slots s1 = slots[a * sw + 1];
          int n0 = ax.count(0);
          int n1 = ax.count(1);
          int ld0 = ldy(qh, n0, pitch, s0);
          int ld1 = ldy(qh, n1, pitch, s1);
          int rs0 = s0.direct() ? n0 : pitch;
          int rs1 = s1.direct() ? n1 : pitch;
          int ds = sh * g.w();
          for (int oc = 0; oc < o; oc++) {
            int src0 = base[0] + oc * ld0;
            int src1 = base[1] + oc * ld1;
            int d = out.offset() + (img * o + oc) * outPlane + a * g.w();
            for (int q = 0; q < qh; q++, src0 += rs0, src1 += rs1, d += ds) {
              ROWS.interleave2(y, src0, y, src1, ys, d, n1);
              if (n0 > n1) ys[d + 2 * n1] = y[src0 + n1];
            }
          }
          continue;
        }
        for (int oc = 0; oc < o; oc++) {
          for (int q = 0; q < qh; q++) {
            int d = out.offset() + (img * o + oc) * outPlane + (sh * q + a) * g.w();
            for (int b = 0; b < sw; b++) {
              int qw = ax.count(b);
              if (taps[a * sw + b] == null) continue;
              ImplicitConv.Slots sl = slots[a * sw + b];
              int src = base[b] + oc * ldy(qh, qw, pitch, sl) + q * (sl.direct() ? qw : pitch);
              for (int r = 0; r < qw; r++) ys[d + b + r * sw] = y[src + r];
            }
          }
        }
      }
    });
  }

  /** Floats per output channel of a phase's tiles: its plane, or the pitch layout when the slots are not direct. */
  private static int ldy(int qh, int qw, int pitch, ImplicitConv.Slots slots) {
    return slots != null && slots.direct() ? qh * qw : qh * pitch + ROWS.convLanes();
  }

  /**
   * The s*s phase planes of one image's upstream gradient src [o, big_y, big_x] in this thread's buffer: plane
   * (oc*sh + a)*sw + b holds pixel (sh*q + a, sw*r + b) at (q + gradPad_y, r + gradPad_x) of rows x pitch zeros,
   * followed by {@code extra} zeros.
   */
  private static float[] phasePlanes(float[] src, int so, int o, ConvGeometry g, Axis ay, Axis ax, int rows, int pitch,
      int extra) {
    int sh = g.sh();
    int sw = g.sw();
    int plane = rows * pitch;
    int size = o * sh * sw * plane + extra;
    float[] d = buffer(F_PHASES, size);
    int top = ay.gradPad();
    int left = ax.gradPad();
    // zeros everywhere first, in one fill: per-row fills of the one-column borders (two calls a row, 4,096 an image
    // at the k4 s2 row's 32 channels) took ~30 us an image, more than the copy itself
    Arrays.fill(d, 0, size, 0f);
    for (int oc = 0; oc < o; oc++) {
      for (int a = 0; a < sh; a++) {
        int qh = ay.count(a);
        if (sw == 2) { // each source row read once, front to back, into its two column phases
          int n0 = ax.count(0);
          int n1 = ax.count(1);
          int d0 = ((oc * sh + a) * sw) * plane + top * pitch + left;
          int d1 = d0 + plane;
          for (int q = 0; q < qh; q++) {
            int s = so + (oc * g.h() + sh * q + a) * g.w();
            int e0 = d0 + q * pitch;
            int e1 = d1 + q * pitch;
            ROWS.deinterleave2(src, s, d, e0, d, e1, n1);
            if (n0 > n1) d[e0 + n1] = src[s + 2 * n1];
          }
          continue;
        }
        for (int b = 0; b < sw; b++) {
          int base = ((oc * sh + a) * sw + b) * plane + top * pitch + left;
          int qw = ax.count(b);
          for (int q = 0; q < qh; q++) {
            int s = so + (oc * g.h() + sh * q + a) * g.w() + b;
            int dd = base + q * pitch;
            for (int r = 0; r < qw; r++) d[dd + r] = src[s + r * sw];
          }
        }
      }
    }
    return d;
  }

  /**
   * dx [N, Cin, g.oh, g.ow] and dw [Cin, O, kh, kw] (either null) from gOut [N, O, g.h, g.w]: per image the phase
   * planes of gOut, then dx by the implicit GEMM over taps (o, i, j) in weight order, and dw's partial of the image's
   * chunk by {@link RowKernels#convWeightTile} over the same taps against the image packed position-major.
   */
  static void backward(View x, View w, View gOut, ConvGeometry g, View dx, View dw) {
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int o = w.shapeRef()[1];
    int kh = g.kh();
    int kw = g.kw();
    int sh = g.sh();
    int sw = g.sw();
    int hh = g.oh(); // the input's (and dx's) size
    int ww = g.ow();
    int cols = hh * ww;
    Axis ay = axisY(g);
    Axis ax = axisX(g);
    int rows = ay.gradPadded();
    int pitch = ax.gradPadded();
    int plane = rows * pitch;
    int kdim = o * kh * kw;
    int lanes = ROWS.convLanes();
    int extra = pitch + lanes;
    int[] offs = new int[kdim];
    for (int oc = 0, k = 0; oc < o; oc++) {
      for (int i = 0; i < kh; i++) {
        for (int j = 0; j < kw; j++) {
          offs[k++] = ((oc * sh + ay.gradPhase(i)) * sw + ax.gradPhase(j)) * plane
              + (ay.gradShift(i) + ay.gradPad()) * pitch + ax.gradShift(j) + ax.gradPad();
        }
      }
    }
    float[] wf = floats(w);
    // dx: output channel ci, tap k = (oc, i, j) multiplies w[ci, oc, i, j] = wf[ci*kdim + k]
    int tile = ImplicitConv.tileFor(cin);
    int tiles = Math.ceilDiv(cin, tile);
    ImplicitConv.Taps taps = dx == null ? null
        : ImplicitConv.Taps.of(tile, offs, ImplicitConv.packTiles(cin, tile, kdim, ImplicitConv.identity(kdim), wf), null);
    ImplicitConv.Slots slots = ImplicitConv.slots(hh, ww, pitch);
    boolean straight = slots.direct() && cin % tile == 0;
    // dw: partial[k*cpad + ci] over tiles of taps x `width` input channels (see ImplicitConv.weightGrad); where the
    // channels fill them, tiles of 6 taps x 4 vectors (convWeightTile6: per position 4 loads and 6 broadcasts where
    // the 12 x 2 tile takes 2 and 12, and 6 tap offsets held instead of 12). Same chains either way, so the same bits
    boolean narrow = cin <= lanes;
    boolean six = !narrow && cin % ROWS.convWeightWidth6() == 0;
    int width = narrow ? lanes : six ? ROWS.convWeightWidth6() : ROWS.convWeightWidth();
    int wtaps = six ? RowKernels.WEIGHT_TAPS6 : RowKernels.WEIGHT_TAPS;
    int kpad = Math.ceilDiv(kdim, wtaps) * wtaps;
    int ctiles = Math.ceilDiv(cin, width);
    int cpad = ctiles * width;
    int[] woffs = Arrays.copyOf(offs, kpad); // taps past kdim read offset 0 into rows never summed
    int rowBlock = Math.max(1, 512 / ww);
    // the chunks as the 12-tap tiles' partials size them, whichever tile runs (cpad is the same for both)
    int per = dw == null ? 1
        : imagesPerChunk(n, (long) Math.ceilDiv(kdim, RowKernels.WEIGHT_TAPS) * RowKernels.WEIGHT_TAPS * cpad);
    int chunks = Parallel.chunks(n, per);
    // each chunk's partial allocated (zeroed) in its own task, so the zeroing is not serial
    float[][] part = dw == null ? null : new float[chunks][];
    float[] xs = x.storage().floats();
    float[] gs = gOut.storage().floats();
    Parallel.forEach(chunks, t -> {
      for (int img = t * per, n1 = Math.min(n, img + per); img < n1; img++) {
        float[] gq = phasePlanes(gs, gOut.offset() + img * o * g.hw(), o, g, ay, ax, rows, pitch, extra);
        if (dx != null) {
          float[] ds = dx.storage().floats();
          int dOff = dx.offset() + img * cin * cols;
          if (straight) {
            for (int c = 0; c < tiles; c++) taps.tile(c, gq, null, slots, true, ds, dOff + c * tile * cols, cols, false);
          } else {
            int ldy = hh * pitch + lanes;
            float[] y = buffer(F_TILES, tiles * tile * ldy);
            for (int c = 0; c < tiles; c++) taps.tile(c, gq, null, slots, false, y, c * tile * ldy, ldy, false);
            for (int ci = 0; ci < cin; ci++) {
              for (int q = 0; q < hh; q++) System.arraycopy(y, ci * ldy + q * pitch, ds, dOff + (ci * hh + q) * ww, ww);
            }
          }
        }
        if (dw != null) {
          float[] acc = part[t] == null ? (part[t] = new float[kpad * cpad]) : part[t];
          float[] gp = buffer(F_PACKED, cpad * cols);
          ROWS.packPositionMajor(xs, x.offset() + img * cin * cols, cin, cpad, cols, width, gp);
          for (int ct = 0; ct < ctiles; ct++) {
            for (int oy = 0; oy < hh; oy += rowBlock) {
              int rb = Math.min(rowBlock, hh - oy);
              int gpo = (ct * cols + oy * ww) * width;
              for (int k0 = 0; k0 < kpad; k0 += wtaps) {
                if (six) {
                  ROWS.convWeightTile6(gq, oy * pitch, woffs, k0, pitch, rb, ww, gp, gpo, acc, k0 * cpad + ct * width,
                      cpad);
                } else if (narrow) {
                  ROWS.convWeightTileNarrow(gq, oy * pitch, woffs, k0, pitch, rb, ww, gp, gpo, acc, k0 * cpad + ct * width,
                      cpad);
                } else {
                  ROWS.convWeightTile(gq, oy * pitch, woffs, k0, pitch, rb, ww, gp, gpo, acc, k0 * cpad + ct * width,
                      cpad);
                }
              }
            }
          }
        }
      }
    });
    if (dw == null) return;
    // the partials added in chunk order, element by element, then laid out as dw; split by taps across threads
    float[] sum = part[0];
    float[] d = dw.storage().floats();
    int perTask = Math.max(1, ConvSupport.GRAIN / Math.max(1, chunks * cpad));
    Parallel.forEach(Parallel.chunks(kdim, perTask), task -> {
      int k0 = task * perTask;
      int k1 = Math.min(kdim, k0 + perTask);
      for (int c = 1; c < chunks; c++) {
        float[] pc = part[c];
        for (int i = k0 * cpad; i < k1 * cpad; i++) sum[i] += pc[i];
      }
      for (int k = k0; k < k1; k++) {
        for (int ci = 0; ci < cin; ci++) d[dw.offset() + ci * kdim + k] = sum[k * cpad + ci];
      }
    });
  }
}
