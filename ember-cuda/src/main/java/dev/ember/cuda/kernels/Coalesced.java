package dev.ember.cuda.kernels;

import dev.ember.backend.Dims;
import dev.ember.backend.View;
import dev.ember.cuda.lib.KernelArgs;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * The shared geometry of an elementwise launch's operands (all of one shape, broadcast ones with stride 0) with
 * as few axes as describe it: axes of size 1 dropped, and neighbours merged where every operand steps over them
 * as over one axis. A contiguous operand set becomes rank 1, which the kernels index without a division. Always
 * rank 1 or more (a scalar is shape [1], stride 0).
 *
 * @param shape the merged shape
 * @param strides per operand, its strides along the merged axes (in elements)
 * @param offsets per operand, its first element's index in its storage
 */
record Coalesced(int[] shape, int[][] strides, long[] offsets) {
  /** The most axes a kernel's Geo holds. */
  static final int MAXR = KernelArgs.MAX_RANK;

  /** The layout of views of one shape (the first's; the others are expanded to it). */
  static Coalesced of(View... views) {
    int[] shape = views[0].shapeRef();
    int[][] strides = new int[views.length][];
    long[] offsets = new long[views.length];
    for (int k = 0; k < views.length; k++) {
      strides[k] = views[k].stridesRef();
      offsets[k] = views[k].offset();
    }
    return of(shape, strides, offsets);
  }

  /** The coalesced layout ({@link Dims#coalesce}) of operands of {@code shape} with the given strides and offsets. */
  static Coalesced of(int[] shape, int[][] strides, long[] offsets) {
    int[][] c = Dims.coalesce(shape, strides);
    if (c[0].length == 0) { // a scalar, or every axis of size 1
      return new Coalesced(new int[] {1}, new int[strides.length][1], offsets.clone());
    }
    return new Coalesced(c[0], Arrays.copyOfRange(c, 1, c.length), offsets.clone());
  }

  int rank() {
    return shape.length;
  }

  long numel() {
    long n = 1;
    for (int s : shape) n *= s;
    return n;
  }

  /**
   * Calls {@code launch} with layouts of at most {@link #MAXR} axes that together cover this one: itself when it
   * fits, else one per index of the leading axes beyond MAXR (the operands' offsets moved to that index).
   */
  void forEachBlock(Consumer<Coalesced> launch) {
    int lead = rank() - MAXR;
    if (lead <= 0) {
      launch.accept(this);
      return;
    }
    int[] inner = Arrays.copyOfRange(shape, lead, rank());
    int[][] innerStrides = new int[strides.length][];
    for (int k = 0; k < strides.length; k++) innerStrides[k] = Arrays.copyOfRange(strides[k], lead, rank());
    long blocks = 1;
    for (int d = 0; d < lead; d++) blocks *= shape[d];
    for (long b = 0; b < blocks; b++) {
      long[] off = offsets.clone();
      long rest = b;
      for (int d = lead - 1; d >= 0; d--) {
        long i = rest % shape[d];
        rest /= shape[d];
        for (int k = 0; k < off.length; k++) off[k] += i * strides[k][d];
      }
      launch.accept(new Coalesced(inner, innerStrides, off));
    }
  }
}
