package dev.ember.backend.cpu;

import java.util.logging.Logger;

/**
 * Float32 row loops that C2 does not vectorize on its own (it cannot rule out that the two arrays
 * alias), with a Vector API implementation chosen once per process and a scalar one when the
 * {@code jdk.incubator.vector} module is absent or {@code -Dember.kernels=scalar} is set. Both do the
 * same float operations in the same order per element, so they give the same bits.
 */
public interface RowKernels {
  /** y[yo + i] += a * x[xo + i] for i in [0, n): a rounded product, then a rounded sum (no FMA). */
  void axpy(float a, float[] x, int xo, float[] y, int yo, int n);

  /**
   * The float sum of a[ao + i] * b[bo + i] for i in [0, n), accumulated in a fixed order for a given
   * implementation (so the same inputs give the same bits at any thread count; the scalar and vector
   * orders differ, within float rounding).
   */
  float dot(float[] a, int ao, float[] b, int bo, int n);

  /**
   * One output row of a 2x2, stride-2 max pooling: for o in [0, n), with c = xo + 2 * o, y[yo + o] is
   * the maximum of x[c], x[c + 1], x[c + iw], x[c + iw + 1] taken in that (scan) order, where the
   * first maximum wins ties and a NaN wins (the last NaN), and, when arg is not null,
   * arg[yo + o] = (the winner's index) - base. Both implementations give the same bits.
   */
  void maxPool2x2Row(float[] x, int xo, int iw, int base, float[] y, int[] arg, int yo, int n);

  /**
   * {@link #maxPool2x2Row} without argmax (the same values), a method of its own so that validation's calls
   * (no tape, no argmax) never run through code compiled on training's (issue #40).
   */
  void maxPool2x2RowValues(float[] x, int xo, int iw, float[] y, int yo, int n);

  /** d[do + r*ds + k] = s[so + r*ss + k] for r &lt; rows, k &lt; n: a strided block of short rows (im2col). */
  void copyRows(float[] s, int so, int ss, float[] d, int dOff, int ds, int rows, int n);

  /**
   * d[dOff + 2*i] = a[ao + i] and d[dOff + 2*i + 1] = b[bo + i] for i &lt; n: two rows interleaved (the two column
   * phases of a stride-2 transposed convolution's output row). A copy: every implementation gives the same bits.
   */
  void interleave2(float[] a, int ao, float[] b, int bo, float[] d, int dOff, int n);

  /** The inverse of {@link #interleave2}: a[ao + i] = s[so + 2*i] and b[bo + i] = s[so + 2*i + 1] for i &lt; n. */
  void deinterleave2(float[] s, int so, float[] a, int ao, float[] b, int bo, int n);

  /** d[do + r*ds + k] += s[so + r*ss + k] for r &lt; rows, k &lt; n, one float add each (col2im). */
  void addRows(float[] s, int so, int ss, float[] d, int dOff, int ds, int rows, int n);

  /**
   * col2im of one channel of a stride-1, undilated convolution: for each tap (i, j), oy &lt; oh and
   * ox &lt; ow whose input position iy = oy + i - ph, ix = ox + j - pw lies in the h x w plane,
   * s[so + iy*w + ix] += col[row0 + (i*kw + j)*ld + oy*ow + ox], one float add each, in tap order
   * (i, then j) for every element, so both implementations give the same bits. Writes nothing
   * outside the plane.
   */
  void col2imUnit(float[] col, int row0, int ld, int h, int w, int kh, int kw, int ph, int pw, int oh, int ow,
      float[] s, int so);

  /**
   * Widest output row the direct convolution kernels below take ({@code ow <= directWidth()}); the
   * padded input rows they read must hold {@code directWidth() + kw - 1} floats.
   */
  int directWidth();

  /**
   * One output plane of a stride-1, undilated convolution over a zero-padded input: for oy &lt; oh,
   * ox &lt; ow, y[yo + oy*ow + ox] = bias + the sum over ci &lt; cin, i &lt; kh, j &lt; kw (in that order, each
   * term fused: fma(w, x, acc)) of w[wo + (ci*kh + i)*kw + j] * xp[xo + ci*ps + (oy + i)*pw + ox + j].
   * Rows of xp are pw >= ceil(ow / directWidth()) * directWidth() + kw - 1 floats wide, so a kernel may
   * read (not use) past ow; rows wider than directWidth() go in blocks of directWidth() columns.
   * Both implementations give the same bits.
   */
  void convPlane(float[] xp, int xo, int pw, int ps, int cin, int kh, int kw, float[] w, int wo, float bias,
      float[] y, int yo, int oh, int ow);

  /** Output channels (k) and taps (m) of one block of {@link #convWeightTaps}. */
  int TAPS_CHANNELS = 6;
  int TAPS_TAPS = 4;

  /**
   * One TAPS_CHANNELS x TAPS_TAPS block of a weight gradient over positions laid out in one row
   * pitch (the zero-padded input's width, the output gradient zero outside its ow columns): for
   * k &lt; TAPS_CHANNELS, m &lt; TAPS_TAPS and lane l &lt; convLanes(), slot acc[ao + (k*ldk + m)*convLanes() + l]
   * gains g[gOff[go + k] + p] * x[xOff[xo + m] + p] for p = l, l + convLanes(), ... &lt; n, in that
   * order, each term fused (fma(g, x, acc)). n is a multiple of convLanes(). Summing the slots of a
   * (channel, tap) pair ({@link #sumSlots}) gives its gradient; keeping them across images leaves one
   * reduction per weight to the end. Both implementations give the same bits when their convLanes() agree.
   */
  void convWeightTaps(float[] g, int[] gOff, int go, float[] x, int[] xOff, int xo, int n, float[] acc, int ao, int ldk);

  /** Output channels per tile of {@link #convTile}; a tile's weights are packed [k][CONV_TILE]. */
  int CONV_TILE = 8;

  /** Positions per slot of {@link #convTile}: the vector length (16 for the scalar loops). */
  int convLanes();

  /**
   * One tile of CONV_TILE output channels of a stride-1 convolution as an implicit GEMM: input and
   * output share one row pitch (the input's zero-padded width), so tap k of output position p reads
   * xp[offs[k] + p]. Slot s covers positions p = read[s] + l for l &lt; convLanes(); for each slot in
   * order and r &lt; CONV_TILE, y[yo + r*ldy + write[s] + l] becomes the fma chain over k &lt; kdim, in k
   * order, of wp[wo + k*CONV_TILE + r] * xp[offs[k] + p], starting from init[io + r] (from 0 when
   * init is null). A position that a later slot writes again ends with the later slot's value, so a
   * row's last slot may run past the row's end. With {@code relu} each value is stored as
   * {@code v <= 0 ? 0 : v} (Math.max(v, 0) for every input, the RELU kernel's form): the fused ReLU of an
   * inference convolution costs a compare and a blend per stored vector instead of a pass over the output.
   * Both implementations give the same bits.
   */
  void convTile(float[] xp, int[] offs, int kdim, float[] wp, int wo, float[] init, int io, int[] read, int[] write,
      int nslots, float[] y, int yo, int ldy, boolean relu);

  /** Output channels per tile of {@link #convTile6}; a tile's weights are packed [k][CONV_TILE6]. */
  int CONV_TILE6 = 6;

  /**
   * {@link #convTile} for tiles of CONV_TILE6 output channels (weights packed [k][CONV_TILE6]), for passes whose
   * channels fill sixes better than eights: the input gradient of LeNet's second layer has 6, which left a quarter
   * of each 8-channel tile computing zeros. Same chains, so the same bits as convTile on the same channels.
   */
  void convTile6(float[] xp, int[] offs, int kdim, float[] wp, int wo, float[] init, int io, int[] read, int[] write,
      int nslots, float[] y, int yo, int ldy, boolean relu);

  /** Taps per tile of {@link #convWeightTile}. */
  int WEIGHT_TAPS = 12;

  /** Output channels per tile of {@link #convWeightTile}: the packed gradient holds this many per position. */
  int convWeightWidth();

  /**
   * The upstream gradient of one image made position-major for {@link #convWeightTile}: with width =
   * convWeightWidth(), gp[(ot*cols + p)*width + l] = g[src + (ot*width + l)*cols + p] for the o
   * channels (o rows of cols floats at src), and 0 for the channels o..opad (opad a multiple of width).
   */
  default void packPositionMajor(float[] g, int src, int o, int opad, int cols, float[] gp) {
    packPositionMajor(g, src, o, opad, cols, convWeightWidth(), gp);
  }

  /**
   * {@link #packPositionMajor} for tiles of {@code width} channels, a multiple of convLanes(): convLanes() is the
   * layout {@link #convWeightTileNarrow} reads.
   */
  void packPositionMajor(float[] g, int src, int o, int opad, int cols, int width, float[] gp);

  /** {@link #packPositionMajor} element by element, for channels c0..c1 and positions p0..cols. */
  public static void packPositionMajor(float[] g, int src, int o, int c0, int c1, int p0, int cols, int width, float[] gp) {
    for (int oc = c0; oc < c1; oc++) {
      int d = (oc / width) * cols * width + oc % width + p0 * width;
      if (oc < o) {
        for (int p = p0, s = src + oc * cols + p0; p < cols; p++, s++, d += width) gp[d] = g[s];
      } else {
        for (int p = p0; p < cols; p++, d += width) gp[d] = 0f;
      }
    }
  }

  /**
   * The weight gradient of {@link #convTile} for WEIGHT_TAPS taps and convWeightWidth() output
   * channels, over the valid positions only: for r &lt; WEIGHT_TAPS and l &lt; width, c[co + r*ldc + l]
   * becomes the fma chain, starting from its value and going row by row (oy &lt; oh, then ox &lt; ow), of
   * xp[xo + offs[k0 + r] + oy*pitch + ox] * gp[gpo + (oy*ow + ox)*width + l]. Both implementations
   * give the same bits when their widths agree.
   */
  void convWeightTile(float[] xp, int xo, int[] offs, int k0, int pitch, int oh, int ow, float[] gp, int gpo,
      float[] c, int co, int ldc);

  /**
   * {@link #convWeightTile} for tiles of convLanes() output channels instead of convWeightWidth() (gp packed
   * with that width): a layer of at most convLanes() channels would leave half of each wide tile zeros (LeNet's
   * second convolution, 16 channels, on 16 lanes). Same order per element, so the same bits as the wide tile.
   */
  void convWeightTileNarrow(float[] xp, int xo, int[] offs, int k0, int pitch, int oh, int ow, float[] gp, int gpo,
      float[] c, int co, int ldc);

  /** Taps per tile of {@link #convWeightTile6}. */
  int WEIGHT_TAPS6 = 6;

  /** Output channels per tile of {@link #convWeightTile6}: twice {@link #convWeightWidth()}. */
  int convWeightWidth6();

  /**
   * {@link #convWeightTile} for WEIGHT_TAPS6 taps and convWeightWidth6() output channels (gp packed with that
   * width): half the taps per position for twice the channels, so fewer broadcasts and tap offsets per position.
   * Same order per element, so the same bits as the 12-tap tile.
   */
  void convWeightTile6(float[] xp, int xo, int[] offs, int k0, int pitch, int oh, int ow, float[] gp, int gpo,
      float[] c, int co, int ldc);

  /**
   * The nine float dots of a[ao .. ao + n) with b[bo + i*pitch + j ..) for i, j &lt; 3, into out[i*3 + j]: a 3 x 3
   * depthwise layer's weight gradient of one plane in one pass over it (nine independent sums, where nine
   * {@link #dot} calls each ran one dependent chain). The order is fixed per implementation: the scalar loops sum
   * each dot in order, the vector ones in lanes added in lane order, then the tail.
   */
  void dot3x3(float[] a, int ao, float[] b, int bo, int pitch, int n, float[] out);

  /**
   * One output plane of a stride-1, undilated 3 x 3 convolution of one h x w input plane x (at xo, rows w apart) padded
   * by ph rows and pw columns of zeros: y[yo + oy*ow + ox] = bias, then the nine fused terms (fma(w, X, acc)) of
   * w[wo + i*3 + j] * X(oy + i - ph, ox + j - pw) in tap order, X = 0 outside the plane (a term with 0 included): the
   * bits of {@link #convPlane} over the zero-padded plane. A depthwise layer's forward and, over the output gradient
   * padded by 2 - p with the taps reversed, its input gradient. The vector kernel reads the plane in place (the
   * border lanes masked) and each input row once for the three output rows it feeds.
   */
  void depthwise3x3(float[] x, int xo, int h, int w, int ph, int pw, float[] wt, int wo, float bias, float[] y, int yo,
      int oh, int ow);

  /**
   * A 3 x 3 depthwise layer's weight gradient of one plane: out[i*3 + j] = the sum over oy &lt; oh, ox &lt; ow of
   * g[go + oy*ow + ox] * X(oy + i - ph, ox + j - pw), X the h x w plane of x at xo padded with zeros. Order: per tap
   * and lane l &lt; convLanes(), one fma chain from 0 over the strips of convLanes() output columns (column
   * strip*convLanes() + l; g and X taken as 0 past ow), each over the padded rows r &lt; oh + 2 with g's row r - i
   * (0 outside [0, oh)) and X's row r - ph; then the lanes added to 0 in lane order. Both implementations give the
   * same bits when their lane counts agree.
   */
  void depthwise3x3Weight(float[] g, int go, int oh, int ow, float[] x, int xo, int h, int w, int ph, int pw,
      float[] out);

  /**
   * Winograd F(4, 3) input transform of one row (see WinogradConv): for each tile t &lt; tw, with d_k = s[so + 4t -
   * pad + k] (0 outside [0, len)), v[vo + xi*vs + t] = (B^T d)[xi], each as written in
   * {@link #winogradInputTiles} (no fused multiply-add), so both implementations give the same bits.
   */
  void winogradInput(float[] s, int so, int len, int pad, int tw, float[] v, int vo, int vs);

  /** {@link #winogradInput} for tiles t0..t1 element by element. */
  public static void winogradInputTiles(float[] s, int so, int len, int pad, int t0, int t1, float[] v, int vo,
      int vs) {
    for (int t = t0; t < t1; t++) {
      int at = 4 * t - pad;
      float d0 = at >= 0 && at < len ? s[so + at] : 0f;
      float d1 = at + 1 >= 0 && at + 1 < len ? s[so + at + 1] : 0f;
      float d2 = at + 2 >= 0 && at + 2 < len ? s[so + at + 2] : 0f;
      float d3 = at + 3 >= 0 && at + 3 < len ? s[so + at + 3] : 0f;
      float d4 = at + 4 >= 0 && at + 4 < len ? s[so + at + 4] : 0f;
      float d5 = at + 5 >= 0 && at + 5 < len ? s[so + at + 5] : 0f;
      inputTransform(d0, d1, d2, d3, d4, d5, v, vo + t, vs);
    }
  }

  /**
   * (B^T d)[xi] of F(4, 3) for the six inputs d0..d5 into out[at + xi*stride]: the one scalar form of the input
   * transform, for rows ({@link #winogradInputTiles}) and columns ({@link #winogradColumnsRange}) alike.
   */
  private static void inputTransform(float d0, float d1, float d2, float d3, float d4, float d5, float[] out, int at,
      int stride) {
    float a = d4 - d2;
    float b = 2f * (d3 - d1);
    out[at] = 4f * d0 - 5f * d2 + d4;
    out[at + stride] = (d3 + d4) - 4f * (d1 + d2);
    out[at + 2 * stride] = (d4 - d3) + 4f * (d1 - d2);
    out[at + 3 * stride] = a + b;
    out[at + 4 * stride] = a - b;
    out[at + 5 * stride] = 4f * d1 - 5f * d3 + d5;
  }

  /**
   * Winograd F(4, 3) upstream-gradient transform of one row: for each tile t &lt; tw, with e_i = s[so + 4t + i]
   * (0 from len on), m[mo + xi*ms + t] = (A e)[xi] as written in {@link #winogradGradTiles}.
   */
  void winogradGrad(float[] s, int so, int len, int tw, float[] m, int mo, int ms);

  /** {@link #winogradGrad} for tiles t0..t1 element by element. */
  public static void winogradGradTiles(float[] s, int so, int len, int t0, int t1, float[] m, int mo, int ms) {
    for (int t = t0; t < t1; t++) {
      int at = 4 * t;
      float e0 = at < len ? s[so + at] : 0f;
      float e1 = at + 1 < len ? s[so + at + 1] : 0f;
      float e2 = at + 2 < len ? s[so + at + 2] : 0f;
      float e3 = at + 3 < len ? s[so + at + 3] : 0f;
      float a = e0 + e2;
      float b = e1 + e3;
      float c = e0 + 4f * e2;
      float d = 2f * (e1 + 4f * e3);
      m[mo + t] = e0;
      m[mo + ms + t] = a + b;
      m[mo + 2 * ms + t] = a - b;
      m[mo + 3 * ms + t] = c + d;
      m[mo + 4 * ms + t] = c - d;
      m[mo + 5 * ms + t] = e3;
    }
  }

  /**
   * Winograd F(4, 3) output transform of one row: for each tile t &lt; tw, y[yo + 4t + i] = (A^T m)[i] + bias for
   * 4t + i &lt; len, m_xi = m[mo + xi*ms + t], as written in {@link #winogradOutputTiles}, clamped as the RELU
   * kernel ({@code v <= 0 ? 0 : v}) when {@code relu}.
   */
  void winogradOutput(float[] m, int mo, int ms, int tw, float bias, boolean relu, float[] y, int yo, int len);

  /** {@link #winogradOutput} for tiles t0..t1 element by element. */
  public static void winogradOutputTiles(float[] m, int mo, int ms, int t0, int t1, float bias, boolean relu,
      float[] y, int yo, int len) {
    for (int t = t0; t < t1; t++) {
      float m0 = m[mo + t];
      float m1 = m[mo + ms + t];
      float m2 = m[mo + 2 * ms + t];
      float m3 = m[mo + 3 * ms + t];
      float m4 = m[mo + 4 * ms + t];
      float m5 = m[mo + 5 * ms + t];
      float a = m1 + m2;
      float b = m1 - m2;
      float c = m3 + m4;
      float d = m3 - m4;
      float y0 = m0 + a + c + bias;
      float y1 = b + 2f * d + bias;
      float y2 = a + 4f * c + bias;
      float y3 = b + 8f * d + m5 + bias;
      if (relu) {
        y0 = y0 <= 0 ? 0f : y0;
        y1 = y1 <= 0 ? 0f : y1;
        y2 = y2 <= 0 ? 0f : y2;
        y3 = y3 <= 0 ? 0f : y3;
      }
      int at = 4 * t;
      if (at + 3 < len) {
        y[yo + at] = y0;
        y[yo + at + 1] = y1;
        y[yo + at + 2] = y2;
        y[yo + at + 3] = y3;
      } else {
        if (at < len) y[yo + at] = y0;
        if (at + 1 < len) y[yo + at + 1] = y1;
        if (at + 2 < len) y[yo + at + 2] = y2;
      }
    }
  }

  /**
   * Winograd F(4, 3) input transform down columns (the first half of the 2-d transform, see Winograd2dConv): for
   * i &lt; n, with d_k = s[so + k*ss + i] (six rows ss apart), d[dOff + xi*ds + i] = (B^T d)[xi], each as written in
   * {@link #winogradColumnsRange} (the expressions of {@link #winogradInputTiles}), so both implementations give the
   * same bits.
   */
  void winogradColumns(float[] s, int so, int ss, int n, float[] d, int dOff, int ds);

  /** {@link #winogradColumns} for i in [i0, i1) element by element. */
  public static void winogradColumnsRange(float[] s, int so, int ss, int i0, int i1, float[] d, int dOff, int ds) {
    for (int i = i0; i < i1; i++) {
      float d0 = s[so + i];
      float d1 = s[so + ss + i];
      float d2 = s[so + 2 * ss + i];
      float d3 = s[so + 3 * ss + i];
      float d4 = s[so + 4 * ss + i];
      float d5 = s[so + 5 * ss + i];
      inputTransform(d0, d1, d2, d3, d4, d5, d, dOff + i, ds);
    }
  }

  /**
   * Winograd F(4, 3) output transform down columns: for i &lt; n, with m_xi = m[mo + xi*ms + i] (six rows ms apart),
   * y[yo + r*ys + i] = (A^T m)[r] for r &lt; 4, as written in {@link #winogradColumnsOutRange} (the expressions of
   * {@link #winogradOutputTiles} without bias).
   */
  void winogradColumnsOut(float[] m, int mo, int ms, int n, float[] y, int yo, int ys);

  /** {@link #winogradColumnsOut} for i in [i0, i1) element by element. */
  public static void winogradColumnsOutRange(float[] m, int mo, int ms, int i0, int i1, float[] y, int yo, int ys) {
    for (int i = i0; i < i1; i++) {
      float m0 = m[mo + i];
      float m1 = m[mo + ms + i];
      float m2 = m[mo + 2 * ms + i];
      float m3 = m[mo + 3 * ms + i];
      float m4 = m[mo + 4 * ms + i];
      float m5 = m[mo + 5 * ms + i];
      float a = m1 + m2;
      float b = m1 - m2;
      float c = m3 + m4;
      float d = m3 - m4;
      y[yo + i] = m0 + a + c;
      y[yo + ys + i] = b + 2f * d;
      y[yo + 2 * ys + i] = a + 4f * c;
      y[yo + 3 * ys + i] = b + 8f * d + m5;
    }
  }

  /**
   * Winograd F(4, 3) upstream-gradient transform down columns: for i &lt; n, with e_r = s[so + r*ss + i] (four rows
   * ss apart), d[dOff + xi*ds + i] = (A e)[xi], as written in {@link #winogradColumnsGradRange} (the expressions of
   * {@link #winogradGradTiles}).
   */
  void winogradColumnsGrad(float[] s, int so, int ss, int n, float[] d, int dOff, int ds);

  /** {@link #winogradColumnsGrad} for i in [i0, i1) element by element. */
  public static void winogradColumnsGradRange(float[] s, int so, int ss, int i0, int i1, float[] d, int dOff,
      int ds) {
    for (int i = i0; i < i1; i++) {
      float e0 = s[so + i];
      float e1 = s[so + ss + i];
      float e2 = s[so + 2 * ss + i];
      float e3 = s[so + 3 * ss + i];
      float a = e0 + e2;
      float b = e1 + e3;
      float c = e0 + 4f * e2;
      float e = 2f * (e1 + 4f * e3);
      d[dOff + i] = e0;
      d[dOff + ds + i] = a + b;
      d[dOff + 2 * ds + i] = a - b;
      d[dOff + 3 * ds + i] = c + e;
      d[dOff + 4 * ds + i] = c - e;
      d[dOff + 5 * ds + i] = e3;
    }
  }

  /** The float sum of a[ao + i] for i in [0, n), in an order fixed per implementation (batch norm's mean). */
  float sum(float[] a, int ao, int n);

  /** The float sum of (a[ao + i] - mu)^2, in an order fixed per implementation (batch norm's variance). */
  float sumSquaredDeviations(float[] a, int ao, int n, float mu);

  /** The float sum of g[go + i] * (x[xo + i] - mu), in an order fixed per implementation. */
  float dotCentred(float[] g, int go, float[] x, int xo, int n, float mu);

  /**
   * out[0] = sum(g, go, n) and out[1] = dotCentred(g, go, x, xo, n, mu), the same bits as the two
   * calls; the vector loops do both in one pass over g (batch norm's backward reads g once for both).
   */
  default void sumAndDotCentred(float[] g, int go, float[] x, int xo, int n, float mu, float[] out) {
    out[0] = sum(g, go, n);
    out[1] = dotCentred(g, go, x, xo, n, mu);
  }

  /**
   * y[yo + i] = p * g[go + i] + (q * (x[xo + i] - mu) + r) for i in [0, n), each operation rounded as
   * written (no fused multiply-add), so both implementations give the same bits (batch norm's input
   * gradient).
   */
  void normBackwardRow(float[] g, int go, float[] x, int xo, float[] y, int yo, int n, float p, float q, float mu,
      float r);

  /**
   * {@code normBackwardRow(g, go, x, xo, y, yo, n, p, q, mu, r)}, then {@code sumAndDotCentred(g, ngo, x, nxo, n,
   * nmu, out)} of the next plane at ngo and nxo, with the bits of those two calls. The vector loop reads the next
   * plane in the loop that writes this one (group norm's backward). y must not overlap the next plane.
   */
  default void normBackwardRowThenSums(float[] g, int go, float[] x, int xo, float[] y, int yo, int n, float p,
      float q, float mu, float r, int ngo, int nxo, float nmu, float[] out) {
    normBackwardRow(g, go, x, xo, y, yo, n, p, q, mu, r);
    sumAndDotCentred(g, ngo, x, nxo, n, nmu, out);
  }

  /**
   * A row's moments for layer, group and RMS norm: out[0] = mu, the float sum of x[xo + i] for i in [0, n)
   * divided by n in float (0 when {@code rms} or n is 0), and out[1] = the float sum of (x[xo + i] - mu)^2,
   * each sum in an order fixed per implementation (several partial sums: the row's two reads are not
   * bound by the add latency). The second pass reads the row from cache, so the input is read from memory
   * once and the variance is the stable, centred one.
   */
  void moments(float[] x, int xo, int n, boolean rms, float[] out);

  /**
   * y[yo + i] = ((x[xo + i] - mu) * rs) * w[i] + b[i] for i in [0, n), each operation rounded as written
   * (no fused multiply-add), so both implementations give the same bits (layer norm's output).
   */
  void affineRow(float[] x, int xo, float[] y, int yo, int n, float mu, float rs, float[] w, float[] b);

  /**
   * {@code affineRow(x, xo, y, yo, n, mu, rs, w, b)}, then {@code moments(x, no, n, rms, out)} of the next row at
   * {@code no}, with the bits of those two calls. The vector loops read the next row in the affine's loop, so its
   * reads from memory overlap the affine's work instead of waiting for it to end (layer norm's forward over rows of
   * 1024 floats on one thread: the row's reads stalled after every affine pass). y must not overlap the next row.
   */
  default void affineRowThenMoments(float[] x, int xo, float[] y, int yo, int n, float mu, float rs, float[] w,
      float[] b, int no, boolean rms, float[] out) {
    affineRow(x, xo, y, yo, n, mu, rs, w, b);
    moments(x, no, n, rms, out);
  }

  /** y[yo + i] = x[xo + i] * sc + sh for i in [0, n), rounded as written: both implementations give the same bits. */
  void scaleShiftRow(float[] x, int xo, float[] y, int yo, int n, float sc, float sh);

  /**
   * {@code scaleShiftRow} of each plane j of s elements of a row of n (a multiple of s; group norm's channels of a
   * group), with sc[j] and sh[j], then {@code moments(x, no, n, false, out)} of the next row at {@code no}, with the
   * bits of those calls. The vector loops read the next row in the loop that writes this row's planes (as
   * {@link #affineRowThenMoments}). y must not overlap the next row.
   */
  default void scaleShiftPlanesThenMoments(float[] x, int xo, float[] y, int yo, int n, int s, float[] sc, float[] sh,
      int no, float[] out) {
    for (int j = 0; j * s < n; j++) scaleShiftRow(x, xo + j * s, y, yo + j * s, s, sc[j], sh[j]);
    moments(x, no, n, false, out);
  }

  /**
   * The sums of layer norm's backward over a row: with xh = (x[xo + i] - mu) * rs and gh = g[go + i] * w[i],
   * out[0] = the float sum of gh and out[1] = that of gh * xh (orders fixed per implementation), and, per
   * element, gw[i] += g[go + i] * xh and gb[i] += g[go + i] (each rounded as written: both implementations
   * give the same gw and gb bits).
   */
  void normBackwardSums(float[] g, int go, float[] x, int xo, float[] w, int n, float mu, float rs, float[] gw,
      float[] gb, float[] out);

  /**
   * y[yo + i] = p * (g[go + i] * w[i]) + (q * (x[xo + i] - mu) + r) for i in [0, n), each operation rounded
   * as written, so both implementations give the same bits (layer norm's input gradient).
   */
  void normBackwardRowW(float[] g, int go, float[] x, int xo, float[] w, float[] y, int yo, int n, float p, float q,
      float mu, float r);

  /** The total of {@code width} slots (see {@link #convWeightTaps}), summed in slot order. */
  public static float sumSlots(float[] acc, int at, int width) {
    float s = 0;
    for (int l = 0; l < width; l++) s += acc[at + l];
    return s;
  }

  /** The loops for this process. */
  RowKernels F32 = Choice.choose();

  /** The plain loops, the reference the vector ones are tested against. */
  public final class Scalar implements RowKernels {
    @Override
    public void axpy(float a, float[] x, int xo, float[] y, int yo, int n) {
      for (int i = 0; i < n; i++) y[yo + i] += a * x[xo + i];
    }

    @Override
    public float dot(float[] a, int ao, float[] b, int bo, int n) {
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0; // four partial sums hide the add latency
      int i = 0;
      for (; i + 3 < n; i += 4) {
        s0 += a[ao + i] * b[bo + i];
        s1 += a[ao + i + 1] * b[bo + i + 1];
        s2 += a[ao + i + 2] * b[bo + i + 2];
        s3 += a[ao + i + 3] * b[bo + i + 3];
      }
      for (; i < n; i++) s0 += a[ao + i] * b[bo + i];
      return (s0 + s1) + (s2 + s3);
    }

    @Override
    public float sum(float[] a, int ao, int n) {
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      int i = 0;
      for (; i + 3 < n; i += 4) {
        s0 += a[ao + i];
        s1 += a[ao + i + 1];
        s2 += a[ao + i + 2];
        s3 += a[ao + i + 3];
      }
      for (; i < n; i++) s0 += a[ao + i];
      return (s0 + s1) + (s2 + s3);
    }

    @Override
    public float sumSquaredDeviations(float[] a, int ao, int n, float mu) {
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      int i = 0;
      for (; i + 3 < n; i += 4) {
        float d0 = a[ao + i] - mu, d1 = a[ao + i + 1] - mu, d2 = a[ao + i + 2] - mu, d3 = a[ao + i + 3] - mu;
        s0 += d0 * d0;
        s1 += d1 * d1;
        s2 += d2 * d2;
        s3 += d3 * d3;
      }
      for (; i < n; i++) {
        float d = a[ao + i] - mu;
        s0 += d * d;
      }
      return (s0 + s1) + (s2 + s3);
    }

    @Override
    public float dotCentred(float[] g, int go, float[] x, int xo, int n, float mu) {
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      int i = 0;
      for (; i + 3 < n; i += 4) {
        s0 += g[go + i] * (x[xo + i] - mu);
        s1 += g[go + i + 1] * (x[xo + i + 1] - mu);
        s2 += g[go + i + 2] * (x[xo + i + 2] - mu);
        s3 += g[go + i + 3] * (x[xo + i + 3] - mu);
      }
      for (; i < n; i++) s0 += g[go + i] * (x[xo + i] - mu);
      return (s0 + s1) + (s2 + s3);
    }

    @Override
    public void normBackwardRow(float[] g, int go, float[] x, int xo, float[] y, int yo, int n, float p, float q,
        float mu, float r) {
      for (int i = 0; i < n; i++) y[yo + i] = p * g[go + i] + (q * (x[xo + i] - mu) + r);
    }

    @Override
    public void moments(float[] x, int xo, int n, boolean rms, float[] out) {
      float mu = rms || n == 0 ? 0f : sum(x, xo, n) / n;
      out[0] = mu;
      out[1] = sumSquaredDeviations(x, xo, n, mu);
    }

    @Override
    public void affineRow(float[] x, int xo, float[] y, int yo, int n, float mu, float rs, float[] w, float[] b) {
      for (int i = 0; i < n; i++) y[yo + i] = ((x[xo + i] - mu) * rs) * w[i] + b[i];
    }

    @Override
    public void scaleShiftRow(float[] x, int xo, float[] y, int yo, int n, float sc, float sh) {
      for (int i = 0; i < n; i++) y[yo + i] = x[xo + i] * sc + sh;
    }

    @Override
    public void normBackwardSums(float[] g, int go, float[] x, int xo, float[] w, int n, float mu, float rs,
        float[] gw, float[] gb, float[] out) {
      float s = 0, d = 0;
      for (int i = 0; i < n; i++) {
        float gv = g[go + i];
        float xh = (x[xo + i] - mu) * rs;
        float gh = gv * w[i];
        s += gh;
        d += gh * xh;
        gw[i] += gv * xh;
        gb[i] += gv;
      }
      out[0] = s;
      out[1] = d;
    }

    @Override
    public void normBackwardRowW(float[] g, int go, float[] x, int xo, float[] w, float[] y, int yo, int n, float p,
        float q, float mu, float r) {
      for (int i = 0; i < n; i++) y[yo + i] = p * (g[go + i] * w[i]) + (q * (x[xo + i] - mu) + r);
    }

    @Override
    public void maxPool2x2Row(float[] x, int xo, int iw, int base, float[] y, int[] arg, int yo, int n) {
      maxPool2x2Scalar(x, xo, iw, base, y, arg, yo, n);
    }

    @Override
    public void maxPool2x2RowValues(float[] x, int xo, int iw, float[] y, int yo, int n) {
      maxPool2x2Scalar(x, xo, iw, 0, y, null, yo, n);
    }

    @Override
    public void dot3x3(float[] a, int ao, float[] b, int bo, int pitch, int n, float[] out) {
      for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
          float s = 0;
          int at = bo + i * pitch + j;
          for (int p = 0; p < n; p++) s += a[ao + p] * b[at + p];
          out[i * 3 + j] = s;
        }
      }
    }

    @Override
    public void depthwise3x3(float[] x, int xo, int h, int w, int ph, int pw, float[] wt, int wo, float bias, float[] y,
        int yo, int oh, int ow) {
      for (int oy = 0; oy < oh; oy++) {
        for (int ox = 0; ox < ow; ox++) {
          float acc = bias;
          for (int i = 0; i < 3; i++) {
            int iy = oy + i - ph;
            for (int j = 0; j < 3; j++) {
              int ix = ox + j - pw;
              float v = iy >= 0 && iy < h && ix >= 0 && ix < w ? x[xo + iy * w + ix] : 0f;
              acc = Math.fma(wt[wo + i * 3 + j], v, acc);
            }
          }
          y[yo + oy * ow + ox] = acc;
        }
      }
    }

    @Override
    public void depthwise3x3Weight(float[] g, int go, int oh, int ow, float[] x, int xo, int h, int w, int ph, int pw,
        float[] out) {
      int lanes = convLanes();
      int width = (ow + lanes - 1) / lanes * lanes;
      for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
          float t = 0f;
          for (int l = 0; l < lanes; l++) {
            float acc = 0f;
            for (int ox = l; ox < width; ox += lanes) {
              int ix = ox + j - pw;
              for (int r = 0; r < oh + 2; r++) {
                int oy = r - i;
                int iy = r - ph;
                float gv = oy >= 0 && oy < oh && ox < ow ? g[go + oy * ow + ox] : 0f;
                float xv = iy >= 0 && iy < h && ix >= 0 && ix < w && ox < ow ? x[xo + iy * w + ix] : 0f;
                acc = Math.fma(gv, xv, acc);
              }
            }
            t += acc;
          }
          out[i * 3 + j] = t;
        }
      }
    }

    @Override
    public void winogradInput(float[] s, int so, int len, int pad, int tw, float[] v, int vo, int vs) {
      winogradInputTiles(s, so, len, pad, 0, tw, v, vo, vs);
    }

    @Override
    public void winogradGrad(float[] s, int so, int len, int tw, float[] m, int mo, int ms) {
      winogradGradTiles(s, so, len, 0, tw, m, mo, ms);
    }

    @Override
    public void winogradOutput(float[] m, int mo, int ms, int tw, float bias, boolean relu, float[] y, int yo,
        int len) {
      winogradOutputTiles(m, mo, ms, 0, tw, bias, relu, y, yo, len);
    }

    @Override
    public void winogradColumns(float[] s, int so, int ss, int n, float[] d, int dOff, int ds) {
      winogradColumnsRange(s, so, ss, 0, n, d, dOff, ds);
    }

    @Override
    public void winogradColumnsGrad(float[] s, int so, int ss, int n, float[] d, int dOff, int ds) {
      winogradColumnsGradRange(s, so, ss, 0, n, d, dOff, ds);
    }

    @Override
    public void winogradColumnsOut(float[] m, int mo, int ms, int n, float[] y, int yo, int ys) {
      winogradColumnsOutRange(m, mo, ms, 0, n, y, yo, ys);
    }

    @Override
    public void copyRows(float[] s, int so, int ss, float[] d, int dOff, int ds, int rows, int n) {
      for (int r = 0; r < rows; r++) System.arraycopy(s, so + r * ss, d, dOff + r * ds, n);
    }

    @Override
    public void interleave2(float[] a, int ao, float[] b, int bo, float[] d, int dOff, int n) {
      for (int i = 0; i < n; i++) {
        d[dOff + 2 * i] = a[ao + i];
        d[dOff + 2 * i + 1] = b[bo + i];
      }
    }

    @Override
    public void deinterleave2(float[] s, int so, float[] a, int ao, float[] b, int bo, int n) {
      for (int i = 0; i < n; i++) {
        a[ao + i] = s[so + 2 * i];
        b[bo + i] = s[so + 2 * i + 1];
      }
    }

    @Override
    public void col2imUnit(float[] col, int row0, int ld, int h, int w, int kh, int kw, int ph, int pw, int oh,
        int ow, float[] s, int so) {
      for (int i = 0; i < kh; i++) {
        for (int j = 0; j < kw; j++) {
          int r = row0 + (i * kw + j) * ld;
          for (int oy = Math.max(0, ph - i); oy < Math.min(oh, h + ph - i); oy++) {
            int iy = oy + i - ph;
            for (int ox = Math.max(0, pw - j); ox < Math.min(ow, w + pw - j); ox++) {
              s[so + iy * w + ox + j - pw] += col[r + oy * ow + ox];
            }
          }
        }
      }
    }

    @Override
    public void addRows(float[] s, int so, int ss, float[] d, int dOff, int ds, int rows, int n) {
      for (int r = 0; r < rows; r++) {
        for (int k = 0; k < n; k++) d[dOff + r * ds + k] += s[so + r * ss + k];
      }
    }

    @Override
    public int directWidth() {
      return 32;
    }

    @Override
    public int convLanes() {
      return 16;
    }

    @Override
    public void convTile(float[] xp, int[] offs, int kdim, float[] wp, int wo, float[] init, int io, int[] read,
        int[] write, int nslots, float[] y, int yo, int ldy, boolean relu) {
      for (int s = 0; s < nslots; s++) {
        for (int l = 0; l < convLanes(); l++) {
          int p = read[s] + l;
          for (int r = 0; r < CONV_TILE; r++) {
            float acc = init == null ? 0f : init[io + r];
            for (int k = 0; k < kdim; k++) acc = Math.fma(wp[wo + k * CONV_TILE + r], xp[offs[k] + p], acc);
            y[yo + r * ldy + write[s] + l] = relu && acc <= 0 ? 0f : acc;
          }
        }
      }
    }

    @Override
    public void convTile6(float[] xp, int[] offs, int kdim, float[] wp, int wo, float[] init, int io, int[] read,
        int[] write, int nslots, float[] y, int yo, int ldy, boolean relu) {
      for (int s = 0; s < nslots; s++) {
        for (int l = 0; l < convLanes(); l++) {
          int p = read[s] + l;
          for (int r = 0; r < CONV_TILE6; r++) {
            float acc = init == null ? 0f : init[io + r];
            for (int k = 0; k < kdim; k++) acc = Math.fma(wp[wo + k * CONV_TILE6 + r], xp[offs[k] + p], acc);
            y[yo + r * ldy + write[s] + l] = relu && acc <= 0 ? 0f : acc;
          }
        }
      }
    }

    @Override
    public int convWeightWidth() {
      return 32;
    }

    @Override
    public void packPositionMajor(float[] g, int src, int o, int opad, int cols, int width, float[] gp) {
      RowKernels.packPositionMajor(g, src, o, 0, opad, 0, cols, width, gp);
    }

    @Override
    public void convWeightTile(float[] xp, int xo, int[] offs, int k0, int pitch, int oh, int ow, float[] gp,
        int gpo, float[] c, int co, int ldc) {
      weightTile(xp, xo, offs, k0, WEIGHT_TAPS, pitch, oh, ow, gp, gpo, c, co, ldc, convWeightWidth());
    }

    @Override
    public void convWeightTileNarrow(float[] xp, int xo, int[] offs, int k0, int pitch, int oh, int ow, float[] gp,
        int gpo, float[] c, int co, int ldc) {
      weightTile(xp, xo, offs, k0, WEIGHT_TAPS, pitch, oh, ow, gp, gpo, c, co, ldc, convLanes());
    }

    @Override
    public int convWeightWidth6() {
      return 2 * convWeightWidth();
    }

    @Override
    public void convWeightTile6(float[] xp, int xo, int[] offs, int k0, int pitch, int oh, int ow, float[] gp,
        int gpo, float[] c, int co, int ldc) {
      weightTile(xp, xo, offs, k0, WEIGHT_TAPS6, pitch, oh, ow, gp, gpo, c, co, ldc, convWeightWidth6());
    }

    private static void weightTile(float[] xp, int xo, int[] offs, int k0, int taps, int pitch, int oh, int ow,
        float[] gp, int gpo, float[] c, int co, int ldc, int width) {
      for (int r = 0; r < taps; r++) {
        int x = xo + offs[k0 + r];
        for (int l = 0; l < width; l++) {
          float acc = c[co + r * ldc + l];
          for (int oy = 0; oy < oh; oy++) {
            for (int ox = 0; ox < ow; ox++) {
              acc = Math.fma(xp[x + oy * pitch + ox], gp[gpo + (oy * ow + ox) * width + l], acc);
            }
          }
          c[co + r * ldc + l] = acc;
        }
      }
    }

    @Override
    public void convPlane(float[] xp, int xo, int pw, int ps, int cin, int kh, int kw, float[] w, int wo, float bias,
        float[] y, int yo, int oh, int ow) {
      for (int oy = 0; oy < oh; oy++) {
        for (int ox = 0; ox < ow; ox++) {
          float acc = bias;
          for (int ci = 0; ci < cin; ci++) {
            for (int i = 0; i < kh; i++) {
              int r = xo + ci * ps + (oy + i) * pw + ox;
              int t = wo + (ci * kh + i) * kw;
              for (int j = 0; j < kw; j++) acc = Math.fma(w[t + j], xp[r + j], acc);
            }
          }
          y[yo + oy * ow + ox] = acc;
        }
      }
    }

    @Override
    public void convWeightTaps(float[] g, int[] gOff, int go, float[] x, int[] xOff, int xo, int n, float[] acc, int ao,
        int ldk) {
      int lanes = convLanes();
      for (int k = 0; k < TAPS_CHANNELS; k++) {
        for (int m = 0; m < TAPS_TAPS; m++) {
          int gk = gOff[go + k], xm = xOff[xo + m], at = ao + (k * ldk + m) * lanes;
          for (int l = 0; l < lanes; l++) {
            float a = acc[at + l];
            for (int p = l; p < n; p += lanes) a = Math.fma(g[gk + p], x[xm + p], a);
            acc[at + l] = a;
          }
        }
      }
    }
  }

  /** The scalar loop of {@link #maxPool2x2Row}, also the vector version's tail. */
  public static void maxPool2x2Scalar(float[] x, int xo, int iw, int base, float[] y, int[] arg, int yo, int n) {
    for (int o = 0, c = xo; o < n; o++, c += 2) {
      float a = x[c];
      float b = x[c + 1];
      float d = x[c + iw];
      float e = x[c + iw + 1];
      // starting from the first tap is the same as from -inf: -inf is not taken, NaN is
      float mv = a;
      int mc = c;
      boolean take = b > mv | b != b; // no short-circuit, so the JIT can use conditional moves
      mc = take ? c + 1 : mc;
      mv = take ? b : mv;
      take = d > mv | d != d;
      mc = take ? c + iw : mc;
      mv = take ? d : mv;
      take = e > mv | e != e;
      mc = take ? c + iw + 1 : mc;
      mv = take ? e : mv;
      y[yo + o] = mv;
      if (arg != null) arg[yo + o] = mc - base;
    }
  }

  /** Picks the vector loops when the module is readable. */
  public final class Choice {
    private static final String VECTOR = "dev.ember.backend.cpu.vector.VectorRowKernels";

    private Choice() {}

    public static RowKernels choose() {
      if ("scalar".equals(System.getProperty("ember.kernels"))) return new Scalar();
      RowKernels v = vectorOrNull();
      return v == null ? new Scalar() : v;
    }

    public static RowKernels vectorOrNull() {
      if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) return null;
      try {
        return (RowKernels) Class.forName(VECTOR).getDeclaredConstructor().newInstance();
      } catch (ReflectiveOperationException | LinkageError e) {
        Logger.getLogger("dev.ember").warning("ember: could not load the Vector API row kernels (" + e
            + "); using scalar loops");
        return null;
      }
    }
  }
}
