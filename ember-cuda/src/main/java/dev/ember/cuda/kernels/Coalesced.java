package dev.ember.cuda.kernels;

import dev.ember.backend.View;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
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
record Coalesced(long[] shape, long[][] strides, long[] offsets) {
  /** The most axes a kernel's Geo holds (KernelCache's prelude: {@code MAXR}). */
  static final int MAXR = 8;

  /**
   * The Geo struct of KernelCache's prelude: {@code int rank; long long numel; long long shape[MAXR];
   * long long stride[MAXR]; long long offset;}, with C's alignment (4 bytes of padding after rank).
   */
  static final StructLayout GEO = MemoryLayout.structLayout(
      ValueLayout.JAVA_INT.withName("rank"),
      MemoryLayout.paddingLayout(4),
      ValueLayout.JAVA_LONG.withName("numel"),
      MemoryLayout.sequenceLayout(MAXR, ValueLayout.JAVA_LONG).withName("shape"),
      MemoryLayout.sequenceLayout(MAXR, ValueLayout.JAVA_LONG).withName("stride"),
      ValueLayout.JAVA_LONG.withName("offset"));

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

  /** The coalesced layout of operands of {@code shape} with the given strides and offsets. */
  static Coalesced of(int[] shape, int[][] strides, long[] offsets) {
    int n = strides.length;
    int r = shape.length;
    long[] sh = new long[Math.max(r, 1)];
    long[][] st = new long[n][Math.max(r, 1)];
    int m = 0; // merged axes so far, built from the innermost outwards
    for (int d = r - 1; d >= 0; d--) {
      if (shape[d] == 1) continue;
      if (m > 0 && mergeable(shape, strides, d, sh[m - 1], st, m - 1)) {
        sh[m - 1] *= shape[d];
        continue;
      }
      sh[m] = shape[d];
      for (int k = 0; k < n; k++) st[k][m] = strides[k][d];
      m++;
    }
    if (m == 0) { // a scalar, or every axis of size 1
      return new Coalesced(new long[] {1}, new long[n][1], offsets.clone());
    }
    long[] outShape = new long[m];
    long[][] outStrides = new long[n][m];
    for (int i = 0; i < m; i++) {
      outShape[i] = sh[m - 1 - i];
      for (int k = 0; k < n; k++) outStrides[k][i] = st[k][m - 1 - i];
    }
    return new Coalesced(outShape, outStrides, offsets.clone());
  }

  /** Whether axis d steps, for every operand, as one more period of the merged axis j that follows it. */
  private static boolean mergeable(int[] shape, int[][] strides, int d, long innerSize, long[][] st, int j) {
    for (int k = 0; k < strides.length; k++) {
      if (strides[k][d] != st[k][j] * innerSize) return false;
    }
    return true;
  }

  int rank() {
    return shape.length;
  }

  long numel() {
    long n = 1;
    for (long s : shape) n *= s;
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
    long[] inner = java.util.Arrays.copyOfRange(shape, lead, rank());
    long[][] innerStrides = new long[strides.length][];
    for (int k = 0; k < strides.length; k++) innerStrides[k] = java.util.Arrays.copyOfRange(strides[k], lead, rank());
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

  /** Operand k's Geo struct (rank at most MAXR), allocated in {@code arena}. */
  MemorySegment geo(int k, Arena arena) {
    if (rank() > MAXR) throw new IllegalStateException("Coalesced.geo: rank " + rank() + " > " + MAXR);
    MemorySegment g = arena.allocate(GEO);
    g.set(ValueLayout.JAVA_INT, 0, rank());
    g.set(ValueLayout.JAVA_LONG, 8, numel());
    for (int d = 0; d < rank(); d++) {
      g.set(ValueLayout.JAVA_LONG, 16 + 8L * d, shape[d]);
      g.set(ValueLayout.JAVA_LONG, 16 + 8L * MAXR + 8L * d, strides[k][d]);
    }
    g.set(ValueLayout.JAVA_LONG, 16 + 16L * MAXR, offsets[k]);
    return g;
  }
}
