package dev.ember.nn;

import dev.ember.nn.functional.Upsampling;
import dev.ember.tensor.Tensor;

/**
 * Upsampling by a size or a scale factor, as {@code nn.Upsample} (see
 * {@link Upsampling#interpolate(Tensor, int[], double[], String, Boolean, Boolean)}): mode
 * "nearest" (the default) or "bilinear". Prints as PyTorch 1.13: the scale factor as a float (or a
 * tuple of floats) or else the size, then the mode unquoted, e.g.
 * {@code Upsample(scale_factor=2.0, mode=nearest)}.
 */
public class Upsample extends Module {
  private final int[] size;
  private final double[] scaleFactor;
  private final String mode;
  private final Boolean alignCorners;
  private final Boolean recomputeScaleFactor;

  /** Nearest upsampling by {@code scaleFactor} in every spatial dim. */
  public Upsample(double scaleFactor) {
    this(null, new double[] {scaleFactor}, "nearest", null, null);
  }

  /** Upsampling by {@code scaleFactor} with {@code mode}. */
  public Upsample(double scaleFactor, String mode) {
    this(null, new double[] {scaleFactor}, mode, null, null);
  }

  /** Upsampling to {@code size} (one value for all spatial dims, or one per dim) with {@code mode}. */
  public Upsample(int[] size, String mode) {
    this(size, null, mode, null, null);
  }

  /**
   * Full form, as nn.Upsample(size, scale_factor, mode, align_corners, recompute_scale_factor):
   * exactly one of size and scaleFactor is non-null (checked on forward, as PyTorch does).
   */
  public Upsample(int[] size, double[] scaleFactor, String mode, Boolean alignCorners,
      Boolean recomputeScaleFactor) {
    this.size = size == null ? null : size.clone();
    this.scaleFactor = scaleFactor == null ? null : scaleFactor.clone();
    this.mode = mode;
    this.alignCorners = alignCorners;
    this.recomputeScaleFactor = recomputeScaleFactor;
  }

  /** "nearest" or "bilinear". */
  public String mode() {
    return mode;
  }

  /** The scale factors as given (one for all spatial dims, or one each), or null when a size was given. */
  public double[] scaleFactor() {
    return scaleFactor == null ? null : scaleFactor.clone();
  }

  /** align_corners as given (null: unset, false). */
  public Boolean alignCorners() {
    return alignCorners;
  }

  /** recompute_scale_factor as given (null: unset, false). */
  public Boolean recomputeScaleFactor() {
    return recomputeScaleFactor;
  }

  @Override
  public Tensor forward(Tensor input) {
    return Upsampling.interpolate(input, size, scaleFactor, mode, alignCorners, recomputeScaleFactor);
  }

  @Override
  protected String extraRepr() {
    String info;
    if (scaleFactor != null) {
      if (scaleFactor.length == 1) {
        info = "scale_factor=" + Reprs.fmt(scaleFactor[0]);
      } else {
        StringBuilder sb = new StringBuilder("scale_factor=(");
        for (int i = 0; i < scaleFactor.length; i++) sb.append(i > 0 ? ", " : "").append(Reprs.fmt(scaleFactor[i]));
        info = sb.append(')').toString();
      }
    } else {
      info = "size=" + (size == null ? "None" : MaxPool2d.intOrTuple(size));
    }
    return info + ", mode=" + mode;
  }
}
