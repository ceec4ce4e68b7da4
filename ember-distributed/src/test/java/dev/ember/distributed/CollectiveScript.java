package dev.ember.distributed;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * The collectives every rank runs in the thread and process tests, and their single-process reference:
 * each rank's inputs are a function of (tag, rank, size), so every rank can compute all the others' and
 * check its results bitwise against the summation order documented on {@link ProcessGroup}.
 */
final class CollectiveScript {
  private CollectiveScript() {}

  static float[] floats(int tag, int rank, int n) {
    SplittableRandom r = new SplittableRandom(tag * 1_000_003L + rank * 7919L + n);
    float[] a = new float[n];
    for (int i = 0; i < n; i++) a[i] = (float) value(r);
    return a;
  }

  static double[] doubles(int tag, int rank, int n) {
    SplittableRandom r = new SplittableRandom(tag * 1_000_003L + rank * 7919L + n + 17);
    double[] a = new double[n];
    for (int i = 0; i < n; i++) a[i] = value(r);
    return a;
  }

  /** Signed values over 2^-10 .. 2^21, so that the order of a sum shows in its rounding. */
  private static double value(SplittableRandom r) {
    long bits = r.nextLong();
    return Math.scalb((bits >>> 11) * 0x1.0p-53 - 0.5, (int) (bits & 31) - 10);
  }

  /** The first rank whose element {@code i} of an {@code n}-element buffer enters the sum (ProcessGroup's order). */
  static int firstRank(int i, int n, int world, int elementBytes) {
    if ((long) n * elementBytes <= ProcessGroup.CHAIN_MAX_BYTES || n < world) return 0; // chain: rank order
    int q = n / world;
    int rem = n % world;
    for (int c = 0; c < world; c++) {
      int end = (c + 1) * q + Math.min(c + 1, rem);
      if (i < end) return c;
    }
    throw new AssertionError(i);
  }

  static float[] reference(int tag, int n, int world, boolean mean) {
    float[][] x = new float[world][];
    for (int r = 0; r < world; r++) x[r] = floats(tag, r, n);
    float[] out = new float[n];
    for (int i = 0; i < n; i++) {
      int c = firstRank(i, n, world, Float.BYTES);
      float s = x[c][i];
      for (int k = 1; k < world; k++) s = s + x[(c + k) % world][i];
      out[i] = mean ? s / world : s;
    }
    return out;
  }

  static double[] referenceDouble(int tag, int n, int world, boolean mean) {
    double[][] x = new double[world][];
    for (int r = 0; r < world; r++) x[r] = doubles(tag, r, n);
    double[] out = new double[n];
    for (int i = 0; i < n; i++) {
      int c = firstRank(i, n, world, Double.BYTES);
      double s = x[c][i];
      for (int k = 1; k < world; k++) s = s + x[(c + k) % world][i];
      out[i] = mean ? s / world : s;
    }
    return out;
  }

  /** Runs allreduce (float and double, SUM and MEAN), broadcast, allgather and barrier; null or the first mismatch. */
  static String run(ProcessGroup g, int[] sizes) {
    int rank = g.rank();
    int w = g.worldSize();
    for (int n : sizes) {
      for (AllReduceOp op : AllReduceOp.values()) {
        float[] x = floats(op.ordinal(), rank, n);
        g.allReduce(x, op);
        float[] want = reference(op.ordinal(), n, w, op == AllReduceOp.MEAN);
        if (!Arrays.equals(x, want)) return mismatch("allreduce float " + op, n, x, want);
      }
      double[] d = doubles(5, rank, n);
      g.allReduce(d, AllReduceOp.SUM);
      double[] wantD = referenceDouble(5, n, w, false);
      if (!Arrays.equals(d, wantD)) return "allreduce double SUM n=" + n + " differs from the reference on rank " + rank;
      int root = n % w;
      float[] b = floats(7, rank, n);
      g.broadcast(b, root);
      if (!Arrays.equals(b, floats(7, root, n))) return mismatch("broadcast from " + root, n, b, floats(7, root, n));
      double[] bd = doubles(8, rank, n);
      g.broadcast(bd, w - 1 - root);
      if (!Arrays.equals(bd, doubles(8, w - 1 - root, n))) return "broadcast double n=" + n + " differs on rank " + rank;
      float[] all = g.allGather(floats(9, rank, n));
      float[] wantAll = new float[n * w];
      for (int r = 0; r < w; r++) System.arraycopy(floats(9, r, n), 0, wantAll, r * n, n);
      if (!Arrays.equals(all, wantAll)) return mismatch("allgather", n, all, wantAll);
      double[] allD = g.allGather(doubles(10, rank, n));
      for (int r = 0; r < w; r++) {
        if (!Arrays.equals(Arrays.copyOfRange(allD, r * n, (r + 1) * n), doubles(10, r, n))) {
          return "allgather double n=" + n + ": rank " + r + "'s block differs on rank " + rank;
        }
      }
      double[] meanD = doubles(11, rank, n);
      g.allReduce(meanD, AllReduceOp.MEAN);
      if (!Arrays.equals(meanD, referenceDouble(11, n, w, true))) return "allreduce double MEAN n=" + n + " differs on rank " + rank;
    }
    g.barrier();
    return null;
  }

  private static String mismatch(String what, int n, float[] got, float[] want) {
    for (int i = 0; i < want.length; i++) {
      if (Float.floatToIntBits(got[i]) != Float.floatToIntBits(want[i])) {
        return what + " n=" + n + ": element " + i + " is " + got[i] + ", the reference " + want[i];
      }
    }
    return what + " n=" + n + ": lengths " + got.length + " vs " + want.length;
  }
}
