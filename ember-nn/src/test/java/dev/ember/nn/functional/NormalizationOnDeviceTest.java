package dev.ember.nn.functional;

import static dev.ember.nn.functional.FakeDeviceChecks.leaf;
import static dev.ember.nn.functional.FakeDeviceChecks.same;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.FakeDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Batch, layer, group and RMS norm on the fake device take the view path of {@link
 * dev.ember.backend.NormalizationKernels} (statistics, weights, biases and running statistics stay on the device):
 * every call reaching the backend is watched, and none may be a double-array method (statistics coming back to the
 * host, weights or statistics going down from it) or a copy into host memory. The fake backend runs the view
 * methods' defaults over the CPU kernels, which do the CPU path's arithmetic: outputs, gradients and running
 * statistics are the CPU's to the bit, step after step.
 */
class NormalizationOnDeviceTest {
  private static final Device FAKE = FakeDevice.DEVICE;
  /** The double-array methods: on a device each of them waits for the queue (a read) or uploads from the host. */
  private static final Set<String> HOST_ARRAYS = Set.of("rowStats", "channelStats", "rowNormalize", "groupNormalize",
      "rowAffine", "channelAffine", "channelBackward", "rowBackward", "updateRunning");

  /** One normalization call: input, weight, bias, running mean, running var (each may be null), step from 1. */
  interface Norm {
    Tensor apply(Tensor x, Tensor w, Tensor b, Tensor rm, Tensor rv, int step);
  }

  private static Arguments row(String name, Norm norm, DType dt, int[] shape, int[] param, boolean bias,
      boolean running, Set<String> expected) {
    return Arguments.of(name, norm, dt, shape, param, bias, running, expected);
  }

  static Stream<Arguments> cases() {
    Set<String> bn = Set.of("batchNormalizeInto", "channelBackwardFrom");
    Set<String> rowN = Set.of("rowNormalizeInto", "rowBackwardFrom");
    Set<String> grp = Set.of("groupNormalizeInto", "rowBackwardFrom");
    int[] c3 = {3};
    return Stream.of(
        row("batch_norm train momentum 0.1", (x, w, b, rm, rv, k) -> Normalization.batchNorm(x, rm, rv, w, b, true,
            0.1, 1e-5), DType.F32, new int[] {4, 3, 5, 5}, c3, true, true, bn),
        // PyTorch's momentum=None: a cumulative average, 1 / numBatchesTracked
        row("batch_norm train momentum None", (x, w, b, rm, rv, k) -> Normalization.batchNorm(x, rm, rv, w, b, true,
            1.0 / k, 1e-5), DType.F32, new int[] {4, 3, 7}, c3, true, true, bn),
        row("batch_norm train no running stats no affine", (x, w, b, rm, rv, k) -> Normalization.batchNorm(x, null,
            null, null, null, true, 0.1, 1e-5), DType.F32, new int[] {6, 5}, null, false, false, bn),
        row("batch_norm eval", (x, w, b, rm, rv, k) -> Normalization.batchNorm(x, rm, rv, w, b, false, 0.1, 1e-3),
            DType.F32, new int[] {2, 3, 4, 4}, c3, true, true, bn),
        row("batch_norm train float64", (x, w, b, rm, rv, k) -> Normalization.batchNorm(x, rm, rv, w, b, true, 0.1,
            1e-5), DType.F64, new int[] {5, 3, 6}, c3, true, true, bn),
        row("layer_norm", (x, w, b, rm, rv, k) -> Normalization.layerNorm(x, new int[] {4, 6}, w, b, 1e-5), DType.F32,
            new int[] {3, 4, 6}, new int[] {4, 6}, true, false, rowN),
        row("layer_norm no affine", (x, w, b, rm, rv, k) -> Normalization.layerNorm(x, new int[] {40}, null, null,
            1e-5), DType.F32, new int[] {5, 40}, null, false, false, rowN),
        row("layer_norm float64", (x, w, b, rm, rv, k) -> Normalization.layerNorm(x, new int[] {7}, w, b, 1e-5),
            DType.F64, new int[] {6, 7}, new int[] {7}, true, false, rowN),
        row("rms_norm", (x, w, b, rm, rv, k) -> Normalization.rmsNorm(x, new int[] {6}, w, null), DType.F32,
            new int[] {3, 4, 6}, new int[] {6}, false, false, rowN),
        row("rms_norm no weight", (x, w, b, rm, rv, k) -> Normalization.rmsNorm(x, new int[] {33}, null, 1e-6),
            DType.F32, new int[] {4, 33}, null, false, false, rowN),
        row("group_norm", (x, w, b, rm, rv, k) -> Normalization.groupNorm(x, 3, w, b, 1e-5), DType.F32,
            new int[] {2, 6, 3, 3}, new int[] {6}, true, false, grp),
        row("group_norm no affine", (x, w, b, rm, rv, k) -> Normalization.groupNorm(x, 2, null, null, 1e-5),
            DType.F32, new int[] {3, 4, 10}, null, false, false, grp),
        row("group_norm float64", (x, w, b, rm, rv, k) -> Normalization.groupNorm(x, 2, w, b, 1e-5), DType.F64,
            new int[] {2, 4, 5}, new int[] {4}, true, false, grp),
        // bfloat16: computed in float32 copies (HalfCompute), on the device too
        row("layer_norm bfloat16", (x, w, b, rm, rv, k) -> Normalization.layerNorm(x, new int[] {8}, w, b, 1e-5),
            DType.BF16, new int[] {3, 8}, new int[] {8}, true, false, rowN));
  }

  private static Tensor input(Generator g, DType dt, int[] shape, double scale, double shift) {
    return Tensor.rand(g, shape).mul(scale).add(shift).to(dt);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void onTheFakeDeviceItIsTheCpuToTheBitWithNothingThroughTheHost(String name, Norm norm, DType dt, int[] shape,
      int[] param, boolean bias, boolean running, Set<String> expected) throws Exception {
    Generator gen = new Generator(11);
    int c = shape[1];
    Tensor w = param == null ? null : input(gen, dt, param, 1, 0.5);
    Tensor b = bias ? input(gen, dt, param, 1, -0.5) : null;
    Tensor rm = running ? input(gen, dt, new int[] {c}, 0.2, 0) : null;
    Tensor rv = running ? input(gen, dt, new int[] {c}, 1, 0.5) : null;
    Tensor wc = leaf(w, Device.CPU, true);
    Tensor bc = leaf(b, Device.CPU, true);
    Tensor rmc = leaf(rm, Device.CPU, false);
    Tensor rvc = leaf(rv, Device.CPU, false);
    Tensor wd = leaf(w, FAKE, true);
    Tensor bd = leaf(b, FAKE, true);
    Tensor rmd = leaf(rm, FAKE, false);
    Tensor rvd = leaf(rv, FAKE, false);
    for (int step = 1; step <= 2; step++) {
      Tensor x = input(gen, dt, shape, 3, -1);
      Tensor up = input(gen, dt, shape, 1, -0.5);
      Tensor xc = leaf(x, Device.CPU, true);
      Tensor xd = leaf(x, FAKE, true);
      Tensor upd = up.to(FAKE);
      Tensor yc = norm.apply(xc, wc, bc, rmc, rvc, step);
      yc.mul(up).sum().backward();
      List<String> calls = new ArrayList<>();
      Tensor yd;
      try (AutoCloseable watch = FakeDevice.watch((op, args) -> {
        calls.add(op);
        if ((op.equals("copy") || op.equals("copyNonBlocking")) && args[1] instanceof View v
            && !v.storage().onDevice()) {
          calls.add("copy into host memory");
        }
      })) {
        yd = norm.apply(xd, wd, bd, rmd, rvd, step);
        yd.mul(upd).sum().backward();
      }
      String at = name + " step " + step;
      Set<String> reached = new TreeSet<>(calls);
      for (String host : HOST_ARRAYS) {
        assertTrue(!reached.contains(host), at + ": the device path called " + host + "; calls " + reached);
      }
      assertTrue(!reached.contains("copy into host memory"), at + ": the device path read to the host; " + reached);
      assertTrue(reached.containsAll(expected), at + ": expected " + expected + " among " + reached);
      same(yc, yd, at + " output");
      same(xc.grad(), xd.grad(), at + " input gradient");
      if (wc != null) same(wc.grad(), wd.grad(), at + " weight gradient");
      if (bc != null) same(bc.grad(), bd.grad(), at + " bias gradient");
      if (rmc != null) {
        same(rmc, rmd, at + " running mean");
        same(rvc, rvd, at + " running var");
      }
    }
  }
}
