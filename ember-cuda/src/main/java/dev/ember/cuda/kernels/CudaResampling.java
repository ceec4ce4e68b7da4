package dev.ember.cuda.kernels;

import dev.ember.backend.LinearAxis;
import dev.ember.backend.ResamplingKernels;
import dev.ember.backend.View;
import dev.ember.cuda.HostSegments;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.runtime.Workspace;
import dev.ember.tensor.DType;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * Nearest and bilinear interpolation and padding on the GPU (resampling.cu), from the same index tables as
 * CpuResampling (uploaded per call: a few hundred integers). Forward passes run one thread per output element;
 * backward passes one thread per input element, gathering the output gradients that read it through the inverted
 * tables ({@link #invert}) in the CPU's order, so no atomics and every result is the CPU's bit for bit (the kernels
 * are compiled without fused multiply-adds). Padding copies elements of any dtype bit for bit; its backward pass and
 * the interpolations take F32 or F64, and a padding gradient of another dtype goes to {@code other} (the host).
 */
public final class CudaResampling implements ResamplingKernels {
  static final String SOURCE = Sources.load("resampling.cu");

  private final CudaContext ctx;
  private final KernelCache cache;
  private final ResamplingKernels other;
  private final Workspace tables;

  /** Kernels on {@code ctx}; {@code other} takes padding gradients of dtypes other than F32 and F64. */
  public CudaResampling(CudaContext ctx, KernelCache cache, ResamplingKernels other) {
    this.ctx = ctx;
    this.cache = cache;
    this.other = other;
    this.tables = new Workspace(ctx);
  }

  /** The kernel names the Java side launches, for the compile tests. */
  public static List<String> kernelNames() {
    return List.of("rs_gather_b1", "rs_gather_b2", "rs_gather_b4", "rs_gather_b8", "rs_sum_f32", "rs_sum_f64",
        "rs_bilinear_fwd_f32", "rs_bilinear_fwd_f64", "rs_bilinear_bwd_f32", "rs_bilinear_bwd_f64");
  }

  private long fn(String name) {
    return cache.function("resampling", SOURCE, name);
  }

  /** "_f32" or "_f64" for the dtype of the input v, after {@link #check}ing the views; else fails naming the op. */
  private static String suffix(String op, View v, View out) {
    check(op, v, out);
    if (v.dtype() == DType.F32) return "_f32";
    if (v.dtype() == DType.F64) return "_f64";
    throw new IllegalArgumentException("resampling." + op + ": expected float32 or float64, got "
        + v.dtype().torchName() + ": input=" + Shapes.str(v.shapeRef()) + ", out=" + Shapes.str(out.shapeRef()));
  }

  /** Both views on the device, of one dtype; else fails naming the op and the shapes. */
  private static void check(String op, View in, View out) {
    String shapes = ": input=" + Shapes.str(in.shapeRef()) + ", out=" + Shapes.str(out.shapeRef());
    if (!in.storage().onDevice() || !out.storage().onDevice()) {
      throw new IllegalArgumentException("resampling." + op + ": " + (in.storage().onDevice() ? "out" : "input")
          + " is on the cpu, expected a cuda tensor" + shapes);
    }
    if (in.dtype() != out.dtype()) {
      throw new IllegalArgumentException("resampling." + op + ": input is " + in.dtype().torchName() + " but out is "
          + out.dtype().torchName() + shapes);
    }
  }

  /**
   * For each source index s in [0, n), the positions o with map[o] == s (ascending), as {start[n + 1], list}
   * concatenated: start[s] .. start[s + 1] index list. With {@code corners}, the entries are {@code 2 o + k} for
   * the positions o whose corner k (maps[k][o]) is s, k = 0 before 1. A -1 is skipped; any other index outside
   * [0, n) fails, naming the op.
   */
  static int[] invert(String op, int n, int[]... maps) {
    int[] count = new int[n + 1];
    for (int[] m : maps) {
      for (int s : m) {
        if (s == -1) continue;
        if (s < 0 || s >= n) {
          throw new IllegalArgumentException("resampling." + op + ": source index " + s + " is outside [0, " + n + ")");
        }
        count[s + 1]++;
      }
    }
    for (int s = 0; s < n; s++) count[s + 1] += count[s];
    int total = count[n];
    int[] out = new int[n + 1 + total];
    System.arraycopy(count, 0, out, 0, n + 1);
    int[] fill = new int[n];
    int len = maps.length == 0 ? 0 : maps[0].length;
    for (int o = 0; o < len; o++) {
      for (int k = 0; k < maps.length; k++) {
        int s = maps[k][o];
        if (s < 0) continue;
        out[n + 1 + count[s] + fill[s]++] = maps.length == 1 ? o : 2 * o + k;
      }
    }
    return out;
  }

  /** Uploads the int arrays one after another (each 16-byte aligned), then the doubles; returns their addresses. */
  private long[] upload(int[][] ints, double[] doubles) {
    long[] at = new long[ints.length + 1];
    long bytes = 0;
    for (int i = 0; i < ints.length; i++) {
      at[i] = bytes;
      bytes += (4L * ints[i].length + 15) / 16 * 16;
    }
    at[ints.length] = bytes;
    if (doubles != null) bytes += 8L * doubles.length;
    long base = tables.get(Math.max(16, bytes));
    ctx.makeCurrent();
    for (int i = 0; i < ints.length; i++) {
      if (ints[i].length > 0) {
        ctx.driver().memcpyHtoDSync(base + at[i], MemorySegment.ofArray(ints[i]), 4L * ints[i].length);
      }
    }
    if (doubles != null && doubles.length > 0) {
      ctx.driver().memcpyHtoDSync(base + at[ints.length], MemorySegment.ofArray(doubles), 8L * doubles.length);
    }
    for (int i = 0; i < at.length; i++) at[i] += base;
    return at;
  }

  /** The arrays one after another. */
  static int[] concat(int[]... parts) {
    int n = 0;
    for (int[] p : parts) n += p.length;
    int[] out = new int[n];
    int o = 0;
    for (int[] p : parts) {
      System.arraycopy(p, 0, out, o, p.length);
      o += p.length;
    }
    return out;
  }

  /** The arrays one after another. */
  static double[] concat(double[]... parts) {
    int n = 0;
    for (double[] p : parts) n += p.length;
    double[] out = new double[n];
    int o = 0;
    for (double[] p : parts) {
      System.arraycopy(p, 0, out, o, p.length);
      o += p.length;
    }
    return out;
  }

  /** The gather of out = x[p, mapH, mapW] (or the bits of fill where a map is -1), for elements of x's size. */
  private void gather(String op, View x, int planes, int h, int w, int[] mapH, int[] mapW, long fill, View out) {
    check(op, x, out);
    long total = (long) planes * mapH.length * mapW.length;
    if (total == 0) return;
    invert(op, h, mapH); // validates
    invert(op, w, mapW);
    long[] t = upload(new int[][] {mapH, mapW}, null);
    String kernel = "rs_gather_b" + x.dtype().itemSize();
    cache.launch1d(fn(kernel), total, KernelArgs.begin().ptr(KernelArgs.address(x)).ptr(KernelArgs.address(out))
        .ptr(t[0]).ptr(t[1]).i64(fill).i32(h).i32(w).i32(mapH.length).i32(mapW.length).i64(total));
  }

  /** dx[p, r, c] += the gradients of the output positions that read it (maps: -1 reads nothing). */
  private void sum(String op, View g, int planes, int h, int w, int[] mapH, int[] mapW, View dx) {
    String s = suffix(op, g, dx);
    long total = (long) planes * h * w;
    if (total == 0 || mapH.length == 0 || mapW.length == 0) return;
    int[] rows = invert(op, h, mapH);
    int[] cols = invert(op, w, mapW);
    long[] t = upload(new int[][] {rows, cols}, null);
    cache.launch1d(fn("rs_sum" + s), total, KernelArgs.begin().ptr(KernelArgs.address(g))
        .ptr(KernelArgs.address(dx)).ptr(t[0]).ptr(t[0] + 4L * (h + 1)).ptr(t[1]).ptr(t[1] + 4L * (w + 1)).i32(h)
        .i32(w).i32(mapH.length).i32(mapW.length).i64(total));
  }

  @Override
  public void nearestForward(View x, int planes, int ih, int iw, int[] hIdx, int[] wIdx, View y) {
    suffix("nearestForward", x, y);
    gather("nearestForward", x, planes, ih, iw, hIdx, wIdx, 0, y);
  }

  @Override
  public void nearestBackward(View g, int planes, int ih, int iw, int[] hIdx, int[] wIdx, View dx) {
    sum("nearestBackward", g, planes, ih, iw, hIdx, wIdx, dx);
  }

  @Override
  public void bilinearForward(View x, int planes, int ih, int iw, LinearAxis h, LinearAxis w, View y) {
    String s = suffix("bilinearForward", x, y);
    int oh = h.i0().length;
    int ow = w.i0().length;
    long total = (long) planes * oh * ow;
    if (total == 0) return;
    invert("bilinearForward", ih, h.i0(), h.i1());
    invert("bilinearForward", iw, w.i0(), w.i1());
    long[] t = upload(new int[][] {concat(h.i0(), h.i1(), w.i0(), w.i1())}, concat(h.l0(), h.l1(), w.l0(), w.l1()));
    cache.launch1d(fn("rs_bilinear_fwd" + s), total, KernelArgs.begin().ptr(KernelArgs.address(x))
        .ptr(KernelArgs.address(y)).ptr(t[0]).ptr(t[1]).i32(ih).i32(iw).i32(oh).i32(ow).i64(total));
  }

  @Override
  public void bilinearBackward(View g, int planes, int ih, int iw, LinearAxis h, LinearAxis w, View dx) {
    String s = suffix("bilinearBackward", g, dx);
    int oh = h.i0().length;
    int ow = w.i0().length;
    long total = (long) planes * ih * iw;
    if (total == 0 || oh == 0 || ow == 0) return;
    int[] rows = invert("bilinearBackward", ih, h.i0(), h.i1());
    int[] cols = invert("bilinearBackward", iw, w.i0(), w.i1());
    long[] t = upload(new int[][] {rows, cols}, concat(h.l0(), h.l1(), w.l0(), w.l1()));
    cache.launch1d(fn("rs_bilinear_bwd" + s), total, KernelArgs.begin().ptr(KernelArgs.address(g))
        .ptr(KernelArgs.address(dx)).ptr(t[0]).ptr(t[0] + 4L * (ih + 1)).ptr(t[1]).ptr(t[1] + 4L * (iw + 1))
        .ptr(t[2]).i32(ih).i32(iw).i32(oh).i32(ow).i64(total));
  }

  @Override
  public void padForward(View x, int planes, int h, int w, int[] mapH, int[] mapW, double value, View out) {
    gather("padForward", x, planes, h, w, mapH, mapW, bits(x.dtype(), value), out);
  }

  @Override
  public void padBackward(View g, int planes, int h, int w, int[] mapH, int[] mapW, View dx) {
    if (g.dtype() != DType.F32 && g.dtype() != DType.F64) {
      other.padBackward(g, planes, h, w, mapH, mapW, dx);
      return;
    }
    sum("padBackward", g, planes, h, w, mapH, mapW, dx);
  }

  /** The bits of {@code value} stored as one element of {@code t} (as the CPU's setDouble stores it), little-endian. */
  static long bits(DType t, double value) {
    Storage s = Storage.allocate(t, 1);
    s.setDouble(0, value);
    MemorySegment m = HostSegments.of(s);
    long b = 0;
    for (int i = 0; i < t.itemSize(); i++) b |= (m.get(ValueLayout.JAVA_BYTE, i) & 0xFFL) << (8 * i);
    return b;
  }
}
