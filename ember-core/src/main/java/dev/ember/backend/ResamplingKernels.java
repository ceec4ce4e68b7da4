package dev.ember.backend;

/**
 * The resampling kernel family: nearest and bilinear interpolation and padding, each output element read
 * from input positions that index tables give per output row and column, and their gradients (every
 * output gradient added back to the positions it read). Inputs are contiguous [planes, ih, iw]; outputs
 * are allocated by the caller, contiguous from offset 0. Work is split over planes in tasks fixed by the
 * shapes, so results do not depend on the number of threads.
 */
public interface ResamplingKernels {
  /** y[p, h, w] = x[p, hIdx[h], wIdx[w]] for F32 or F64 x of [planes, ih, iw]. */
  void nearestForward(View x, int planes, int ih, int iw, int[] hIdx, int[] wIdx, View y);

  /** dx[p, hIdx[h], wIdx[w]] += g[p, h, w]; dx [planes, ih, iw] comes zero-filled. */
  void nearestBackward(View g, int planes, int ih, int iw, int[] hIdx, int[] wIdx, View dx);

  /**
   * y = h.l0 * (w.l0 x00 + w.l1 x01) + h.l1 * (w.l0 x10 + w.l1 x11) over [planes, ih, iw], in the input's
   * precision (the weights rounded to float32 for F32).
   */
  void bilinearForward(View x, int planes, int ih, int iw, LinearAxis h, LinearAxis w, View y);

  /** The gradient of {@link #bilinearForward}, added into dx [planes, ih, iw] (zero-filled). */
  void bilinearBackward(View g, int planes, int ih, int iw, LinearAxis h, LinearAxis w, View dx);

  /**
   * out[p, oy, ox] = x[p, mapH[oy], mapW[ox]], or {@code value} where either map is -1, for x [planes, h, w]
   * of any dtype and out [planes, mapH.length, mapW.length].
   */
  void padForward(View x, int planes, int h, int w, int[] mapH, int[] mapW, double value, View out);

  /** dx[p, mapH[oy], mapW[ox]] += g[p, oy, ox] where neither map is -1; dx [planes, h, w] comes zero-filled. */
  void padBackward(View g, int planes, int h, int w, int[] mapH, int[] mapW, View dx);
}
