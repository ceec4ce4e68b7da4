package dev.ember.backend.cpu;

import dev.ember.backend.ElementwiseProgram;
import dev.ember.backend.View;
import dev.ember.tensor.DType;

/**
 * Runs a {@link FusedKernel} over a contiguous float32 output: fixed chunks of {@code CpuBackend.CHUNK} elements
 * over the pool (from {@code CpuBackend.PARALLEL_MIN} on, as the eager elementwise ops split), each in blocks of
 * {@code BLOCK} (512). FULL inputs are read in place and the output is written in place; broadcast inputs and
 * registers live in per-thread scratch blocks. Chunks and blocks start at multiples of 512 whatever the thread
 * count, so the results are the same on any number of threads.
 */
public final class CpuFused {
  private CpuFused() {}

  /** Elements per block: the scratch blocks of a program of a dozen steps stay in L1. */
  static final int BLOCK = 512;
  private static final ThreadLocal<float[][]> SCRATCH = ThreadLocal.withInitial(() -> new float[0][]);

  /** Whether the CPU's one-pass path applies: all float32, the output and every input contiguous and fitting. */
  public static boolean applies(ElementwiseProgram p, View[] ins, View out) {
    if (out.dtype() != DType.F32 || !out.isContiguous()) return false;
    int[] shape = out.shapeRef();
    long n = out.numel();
    long cols = shape.length == 0 ? 1 : shape[shape.length - 1];
    long rows = cols == 0 ? 0 : n / cols;
    for (int i = 0; i < p.inputs().size(); i++) {
      ElementwiseProgram.Kind kind = p.inputs().get(i).kind();
      if (kind == ElementwiseProgram.Kind.CONSTANT) continue;
      View v = ins[p.tensorSlot(i)];
      if (v.dtype() != DType.F32 || !v.isContiguous()) return false;
      long want = switch (kind) {
        case FULL -> n;
        case ROW -> cols;
        case COLUMN -> rows;
        case CONSTANT -> 0;
      };
      if (v.numel() != want) return false;
    }
    return true;
  }

  /** out = the program over {@code ins} (see {@link #applies}), by {@code kernel}. */
  public static void run(FusedKernel kernel, ElementwiseProgram p, View[] ins, View out) {
    int n = (int) out.numel();
    if (n == 0) return;
    int[] shape = out.shapeRef();
    int cols = shape.length == 0 ? 1 : shape[shape.length - 1];
    int tasks = n < CpuBackend.PARALLEL_MIN ? 1 : Parallel.chunks(n, CpuBackend.CHUNK);
    int per = tasks == 1 ? n : CpuBackend.CHUNK;
    Parallel.forEach(tasks, t -> range(kernel, p, ins, out, cols, t * per, Math.min(n, (t + 1) * per)));
  }

  private static void range(FusedKernel kernel, ElementwiseProgram p, View[] ins, View out, int cols, int start,
      int end) {
    int values = p.valueCount();
    float[][] scratch = SCRATCH.get();
    if (scratch.length < values) {
      scratch = new float[values][BLOCK];
      SCRATCH.set(scratch);
    }
    float[][] arr = new float[values][];
    int[] off = new int[values];
    float[] consts = new float[values];
    int inputs = p.inputs().size();
    float[] outArr = out.storage().floats();
    for (int b = start; b < end; b += BLOCK) {
      int len = Math.min(BLOCK, end - b);
      for (int i = 0; i < inputs; i++) {
        ElementwiseProgram.Input in = p.inputs().get(i);
        if (in.kind() == ElementwiseProgram.Kind.CONSTANT) {
          consts[i] = (float) in.value();
          continue;
        }
        View v = ins[p.tensorSlot(i)];
        float[] src = v.storage().floats();
        switch (in.kind()) {
          case FULL -> {
            arr[i] = src;
            off[i] = v.offset() + b;
          }
          case ROW -> {
            float[] dst = scratch[i];
            for (int k = 0; k < len; ) { // pieces of the row, from column (b + k) % cols on
              int j = (b + k) % cols;
              int m = Math.min(len - k, cols - j);
              System.arraycopy(src, v.offset() + j, dst, k, m);
              k += m;
            }
            arr[i] = dst;
            off[i] = 0;
          }
          case COLUMN -> {
            float[] dst = scratch[i];
            for (int k = 0; k < len; ) { // runs of one row's value
              int row = (b + k) / cols;
              int m = Math.min(len - k, (row + 1) * cols - (b + k));
              java.util.Arrays.fill(dst, k, k + m, src[v.offset() + row]);
              k += m;
            }
            arr[i] = dst;
            off[i] = 0;
          }
          case CONSTANT -> { }
        }
      }
      for (int v = inputs; v < values - 1; v++) {
        arr[v] = scratch[v];
        off[v] = 0;
      }
      arr[values - 1] = outArr;
      off[values - 1] = out.offset() + b;
      kernel.block(arr, off, consts, len);
    }
  }
}
