package dev.ember.backend;

/**
 * The geometry of a 2-d convolution between an image [h, w] and its column grid [oh, ow]:
 * {@code iy = oy * sh - ph + i * dh}, {@code ix = ox * sw - pw + j * dw} for kernel offset (i, j);
 * positions outside the image read zero. {@code ph, pw} are the top and left padding (the bottom and
 * right ones are implied by oh, ow). A transposed convolution uses the same record with the roles
 * swapped: its output is the image, its input the column grid.
 *
 * @param h image height
 * @param w image width
 * @param kh kernel height
 * @param kw kernel width
 * @param sh vertical stride
 * @param sw horizontal stride
 * @param ph top padding
 * @param pw left padding
 * @param dh vertical dilation
 * @param dw horizontal dilation
 * @param oh column grid height
 * @param ow column grid width
 */
public record ConvGeometry(int h, int w, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, int oh,
    int ow) {
  /** Elements of one image plane, h * w. */
  public int hw() {
    return h * w;
  }

  /** Positions of the column grid, oh * ow. */
  public int cols() {
    return oh * ow;
  }

  /** Taps of the kernel, kh * kw. */
  public int kk() {
    return kh * kw;
  }

  /** Stride 1 and no dilation in both dimensions. */
  public boolean stride1() {
    return sh == 1 && sw == 1 && dh == 1 && dw == 1;
  }

  /** The column matrix of a channel is the channel itself (1x1, stride 1, unpadded). */
  public boolean identity() {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && oh == h && ow == w;
  }

  /** First ox whose input column for kernel column j lies in the image. */
  public int xLo(int j) {
    int off = j * dw - pw;
    return off >= 0 ? 0 : Math.min(ow, (-off + sw - 1) / sw);
  }

  /** One past the last such ox (at least xLo(j)). */
  public int xHi(int j) {
    int off = j * dw - pw;
    int hi = off > w - 1 ? 0 : Math.min(ow, (w - 1 - off) / sw + 1);
    return Math.max(hi, xLo(j));
  }
}
