package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.LinearAxis;
import dev.ember.backend.StridedView;
import dev.ember.backend.cpu.CpuResampling;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * resampling.cu without a GPU: its kernel bodies compiled as host C++ (HostDriver, g++), fed the tables
 * CudaResampling uploads (the inverted ones for the backward passes), and compared with CpuResampling bit for bit:
 * nearest and bilinear up- and down-sampling forward and backward (F32, F64), padding forward for every dtype and
 * backward (F32, F64), with reflect, replicate and constant maps.
 */
class ResamplingHostTest {
  static final CpuResampling CPU = CpuResampling.INSTANCE;
  static final int PLANES = 3;
  static final int[][] SIZES = {{3, 4, 7, 9}, {9, 8, 4, 3}, {5, 5, 5, 5}, {1, 6, 4, 2}};

  @TempDir static Path dir;
  static HostDriver host;

  @BeforeAll
  static void compile() throws Exception {
    host = HostDriver.compile(dir, "resampling.cu", CudaResampling.SOURCE, "resampling_host.cpp");
  }

  /** Requests and the CPU's outputs their answers must equal. */
  static final class Batch {
    final StringBuilder req = new StringBuilder();
    final List<StridedView> want = new ArrayList<>();
    final List<String> what = new ArrayList<>();

    Batch header(String kind, int t, int h, int w, int oh, int ow) {
      req.append(kind).append(' ').append(t).append(' ').append(h).append(' ').append(w).append(' ').append(oh)
          .append(' ').append(ow).append(' ').append(PLANES);
      return this;
    }

    Batch ints(int[] a) {
      req.append(' ').append(a.length);
      for (int v : a) req.append(' ').append(v);
      return this;
    }

    Batch doubles(double[] a) {
      req.append(' ').append(a.length);
      for (double v : a) req.append(' ').append(Long.toHexString(Double.doubleToRawLongBits(v)));
      return this;
    }

    Batch elems(StridedView v) {
      Storage s = v.storage();
      req.append(' ').append(s.size());
      for (int i = 0; i < s.size(); i++) req.append(' ').append(Long.toHexString(ElementwiseHostTest.bits(s, i)));
      return this;
    }

    void expect(StridedView out, String name) {
      req.append('\n');
      want.add(out);
      what.add(name);
    }

    void check() throws Exception {
      List<String> got = host.answer(req.toString(), want.size());
      for (int c = 0; c < want.size(); c++) {
        long[] g = HostDriver.hex(got.get(c));
        Storage s = want.get(c).storage();
        assertEquals(s.size(), g.length, what.get(c));
        for (int i = 0; i < s.size(); i++) {
          long w = ElementwiseHostTest.bits(s, i);
          if (w != g[i]) {
            throw new AssertionError(what.get(c) + ": element " + i + " is 0x" + Long.toHexString(g[i]) + ", the CPU's 0x"
                + Long.toHexString(w));
          }
        }
      }
    }
  }

  static StridedView random(Random r, DType t, int... shape) {
    StridedView v = StridedView.allocate(t, shape);
    Storage s = v.storage();
    for (int i = 0; i < s.size(); i++) {
      switch (t) {
        case F32, F64, BF16, F16 -> s.setDouble(i, r.nextGaussian());
        case BOOL -> s.setDouble(i, r.nextInt(2));
        default -> s.setDouble(i, r.nextInt(2001) - 1000);
      }
    }
    return v;
  }

  static StridedView copy(StridedView v) {
    StridedView c = StridedView.allocate(v.dtype(), v.shapeRef());
    System.arraycopy(v.storage().array(), 0, c.storage().array(), 0, v.storage().size());
    return c;
  }

  /** PyTorch's nearest source index floor(o * in / out). */
  static int[] nearest(int in, int out) {
    int[] m = new int[out];
    for (int o = 0; o < out; o++) m[o] = Math.min(in - 1, (int) Math.floor(o * (double) in / out));
    return m;
  }

  /** Bilinear weights as align_corners=False computes them (edges give i0 == i1). */
  static LinearAxis linear(int in, int out) {
    int[] i0 = new int[out], i1 = new int[out];
    double[] l0 = new double[out], l1 = new double[out];
    for (int o = 0; o < out; o++) {
      double src = Math.max(0, (o + 0.5) * in / out - 0.5);
      i0[o] = Math.min(in - 1, (int) src);
      i1[o] = Math.min(in - 1, i0[o] + 1);
      l1[o] = src - i0[o];
      l0[o] = 1 - l1[o];
    }
    return new LinearAxis(i0, i1, l0, l1);
  }

  /** Random sources in [0, in), repeats likely. */
  static int[] randomMap(Random r, int in, int out) {
    int[] m = new int[out];
    for (int o = 0; o < out; o++) m[o] = r.nextInt(in);
    return m;
  }

  /** Random corners (equal half the time) and weights. */
  static LinearAxis randomAxis(Random r, int in, int out) {
    int[] i0 = new int[out], i1 = new int[out];
    double[] l0 = new double[out], l1 = new double[out];
    for (int o = 0; o < out; o++) {
      i0[o] = r.nextInt(in);
      i1[o] = r.nextBoolean() ? i0[o] : r.nextInt(in);
      l0[o] = r.nextDouble();
      l1[o] = r.nextDouble();
    }
    return new LinearAxis(i0, i1, l0, l1);
  }

  static int dtypeCode(DType t) {
    return t == DType.F32 ? 0 : 1;
  }

  @Test
  void nearestForwardAndBackwardAreTheCpus() throws Exception {
    Random r = new Random(1);
    Batch b = new Batch();
    for (DType t : new DType[] {DType.F32, DType.F64}) {
      for (int c = 0; c < 2 * SIZES.length; c++) {
        int[] s = SIZES[c / 2];
        int ih = s[0], iw = s[1], oh = s[2], ow = s[3];
        int[] hIdx = c % 2 == 0 ? nearest(ih, oh) : randomMap(r, ih, oh);
        int[] wIdx = c % 2 == 0 ? nearest(iw, ow) : randomMap(r, iw, ow);
        StridedView x = random(r, t, PLANES, ih, iw);
        StridedView y = StridedView.allocate(t, PLANES, oh, ow);
        CPU.nearestForward(x, PLANES, ih, iw, hIdx, wIdx, y);
        b.header("G", t.itemSize(), ih, iw, oh, ow).req.append(" 0");
        b.ints(hIdx).ints(wIdx).elems(x).expect(y, "nearest forward " + t + " " + ih + "x" + iw + " -> " + oh + "x" + ow);
        StridedView g = random(r, t, PLANES, oh, ow);
        StridedView dx0 = random(r, t, PLANES, ih, iw); // not zero: the kernels add to what is there
        StridedView dx = copy(dx0);
        CPU.nearestBackward(g, PLANES, ih, iw, hIdx, wIdx, dx);
        b.header("S", dtypeCode(t), ih, iw, oh, ow).ints(CudaResampling.invert("t", ih, hIdx))
            .ints(CudaResampling.invert("t", iw, wIdx)).elems(g).elems(dx0)
            .expect(dx, "nearest backward " + t + " " + ih + "x" + iw + " -> " + oh + "x" + ow);
      }
    }
    b.check();
  }

  @Test
  void bilinearForwardAndBackwardAreTheCpus() throws Exception {
    Random r = new Random(2);
    Batch b = new Batch();
    for (DType t : new DType[] {DType.F32, DType.F64}) {
      for (int c = 0; c < 2 * SIZES.length; c++) {
        int[] s = SIZES[c / 2];
        int ih = s[0], iw = s[1], oh = s[2], ow = s[3];
        // align_corners=False's tables, then random ones: many outputs share both corners, so the order counts
        LinearAxis lh = c % 2 == 0 ? linear(ih, oh) : randomAxis(r, ih, oh);
        LinearAxis lw = c % 2 == 0 ? linear(iw, ow) : randomAxis(r, iw, ow);
        double[] wt = CudaResampling.concat(lh.l0(), lh.l1(), lw.l0(), lw.l1());
        StridedView x = random(r, t, PLANES, ih, iw);
        StridedView y = StridedView.allocate(t, PLANES, oh, ow);
        CPU.bilinearForward(x, PLANES, ih, iw, lh, lw, y);
        b.header("BF", dtypeCode(t), ih, iw, oh, ow).ints(CudaResampling.concat(lh.i0(), lh.i1(), lw.i0(), lw.i1())).doubles(wt)
            .elems(x).expect(y, "bilinear forward " + t + " " + ih + "x" + iw + " -> " + oh + "x" + ow);
        StridedView g = random(r, t, PLANES, oh, ow);
        StridedView dx0 = random(r, t, PLANES, ih, iw);
        StridedView dx = copy(dx0);
        CPU.bilinearBackward(g, PLANES, ih, iw, lh, lw, dx);
        b.header("BB", dtypeCode(t), ih, iw, oh, ow).ints(CudaResampling.invert("t", ih, lh.i0(), lh.i1()))
            .ints(CudaResampling.invert("t", iw, lw.i0(), lw.i1())).doubles(wt).elems(g).elems(dx0)
            .expect(dx, "bilinear backward " + t + " " + ih + "x" + iw + " -> " + oh + "x" + ow);
      }
    }
    b.check();
  }

  /** Output position o of a pad of `before` and `after` around n: reflect, replicate or constant (-1 outside). */
  static int[] padMap(String mode, int n, int before, int after) {
    int[] m = new int[before + n + after];
    for (int o = 0; o < m.length; o++) {
      int i = o - before;
      m[o] = switch (mode) {
        case "reflect" -> {
          int p = 2 * (n - 1);
          int j = Math.floorMod(i, p);
          yield j < n ? j : p - j;
        }
        case "replicate" -> Math.max(0, Math.min(n - 1, i));
        default -> i < 0 || i >= n ? -1 : i;
      };
    }
    return m;
  }

  @Test
  void paddingIsTheCpusForEveryDtype() throws Exception {
    Random r = new Random(3);
    Batch b = new Batch();
    int h = 4, w = 5;
    for (String mode : new String[] {"reflect", "replicate", "constant"}) {
      int[] mapH = padMap(mode, h, 3, 2), mapW = padMap(mode, w, 1, 4);
      int oh = mapH.length, ow = mapW.length;
      for (DType t : DType.values()) {
        StridedView x = random(r, t, PLANES, h, w);
        StridedView out = StridedView.allocate(t, PLANES, oh, ow);
        CPU.padForward(x, PLANES, h, w, mapH, mapW, -2.5, out);
        b.header("G", t.itemSize(), h, w, oh, ow).req.append(' ').append(Long.toHexString(CudaResampling.bits(t, -2.5)));
        b.ints(mapH).ints(mapW).elems(x).expect(out, "pad forward " + mode + " " + t);
      }
      for (DType t : new DType[] {DType.F32, DType.F64}) {
        StridedView g = random(r, t, PLANES, oh, ow);
        StridedView dx0 = random(r, t, PLANES, h, w);
        StridedView dx = copy(dx0);
        CPU.padBackward(g, PLANES, h, w, mapH, mapW, dx);
        b.header("S", dtypeCode(t), h, w, oh, ow).ints(CudaResampling.invert("t", h, mapH))
            .ints(CudaResampling.invert("t", w, mapW)).elems(g).elems(dx0).expect(dx, "pad backward " + mode + " " + t);
      }
    }
    b.check();
  }

  @Test
  void invertListsTheReadersOfEachSourceInOrder() {
    // map [1, -1, 0, 1]: source 0 is read by 2, source 1 by 0 and 3
    assertEquals(List.of(0, 1, 3, 2, 0, 3), box(CudaResampling.invert("t", 2, new int[] {1, -1, 0, 1})));
    // corners: i0 = [0, 1], i1 = [1, 1]: source 0 by (0, k0); source 1 by (0, k1), (1, k0), (1, k1)
    assertEquals(List.of(0, 1, 4, 0, 1, 2, 3), box(CudaResampling.invert("t", 2, new int[] {0, 1}, new int[] {1, 1})));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CudaResampling.invert("nearestBackward", 3, new int[] {0, 3}));
    assertTrue(e.getMessage().startsWith("resampling.nearestBackward: source index 3 is outside [0, 3)"), e.getMessage());
  }

  static List<Integer> box(int[] a) {
    List<Integer> l = new ArrayList<>();
    for (int v : a) l.add(v);
    return l;
  }

}
