package dev.ember.backend;

import java.util.function.Function;

/**
 * An int8 weight matrix [rows, cols] (row-major; rows are output channels) that is multiplied many times, as a
 * quantized layer's weight: a backend may derive a form of its own from it once (the CPU packs it into panels for
 * its GEMM) and keep that here, so later products skip the work. The bytes are not copied: they must not change
 * after construction (a derived form would go stale).
 */
public final class Int8Matrix {
  private final byte[] data;
  private final int rows;
  private final int cols;
  private volatile Object derived;

  /** Wraps {@code data} (rows * cols bytes, not copied: leave it unchanged from now on). */
  public Int8Matrix(byte[] data, int rows, int cols) {
    if (rows < 0 || cols < 0 || (long) rows * cols != data.length) {
      throw new IllegalArgumentException("Int8Matrix: " + data.length + " bytes do not make [" + rows + ", " + cols
          + "]");
    }
    this.data = data;
    this.rows = rows;
    this.cols = cols;
  }

  /** The bytes, row-major (do not modify). */
  public byte[] data() {
    return data;
  }

  public int rows() {
    return rows;
  }

  public int cols() {
    return cols;
  }

  /**
   * The form of this matrix that {@code derive} makes, computed on first use and kept (one form per matrix: a
   * request for another type replaces it; two threads racing may both compute it, and either result is kept).
   */
  public <T> T derived(Class<T> type, Function<Int8Matrix, T> derive) {
    Object d = derived;
    if (type.isInstance(d)) return type.cast(d);
    T made = derive.apply(this);
    derived = made;
    return made;
  }
}
