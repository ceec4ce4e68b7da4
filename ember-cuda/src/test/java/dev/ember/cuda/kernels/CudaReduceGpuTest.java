package dev.ember.cuda.kernels;

import static dev.ember.cuda.kernels.OnDevice.CPU;
import static dev.ember.cuda.kernels.OnDevice.assertClose;
import static dev.ember.cuda.kernels.OnDevice.layout;
import static dev.ember.cuda.kernels.OnDevice.random;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.ReduceOp;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.cuda.kernels.OnDevice.Layout;
import dev.ember.tensor.DType;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** CudaReduce against the CPU backend on random data, contiguous and strided; skipped without a GPU. */
class CudaReduceGpuTest {
  private OnDevice dev;
  private CudaReduce k;
  private final Random rnd = new Random(42);

  @BeforeEach
  void gpu() {
    dev = new OnDevice();
    k = new CudaReduce(dev.ctx, dev.ctx.kernels());
  }

  @AfterEach
  void free() {
    if (dev != null) dev.close();
  }

  private static final int[][][] SHAPES_AND_AXES = {
      {{7}, {0}}, {{3, 5}, {0}}, {{3, 5}, {1}}, {{3, 5}, {0, 1}}, {{4, 33, 5}, {1}}, {{4, 33, 5}, {0, 2}},
      {{4, 33, 5}, {2}}, {{2, 300}, {1}}, {{300, 40}, {0}}, {{5, 1, 64}, {1, 2}}, {{4, 0}, {1}}, {{0, 4}, {1}},
  };

  private static DType outType(ReduceOp op, DType in) {
    if (op == ReduceOp.MAX || op == ReduceOp.MIN || in.isFloatingPoint()) return in;
    return DType.I64;
  }

  private void checkReduce(ReduceOp op, StridedView x, int[] axes, double rtol, double atolPerElement, String what) {
    int[] oShape = x.shapeRef().clone();
    long nInner = 1;
    for (int a : axes) {
      nInner *= oShape[a];
      oShape[a] = 1;
    }
    DType ot = outType(op, x.dtype());
    StridedView expect = StridedView.allocate(ot, oShape);
    CPU.reduce(op, x, axes, expect);
    View out = dev.upload(StridedView.allocate(ot, oShape));
    k.reduce(op, dev.upload(x), axes, out);
    assertClose(expect, dev.download(out), rtol, atolPerElement * nInner + 1e-6, what);
  }

  @Test
  void reducesEveryDtypeOverEveryShapeAndLayout() {
    for (ReduceOp op : ReduceOp.values()) {
      for (DType t : Elementwise.dtypes()) {
        if (t == DType.BOOL && (op == ReduceOp.PROD)) continue;
        for (int[][] sa : SHAPES_AND_AXES) {
          if (op == ReduceOp.PROD && Arrays.stream(sa[0]).reduce(1, (a, b) -> a * b) > 400) continue;
          if ((op == ReduceOp.MAX || op == ReduceOp.MIN) && Arrays.stream(sa[0]).anyMatch(d -> d == 0)) continue;
          for (Layout l : Layout.values()) {
            StridedView x = random(rnd, t, op == ReduceOp.PROD ? 2 : 1000, sa[0]);
            if (op == ReduceOp.PROD && t.isFloatingPoint()) { // factors around 1: products stay in range
              StridedView r = random(rnd, t, 0, sa[0]);
              for (int i = 0; i < r.storage().size(); i++) x.storage().setDouble(i, 1 + 0.5 * r.storage().getDouble(i));
            }
            boolean exact = !t.isFloatingPoint() || op == ReduceOp.MAX || op == ReduceOp.MIN;
            double rtol = exact ? 0 : t == DType.F32 ? 1e-5 : 1e-12;
            double atol = exact ? 0 : t == DType.F32 ? 1e-6 : 1e-13;
            String what = op + " " + t + " " + Arrays.toString(sa[0]) + " over " + Arrays.toString(sa[1]) + " " + l;
            if (exact) {
              int[] oShape = sa[0].clone();
              for (int a : sa[1]) oShape[a] = 1;
              StridedView xl = layout(x, l);
              StridedView expect = StridedView.allocate(outType(op, t), oShape);
              CPU.reduce(op, xl, sa[1], expect);
              View out = dev.upload(StridedView.allocate(outType(op, t), oShape));
              k.reduce(op, dev.upload(xl), sa[1], out);
              assertClose(expect, dev.download(out), 0, 0, what);
            } else {
              checkReduce(op, layout(x, l), sa[1], rtol, atol, what);
            }
          }
        }
      }
    }
  }

  @Test
  void longRowsSplitIntoChunksGiveTheSum() {
    for (DType t : new DType[] {DType.F32, DType.F64, DType.I64}) {
      StridedView flat = random(rnd, t, 1000, 1 << 17);
      checkReduce(ReduceOp.SUM, flat, new int[] {0}, 1e-5, t == DType.F32 ? 1e-7 : 1e-14, "full sum " + t);
      StridedView rows = random(rnd, t, 1000, 3, 100_003);
      checkReduce(ReduceOp.SUM, rows, new int[] {1}, 1e-5, t == DType.F32 ? 1e-7 : 1e-14, "3 long rows " + t);
      checkReduce(ReduceOp.MAX, layout(rows, Layout.GAPPED), new int[] {1}, 0, 0, "3 long gapped rows max " + t);
    }
    assertTrue(CudaReduce.chunks(3, 100_003) > 1, "the test reaches the split path");
  }

  @Test
  void reductionsAreDeterministic() {
    StridedView x = random(rnd, DType.F32, 0, 7, 200_001);
    View xd = dev.upload(x);
    View o1 = dev.upload(StridedView.allocate(DType.F32, 7, 1));
    View o2 = dev.upload(StridedView.allocate(DType.F32, 7, 1));
    k.reduce(ReduceOp.SUM, xd, new int[] {1}, o1);
    k.reduce(ReduceOp.SUM, xd, new int[] {1}, o2);
    assertClose(dev.download(o1), dev.download(o2), 0, 0, "the same bits twice");
  }

  @Test
  void maxAndMinPropagateNaN() {
    StridedView x = random(rnd, DType.F32, 0, 4, 50);
    x.storage().setDouble(50 + 7, Double.NaN);
    x.storage().setDouble(3 * 50 + 49, Double.NaN);
    for (ReduceOp op : new ReduceOp[] {ReduceOp.MAX, ReduceOp.MIN, ReduceOp.SUM}) {
      for (int axis = 0; axis < 2; axis++) {
        int[] oShape = {4, 50};
        oShape[axis] = 1;
        StridedView expect = StridedView.allocate(DType.F32, oShape);
        CPU.reduce(op, x, new int[] {axis}, expect);
        View out = dev.upload(StridedView.allocate(DType.F32, oShape));
        k.reduce(op, dev.upload(x), new int[] {axis}, out);
        assertClose(expect, dev.download(out), 1e-5, 1e-5, op + " with NaN over " + axis);
      }
    }
  }

  @Test
  void boolAnyAndAllAsMaxAndMin() {
    StridedView x = random(rnd, DType.BOOL, 0, 6, 40);
    for (int j = 0; j < 40; j++) x.storage().setLong(2 * 40 + j, 0); // a row of zeros: any = 0
    for (int j = 0; j < 40; j++) x.storage().setLong(4 * 40 + j, 1); // a row of ones: all = 1
    for (ReduceOp op : new ReduceOp[] {ReduceOp.MAX, ReduceOp.MIN}) {
      StridedView expect = StridedView.allocate(DType.BOOL, 6, 1);
      CPU.reduce(op, x, new int[] {1}, expect);
      View out = dev.upload(StridedView.allocate(DType.BOOL, 6, 1));
      k.reduce(op, dev.upload(x), new int[] {1}, out);
      assertClose(expect, dev.download(out), 0, 0, "bool " + op);
    }
  }

  @Test
  void argReduceFindsTheFirstExtremeWithNaNLargest() {
    int[][] shapes = {{7}, {3, 5}, {4, 33, 5}, {2, 1000}};
    for (DType t : Elementwise.dtypes()) {
      for (int[] shape : shapes) {
        for (int axis = 0; axis < shape.length; axis++) {
          for (Layout l : Layout.values()) {
            StridedView x = random(rnd, t, 3, shape); // integers in [-3, 3]: many ties
            if (t.isFloatingPoint()) {
              for (int i = 0; i < x.storage().size(); i++) x.storage().setDouble(i, Math.floor(x.storage().getDouble(i) * 3));
              if (x.numel() > 10) x.storage().setDouble(x.storage().size() / 2, Double.NaN);
            }
            StridedView xl = layout(x, l);
            int[] oShape = shape.clone();
            oShape[axis] = 1;
            for (boolean max : new boolean[] {true, false}) {
              StridedView expect = StridedView.allocate(DType.I64, oShape);
              CPU.argReduce(max, xl, axis, expect);
              View out = dev.upload(StridedView.allocate(DType.I64, oShape));
              k.argReduce(max, dev.upload(xl), axis, out);
              assertClose(expect, dev.download(out), 0, 0, (max ? "argmax " : "argmin ") + t + " "
                  + Arrays.toString(shape) + " axis " + axis + " " + l);
            }
          }
        }
      }
    }
  }

  @Test
  void softmaxAndLogSoftmaxMatchTheCpu() {
    int[][] shapes = {{3, 5}, {4, 33, 5}, {2, 1000}, {1, 5000}};
    for (DType t : new DType[] {DType.F32, DType.F64}) {
      for (int[] shape : shapes) {
        for (int axis = 0; axis < shape.length; axis++) {
          for (Layout l : Layout.values()) {
            StridedView x = random(rnd, t, 0, shape);
            for (int i = 0; i < x.storage().size(); i++) x.storage().setDouble(i, 8 * x.storage().getDouble(i));
            StridedView xl = layout(x, l);
            for (boolean log : new boolean[] {false, true}) {
              StridedView expect = StridedView.allocate(t, shape);
              CPU.softmax(xl, axis, log, expect);
              // out in the same layout as x: strided outputs are written through
              View out = dev.upload(layout(StridedView.allocate(t, shape), l));
              k.softmax(dev.upload(xl), axis, log, out);
              double tol = t == DType.F32 ? 2e-6 : 1e-14;
              assertClose(expect, dev.download(out), tol * 10, tol, (log ? "log_softmax " : "softmax ") + t + " "
                  + Arrays.toString(shape) + " axis " + axis + " " + l);
            }
          }
        }
      }
    }
  }

  @Test
  void softmaxBackwardMatchesTheCpu() {
    int[][] shapes = {{3, 5}, {4, 33, 70}, {2, 100_003}};
    for (DType t : new DType[] {DType.F32, DType.F64}) {
      for (int[] shape : shapes) {
        for (boolean log : new boolean[] {false, true}) {
          StridedView x = random(rnd, t, 0, shape);
          StridedView y = StridedView.allocate(t, shape);
          CPU.softmax(x, shape.length - 1, log, y);
          StridedView g = random(rnd, t, 0, shape);
          StridedView expect = StridedView.allocate(t, shape);
          CPU.softmaxBackward(g, y, log, expect);
          View out = dev.upload(StridedView.allocate(t, shape));
          k.softmaxBackward(dev.upload(g), dev.upload(y), log, out);
          double tol = t == DType.F32 ? 1e-6 : 1e-14;
          assertClose(expect, dev.download(out), 1e-4, tol, (log ? "log_softmax" : "softmax") + " backward " + t + " "
              + Arrays.toString(shape));
        }
      }
    }
  }

  @Test
  void cumsumMatchesTheCpuBitForBit() {
    int[][] shapes = {{7}, {3, 5}, {4, 33, 5}, {2, 3000}};
    DType[][] types = {{DType.F32, DType.F32}, {DType.F64, DType.F64}, {DType.I64, DType.I64}, {DType.I32, DType.I64},
        {DType.BOOL, DType.I64}};
    for (DType[] tt : types) {
      for (int[] shape : shapes) {
        for (int axis = 0; axis < shape.length; axis++) {
          for (Layout l : Layout.values()) {
            StridedView xl = layout(random(rnd, tt[0], 1000, shape), l);
            StridedView expect = StridedView.allocate(tt[1], shape);
            CPU.cumsum(xl, axis, expect);
            View out = dev.upload(layout(StridedView.allocate(tt[1], shape), l));
            k.cumsum(dev.upload(xl), axis, out);
            assertClose(expect, dev.download(out), 0, 0, "cumsum " + tt[0] + " " + Arrays.toString(shape) + " axis "
                + axis + " " + l);
          }
        }
      }
    }
  }

  @Test
  void allFiniteFindsNaNAndInfinityAnywhere() {
    for (DType t : new DType[] {DType.F32, DType.F64}) {
      int n = 1_000_003;
      StridedView x = random(rnd, t, 0, n);
      x.storage().setDouble(5, t == DType.F32 ? Float.MAX_VALUE : Double.MAX_VALUE);
      x.storage().setDouble(6, t == DType.F32 ? Float.MIN_VALUE : Double.MIN_VALUE);
      assertTrue(k.allFinite(dev.upload(x)), "finite " + t);
      for (double bad : new double[] {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY}) {
        for (int at : new int[] {0, n / 2, n - 1}) {
          StridedView y = StridedView.allocate(t, n);
          CPU.copy(x, y);
          y.storage().setDouble(at, bad);
          assertFalse(k.allFinite(dev.upload(y)), bad + " at " + at + " " + t);
        }
      }
      assertTrue(k.allFinite(dev.upload(StridedView.allocate(t, 0))), "empty");
      // a contiguous view at an offset reads only its own elements
      StridedView z = StridedView.allocate(t, 10);
      z.storage().setDouble(0, Double.NaN);
      assertTrue(k.allFinite(dev.upload(new StridedView(z.storage(), new int[] {9}, new int[] {1}, 1))));
    }
  }

  @Test
  void allFiniteAgreesWithTheCpuOnRandomData() {
    StridedView x = random(rnd, DType.F32, 0, 1000);
    assertEquals(CPU.allFinite(x), k.allFinite(dev.upload(x)));
  }
}
