package dev.ember.nn;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;

/**
 * Adds the fixed sinusoidal position code of "Attention Is All You Need" to a batch-first input
 * [N, T, d_model] (or [T, d_model]): PE[t, 2i] = sin(t / 10000^(2i/d)), PE[t, 2i+1] = cos(same).
 * The table is a non-persistent buffer (it is not saved in state dicts, as it is a pure function
 * of the sizes).
 */
public class SinusoidalPositionalEncoding extends Module {
  private final int dModel;
  private final int maxLen;

  public SinusoidalPositionalEncoding(int dModel, int maxLen) {
    if (dModel <= 0 || maxLen <= 0) {
      throw new IllegalArgumentException("SinusoidalPositionalEncoding: d_model and max_len must be positive, got "
          + dModel + ", " + maxLen);
    }
    this.dModel = dModel;
    this.maxLen = maxLen;
    double[] pe = new double[maxLen * dModel];
    for (int t = 0; t < maxLen; t++) {
      for (int i = 0; i < dModel; i += 2) {
        double angle = t / Math.pow(10000, (double) i / dModel);
        pe[t * dModel + i] = Math.sin(angle);
        if (i + 1 < dModel) pe[t * dModel + i + 1] = Math.cos(angle);
      }
    }
    registerBuffer("pe", Tensor.of(pe, maxLen, dModel).to(dev.ember.tensor.DType.F32), false);
  }

  /** The [max_len, d_model] table. */
  public Tensor table() {
    return buffer("pe");
  }

  @Override
  public Tensor forward(Tensor x) {
    int t = x.dim() >= 2 ? x.size(x.dim() - 2) : -1;
    if (x.dim() < 2 || x.size(x.dim() - 1) != dModel || t > maxLen) {
      throw Check.fail(name(), "input must be [..., T <= max_len (" + maxLen + "), d_model (" + dModel + ")]", "input", x);
    }
    Tensor pe = buffer("pe").narrow(0, 0, t);
    return x.add(pe.dtype() == x.dtype() ? pe : pe.to(x.dtype()));
  }

  @Override
  protected String extraRepr() {
    return "d_model=" + dModel + ", max_len=" + maxLen;
  }
}
