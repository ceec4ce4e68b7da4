package dev.ember.cuda.kernels;

import static dev.ember.cuda.kernels.OnDevice.assertClose;

import dev.ember.backend.LinearAxis;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.backend.cpu.CpuResampling;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * CudaResampling on the GPU (skipped without one) against CpuResampling on random inputs, bit for bit: nearest and
 * bilinear up- and down-sampling forward and backward (realistic and random tables), padding forward for every dtype
 * and backward for F32 and F64, inputs at a nonzero offset.
 */
class CudaResamplingGpuTest {
  static final CpuResampling CPU = CpuResampling.INSTANCE;
  static final int PLANES = 6;
  static final int[][] SIZES = {{13, 17, 32, 40}, {40, 31, 9, 11}, {8, 8, 8, 8}};

  /** x of [PLANES, h, w] at storage offset 5, random. */
  static StridedView input(Random r, DType t, int h, int w) {
    int n = PLANES * h * w;
    StridedView base = ResamplingHostTest.random(r, t, n + 5);
    return new StridedView(base.storage(), new int[] {PLANES, h, w}, new int[] {h * w, w, 1}, 5);
  }

  @Test
  void interpolationForwardAndBackwardAreTheCpus() {
    Random r = new Random(5);
    try (OnDevice d = new OnDevice()) {
      CudaResampling gpu = new CudaResampling(d.ctx, d.ctx.kernels(), CPU);
      int cases = 0;
      for (DType t : new DType[] {DType.F32, DType.F64}) {
        for (int c = 0; c < 2 * SIZES.length; c++) {
          int[] s = SIZES[c / 2];
          int ih = s[0], iw = s[1], oh = s[2], ow = s[3];
          boolean rnd = c % 2 == 1;
          String what = t + " " + ih + "x" + iw + " -> " + oh + "x" + ow + (rnd ? " random tables" : "");
          int[] hIdx = rnd ? ResamplingHostTest.randomMap(r, ih, oh) : ResamplingHostTest.nearest(ih, oh);
          int[] wIdx = rnd ? ResamplingHostTest.randomMap(r, iw, ow) : ResamplingHostTest.nearest(iw, ow);
          LinearAxis lh = rnd ? ResamplingHostTest.randomAxis(r, ih, oh) : ResamplingHostTest.linear(ih, oh);
          LinearAxis lw = rnd ? ResamplingHostTest.randomAxis(r, iw, ow) : ResamplingHostTest.linear(iw, ow);
          StridedView x = input(r, t, ih, iw);
          View dxIn = d.upload(x);

          StridedView y = StridedView.allocate(t, PLANES, oh, ow);
          View dy = d.upload(StridedView.allocate(t, PLANES, oh, ow));
          CPU.nearestForward(x, PLANES, ih, iw, hIdx, wIdx, y);
          gpu.nearestForward(dxIn, PLANES, ih, iw, hIdx, wIdx, dy);
          assertClose(y, d.download(dy), 0, 0, "nearest forward " + what);

          StridedView g = input(r, t, oh, ow);
          View dg = d.upload(g);
          StridedView gx = StridedView.allocate(t, PLANES, ih, iw);
          View dgx = d.upload(gx);
          CPU.nearestBackward(g, PLANES, ih, iw, hIdx, wIdx, gx);
          gpu.nearestBackward(dg, PLANES, ih, iw, hIdx, wIdx, dgx);
          assertClose(gx, d.download(dgx), 0, 0, "nearest backward " + what);

          StridedView yb = StridedView.allocate(t, PLANES, oh, ow);
          View dyb = d.upload(yb);
          CPU.bilinearForward(x, PLANES, ih, iw, lh, lw, yb);
          gpu.bilinearForward(dxIn, PLANES, ih, iw, lh, lw, dyb);
          assertClose(yb, d.download(dyb), 0, 0, "bilinear forward " + what);

          StridedView gb = StridedView.allocate(t, PLANES, ih, iw);
          View dgb = d.upload(gb);
          CPU.bilinearBackward(g, PLANES, ih, iw, lh, lw, gb);
          gpu.bilinearBackward(dg, PLANES, ih, iw, lh, lw, dgb);
          assertClose(gb, d.download(dgb), 0, 0, "bilinear backward " + what);
          cases += 4;
        }
      }
      System.out.println("CudaResamplingGpuTest: " + cases + " interpolation cases equal the CPU bit for bit");
    }
  }

  @Test
  void paddingForwardAndBackwardAreTheCpus() {
    Random r = new Random(6);
    try (OnDevice d = new OnDevice()) {
      CudaResampling gpu = new CudaResampling(d.ctx, d.ctx.kernels(), CPU);
      int h = 9, w = 14, cases = 0;
      for (String mode : new String[] {"reflect", "replicate", "constant"}) {
        int[] mapH = ResamplingHostTest.padMap(mode, h, 3, 5), mapW = ResamplingHostTest.padMap(mode, w, 7, 2);
        int oh = mapH.length, ow = mapW.length;
        for (DType t : new DType[] {DType.F32, DType.F64, DType.I64, DType.I32, DType.BOOL}) {
          StridedView x = input(r, t, h, w);
          StridedView out = StridedView.allocate(t, PLANES, oh, ow);
          View dout = d.upload(StridedView.allocate(t, PLANES, oh, ow));
          CPU.padForward(x, PLANES, h, w, mapH, mapW, 3, out);
          gpu.padForward(d.upload(x), PLANES, h, w, mapH, mapW, 3, dout);
          assertClose(out, d.download(dout), 0, 0, "pad forward " + mode + " " + t);
          cases++;
        }
        for (DType t : new DType[] {DType.F32, DType.F64}) {
          StridedView g = input(r, t, oh, ow);
          StridedView gx = StridedView.allocate(t, PLANES, h, w);
          View dgx = d.upload(gx);
          CPU.padBackward(g, PLANES, h, w, mapH, mapW, gx);
          gpu.padBackward(d.upload(g), PLANES, h, w, mapH, mapW, dgx);
          assertClose(gx, d.download(dgx), 0, 0, "pad backward " + mode + " " + t);
          cases++;
        }
      }
      System.out.println("CudaResamplingGpuTest: " + cases + " padding cases equal the CPU bit for bit");
    }
  }
}
