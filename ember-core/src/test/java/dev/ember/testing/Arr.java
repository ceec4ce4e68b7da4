package dev.ember.testing;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * A plain double n-d array for reference implementations ("oracles"): row-major data and a
 * shape, with naive loops only, so it shares no code path with the library's kernels.
 */
public record Arr(double[] data, int[] shape) {
  public static Arr of(Tensor t) {
    return new Arr(t.toDoubleArray(), t.shape());
  }

  public static Arr zeros(int... shape) {
    return new Arr(new double[numel(shape)], shape.clone());
  }

  public static int numel(int[] shape) {
    int n = 1;
    for (int d : shape) n *= d;
    return n;
  }

  public int numel() {
    return data.length;
  }

  public int rank() {
    return shape.length;
  }

  public int[] strides() {
    int[] s = new int[shape.length];
    int acc = 1;
    for (int i = shape.length - 1; i >= 0; i--) {
      s[i] = acc;
      acc *= shape[i];
    }
    return s;
  }

  /** Multi-index of flat position {@code flat}. */
  public int[] index(int flat) {
    int[] idx = new int[shape.length];
    for (int d = shape.length - 1; d >= 0; d--) {
      idx[d] = flat % shape[d];
      flat /= shape[d];
    }
    return idx;
  }

  public int flat(int[] idx) {
    int f = 0;
    for (int d = 0; d < shape.length; d++) f = f * shape[d] + idx[d];
    return f;
  }

  public double get(int... idx) {
    return data[flat(idx)];
  }

  /** Value at idx of an array broadcast to a larger shape (right-aligned, size-1 dims repeat). */
  public double getBroadcast(int[] idx) {
    int off = idx.length - shape.length;
    int f = 0;
    for (int d = 0; d < shape.length; d++) f = f * shape[d] + (shape[d] == 1 ? 0 : idx[d + off]);
    return data[f];
  }

  public Tensor toTensor(DType dtype) {
    return Tensor.of(data, shape.length == 0 ? new int[0] : shape).to(dtype);
  }

  @Override
  public String toString() {
    return Arrays.toString(shape) + Arrays.toString(data);
  }
}
