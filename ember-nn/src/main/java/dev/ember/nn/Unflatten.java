package dev.ember.nn;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/** Splits dimension {@code dim} into {@code sizes} (whose product must equal its length; one may be -1). */
public class Unflatten extends Module {
  private final int dim;
  private final int[] sizes;

  public Unflatten(int dim, int... sizes) {
    if (sizes.length == 0) throw new IllegalArgumentException("Unflatten: sizes must not be empty");
    this.dim = dim;
    this.sizes = sizes.clone();
  }

  @Override
  public Tensor forward(Tensor x) {
    int d = Check.dim("Unflatten", dim, x); // a 0-d tensor has no dim to split
    int[] in = x.shape();
    int[] out = new int[in.length - 1 + sizes.length];
    System.arraycopy(in, 0, out, 0, d);
    System.arraycopy(sizes, 0, out, d, sizes.length);
    System.arraycopy(in, d + 1, out, d + sizes.length, in.length - d - 1);
    long known = 1;
    int free = -1;
    for (int i = 0; i < sizes.length; i++) {
      if (sizes[i] < -1) {
        throw Check.fail("Unflatten", "invalid size " + sizes[i] + " in sizes " + Arrays.toString(sizes), "input", x);
      }
      if (sizes[i] == -1 && free < 0) free = d + i;
      else known *= sizes[i];
    }
    if (free >= 0 && known > 0 && in[d] % known == 0) out[free] = (int) (in[d] / known);
    else if (free >= 0 || known != in[d]) {
      throw Check.fail("Unflatten", "sizes " + Arrays.toString(sizes) + " do not multiply to dimension " + d
          + "'s length (" + in[d] + ")", "input", x);
    }
    return x.reshape(out);
  }

  @Override
  protected String extraRepr() {
    return "dim=" + dim + ", unflattened_size=" + Reprs.tuple(sizes);
  }
}
