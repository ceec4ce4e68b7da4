package dev.ember.nn.functional;

import static dev.ember.nn.functional.FakeDeviceChecks.leaf;
import static dev.ember.nn.functional.FakeDeviceChecks.same;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.backend.AttentionKernels;
import dev.ember.backend.View;
import dev.ember.nn.functional.Attention.Kernel;
import dev.ember.nn.functional.Attention.Path;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * scaled_dot_product_attention on the fake device: the tiled path keeps the rows' logsumexps (and the float mask's
 * gradient) in device tensors, through {@link AttentionKernels#forwardInto} and {@link AttentionKernels#backwardFrom}.
 * Every call reaching the backend is watched: none may be the double-array {@code forward} or {@code backward} (a
 * copy to the host in every forward, an upload in every backward on a GPU) or a copy into host memory. The fake
 * backend runs the view methods' defaults over the CPU kernels, so outputs and gradients must be the CPU's to the
 * bit, on the plain path (short sequences), the tiled path (long ones, or asked for), the fused forward the CPU
 * takes without a gradient from {@link Kernel#FUSED_ABOVE} scores, causal or not, with or without a bool or float
 * mask, a window, and dropout.
 */
class AttentionOnDeviceTest {
  private static final Device FAKE = FakeDevice.DEVICE;
  /** AUTO, tiled above 200 scores per batch element: the short cases plain, the long ones tiled. */
  private static final Kernel AUTO_SMALL = new Kernel(Path.AUTO, 16, 32, 200);

  /** A mask for q's dtype over [B, H, L, S]: none, bool, or float (with a gradient). */
  enum MaskKind { NONE, BOOL, FLOAT, FLOAT_PER_BATCH }

  private static Arguments row(String name, DType dt, int b, int l, int s, int e, int ev, boolean causal, int window,
      MaskKind mask, double dropout, Kernel kernel, boolean tiled) {
    return Arguments.of(name, dt, new int[] {b, l, s, e, ev}, causal, window, mask, dropout, kernel, tiled);
  }

  static Stream<Arguments> cases() {
    return Stream.of(
        row("short plain", DType.F32, 2, 5, 7, 4, 3, false, -1, MaskKind.NONE, 0, AUTO_SMALL, false),
        row("short plain causal bool mask", DType.F32, 2, 9, 9, 8, 8, true, -1, MaskKind.BOOL, 0, AUTO_SMALL, false),
        row("short plain float mask", DType.F64, 2, 6, 8, 4, 5, false, -1, MaskKind.FLOAT, 0, AUTO_SMALL, false),
        row("long tiled", DType.F32, 2, 33, 40, 8, 6, false, -1, MaskKind.NONE, 0, AUTO_SMALL, true),
        row("long tiled causal", DType.F32, 2, 40, 40, 8, 8, true, -1, MaskKind.NONE, 0, AUTO_SMALL, true),
        row("long tiled causal float64", DType.F64, 1, 37, 37, 5, 4, true, -1, MaskKind.NONE, 0, AUTO_SMALL, true),
        row("long tiled bool mask", DType.F32, 2, 30, 35, 8, 8, false, -1, MaskKind.BOOL, 0, AUTO_SMALL, true),
        row("long tiled float mask", DType.F32, 2, 30, 35, 8, 8, false, -1, MaskKind.FLOAT, 0, AUTO_SMALL, true),
        row("long tiled causal float mask per batch", DType.F64, 2, 25, 25, 4, 4, true, -1, MaskKind.FLOAT_PER_BATCH,
            0, AUTO_SMALL, true),
        row("tiled window", DType.F32, 1, 20, 24, 4, 4, false, 3, MaskKind.NONE, 0, Kernel.tiled(4, 8), true),
        row("tiled dropout", DType.F32, 2, 12, 12, 4, 4, false, -1, MaskKind.NONE, 0.2, Kernel.tiled(4, 8), true),
        row("tiled causal dropout float mask", DType.F64, 1, 10, 10, 4, 4, true, -1, MaskKind.FLOAT, 0.3,
            Kernel.tiled(4, 4), true));
  }

  /** Collects the calls reaching the fake backend, marking the double-array attention methods and host copies. */
  private static AutoCloseable watch(List<String> calls) {
    return FakeDevice.watch((op, args) -> {
      calls.add(op);
      if (args.length > 0 && args[0] instanceof AttentionKernels.Problem
          && (op.equals("forward") || op.equals("backward"))) {
        calls.add("double-array " + op);
      }
      if ((op.equals("copy") || op.equals("copyNonBlocking")) && args[1] instanceof View v
          && !v.storage().onDevice()) {
        calls.add("copy into host memory");
      }
      if ((op.equals("copy") || op.equals("copyNonBlocking")) && args[0] instanceof View v
          && !v.storage().onDevice()) {
        calls.add(v.numel() > 1 ? "upload" : "scalar upload");
      }
    });
  }

  private static void noHost(List<String> calls, String at) {
    Set<String> reached = new TreeSet<>(calls);
    assertTrue(!reached.contains("double-array forward"), at + ": the device path called forward(double[]); "
        + reached);
    assertTrue(!reached.contains("double-array backward"), at + ": the device path called backward(double[]); "
        + reached);
    assertTrue(!reached.contains("copy into host memory"), at + ": the device path read to the host; " + reached);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void onTheFakeDeviceItIsTheCpuToTheBitWithNoLogsumexpThroughTheHost(String name, DType dt, int[] dims,
      boolean causal, int window, MaskKind maskKind, double dropout, Kernel kernel, boolean tiled) throws Exception {
    int b = dims[0], l = dims[1], s = dims[2], e = dims[3], ev = dims[4], h = 2;
    Generator gen = new Generator(31);
    Tensor q = Tensor.randn(gen, DType.F64, b, h, l, e).to(dt);
    Tensor k = Tensor.randn(gen, DType.F64, b, h, s, e).to(dt);
    Tensor v = Tensor.randn(gen, DType.F64, b, h, s, ev).to(dt);
    Tensor up = Tensor.randn(gen, DType.F64, b, h, l, ev).to(dt);
    Tensor mask = switch (maskKind) {
      case NONE -> null;
      // a few keys hidden per row, never all of them
      case BOOL -> boolMask(gen, b, l, s);
      case FLOAT -> Tensor.randn(gen, DType.F64, l, s).to(dt);
      case FLOAT_PER_BATCH -> Tensor.randn(gen, DType.F64, b, 1, l, s).to(dt);
    };
    boolean maskGrad = mask != null && mask.dtype().isFloatingPoint();
    Tensor qc = leaf(q, Device.CPU, true), kc = leaf(k, Device.CPU, true), vc = leaf(v, Device.CPU, true);
    Tensor mc = leaf(mask, Device.CPU, maskGrad);
    Tensor yc = Attention.scaledDotProductAttention(qc, kc, vc, mc, dropout, causal, null, window, new Generator(5),
        kernel);
    yc.mul(up).sum().backward();

    Tensor qd = leaf(q, FAKE, true), kd = leaf(k, FAKE, true), vd = leaf(v, FAKE, true);
    Tensor md = leaf(mask, FAKE, maskGrad);
    Tensor upd = up.to(FAKE);
    List<String> calls = new ArrayList<>();
    Tensor yd;
    try (AutoCloseable w = watch(calls)) {
      yd = Attention.scaledDotProductAttention(qd, kd, vd, md, dropout, causal, null, window, new Generator(5), kernel);
      yd.mul(upd).sum().backward();
    }
    noHost(calls, name);
    // the plain path's scalar uploads are the elementwise layer's (q times the scale, where's backward)
    assertTrue(!calls.contains("upload"), name + ": the device path uploaded a tensor; " + new TreeSet<>(calls));
    if (tiled) {
      assertTrue(calls.contains("forwardInto") && calls.contains("backwardFrom"), name + ": the tiled path ran "
          + new TreeSet<>(calls));
      assertTrue(!calls.contains("scalar upload"), name + ": the tiled path uploaded a scalar; "
          + new TreeSet<>(calls));
    } else {
      assertTrue(!calls.contains("forwardInto"), name + ": expected the plain path; " + new TreeSet<>(calls));
    }
    same(yc, yd, name + " output");
    same(qc.grad(), qd.grad(), name + " query gradient");
    same(kc.grad(), kd.grad(), name + " key gradient");
    same(vc.grad(), vd.grad(), name + " value gradient");
    if (maskGrad) {
      assertNotNull(md.grad(), name + " mask gradient");
      same(mc.grad(), md.grad(), name + " mask gradient");
    }
  }

  /** [B, 1, L, S], about 80% true, key 0 always: every row sees at least one key. */
  private static Tensor boolMask(Generator gen, int b, int l, int s) {
    double[] u = Tensor.rand(gen, DType.F64, b, l, s).toDoubleArray();
    boolean[] m = new boolean[u.length];
    for (int i = 0; i < m.length; i++) m[i] = i % s == 0 || u[i] > 0.2;
    return Tensor.of(m, b, 1, l, s);
  }

  /**
   * Without a gradient to follow the CPU takes the fused float32 forward from {@link Kernel#FUSED_ABOVE} scores (and
   * the plain per-batch forward below): on the fake device the fused choice leads to forwardInto, the plain one to
   * plainForward, both the CPU's bits with no lse array.
   */
  @Test
  void inferenceForwardsFusedAndPlainAreTheCpus() throws Exception {
    Generator gen = new Generator(8);
    for (int t : new int[] {24, 520}) {
      Tensor q = Tensor.randn(gen, 1, 2, t, 16);
      Tensor k = Tensor.randn(gen, 1, 2, t, 16);
      Tensor v = Tensor.randn(gen, 1, 2, t, 16);
      for (boolean causal : new boolean[] {false, true}) {
        String at = "T=" + t + (causal ? " causal" : "");
        Tensor yc;
        Tensor yd;
        List<String> calls = new ArrayList<>();
        try (Grad off = Grad.off()) {
          yc = Attention.scaledDotProductAttention(q, k, v, null, 0, causal, null, Attention.NO_WINDOW, null,
              Kernel.AUTO);
          Tensor qd = q.to(FAKE), kd = k.to(FAKE), vd = v.to(FAKE);
          try (AutoCloseable w = watch(calls)) {
            yd = Attention.scaledDotProductAttention(qd, kd, vd, null, 0, causal, null, Attention.NO_WINDOW, null,
                Kernel.AUTO);
          }
        }
        noHost(calls, at);
        assertTrue(calls.contains(t > 512 ? "forwardInto" : "plainForward"), at + ": " + new TreeSet<>(calls));
        same(yc, yd, at + " output");
      }
    }
  }

  /**
   * A float64 mask that is a view at an offset into its storage (the second of two [L, S] slices) reaches the
   * kernels as it is, its per-batch bases counting from the storage's start: the mask's gradient view must land at
   * the places the CPU's array does for the same mask at offset 0 (the CPU path itself indexes its array past the end
   * for such a mask, a known bug outside this test's scope, so the reference is the mask's copy).
   */
  @Test
  void aMaskAtAnOffsetGetsTheCpusGradient() throws Exception {
    Generator gen = new Generator(4);
    int l = 21, s = 19;
    Tensor q = Tensor.randn(gen, DType.F64, 2, l, 4);
    Tensor k = Tensor.randn(gen, DType.F64, 2, s, 4);
    Tensor v = Tensor.randn(gen, DType.F64, 2, s, 3);
    Tensor both = Tensor.randn(gen, DType.F64, 2, l, s);
    Tensor up = Tensor.randn(gen, DType.F64, 2, l, 3);
    Kernel kernel = Kernel.tiled(4, 8);
    Tensor qc = leaf(q, Device.CPU, true), kc = leaf(k, Device.CPU, true), vc = leaf(v, Device.CPU, true);
    Tensor mc = leaf(both.select(0, 1), Device.CPU, true);
    assertEquals(0, mc.offset());
    Tensor yc = Attention.scaledDotProductAttention(qc, kc, vc, mc, 0, true, null, -1, null, kernel);
    yc.mul(up).sum().backward();
    Tensor qd = leaf(q, FAKE, true), kd = leaf(k, FAKE, true), vd = leaf(v, FAKE, true);
    Tensor bd = leaf(both, FAKE, true);
    Tensor md = bd.select(0, 1);
    assertEquals(l * s, md.offset(), "the mask starts past its storage's start");
    Tensor upd = up.to(FAKE);
    List<String> calls = new ArrayList<>();
    Tensor yd;
    try (AutoCloseable w = watch(calls)) {
      yd = Attention.scaledDotProductAttention(qd, kd, vd, md, 0, true, null, -1, null, kernel);
      yd.mul(upd).sum().backward();
    }
    noHost(calls, "offset mask");
    assertTrue(calls.contains("backwardFrom"), "offset mask: " + new TreeSet<>(calls));
    same(yc, yd, "offset mask output");
    same(qc.grad(), qd.grad(), "offset mask query gradient");
    same(mc.grad(), bd.grad().select(0, 1), "offset mask gradient");
    same(Tensor.zeros(DType.F64, l, s), bd.grad().select(0, 0), "the other slice's gradient");
  }

  /**
   * MultiheadAttention on the fake device, causal with a bool attention mask and key padding mask, with a gradient
   * (the attention core) and with the weights wanted: the CPU's bits, the causal and bool masks made on the device
   * (no [L, S] upload, no scalar upload for them).
   */
  @Test
  void multiheadAttentionMasksAreMadeOnTheDevice() throws Exception {
    for (boolean weights : new boolean[] {false, true}) {
      for (DType dt : new DType[] {DType.F32, DType.F64}) {
        String at = dt + (weights ? " with weights" : " core");
        Generator gen = new Generator(3);
        dev.ember.nn.MultiheadAttention cpu = new dev.ember.nn.MultiheadAttention(16, 4, 0, true, true, gen);
        cpu.to(dt);
        dev.ember.nn.MultiheadAttention dev = new dev.ember.nn.MultiheadAttention(16, 4, 0, true, true,
            new Generator(3));
        dev.to(dt);
        dev.to(FAKE);
        Tensor x = Tensor.randn(gen, DType.F64, 2, 11, 16).to(dt);
        boolean[] am = new boolean[11 * 11];
        boolean[] kp = new boolean[2 * 11];
        for (int i = 0; i < am.length; i++) am[i] = i % 7 == 3;
        kp[10] = true;
        kp[11 + 9] = true;
        Tensor mask = Tensor.of(am, 11, 11);
        Tensor pad = Tensor.of(kp, 2, 11);
        Tensor xc = leaf(x, Device.CPU, true);
        Tensor yc = cpu.forward(xc, xc, xc, pad, mask, weights, true).output();
        yc.sum().backward();
        Tensor xd = leaf(x, FAKE, true);
        Tensor maskD = mask.to(FAKE);
        Tensor padD = pad.to(FAKE);
        List<String> calls = new ArrayList<>();
        Tensor yd;
        try (AutoCloseable w = watch(calls)) {
          yd = dev.forward(xd, xd, xd, padD, maskD, weights, true).output();
          yd.sum().backward();
        }
        noHost(calls, at);
        assertTrue(!calls.contains("upload"), at + ": uploaded a mask; " + new TreeSet<>(calls));
        assertTrue(calls.contains("bandMask"), at + ": the causal mask came from bandMask; " + new TreeSet<>(calls));
        same(yc, yd, at + " output");
        same(xc.grad(), xd.grad(), at + " input gradient");
      }
    }
  }

  /** The view methods name the op and the shapes when the logsumexp or mask-gradient view does not fit. */
  @Test
  void badLogsumexpViewsAreTypedErrors() {
    AttentionKernels cpu = Device.CPU.backend().attention();
    AttentionKernels.Problem p = new AttentionKernels.Problem(1, 3, 4, 2, 2, 1, false, -1, 2, 2, null, 0, 0);
    Tensor q = Tensor.zeros(1, 3, 2);
    Tensor k = Tensor.zeros(1, 4, 2);
    Tensor out = Tensor.zeros(1, 3, 2);
    IllegalArgumentException wrongType = assertThrows(IllegalArgumentException.class,
        () -> cpu.forwardInto(p, q, k, k, out, Tensor.zeros(3)));
    assertEquals("scaled_dot_product_attention: forwardInto needs lse as a contiguous float64 view of 3 elements, got "
        + "float32 [3]", wrongType.getMessage());
    IllegalArgumentException wrongSize = assertThrows(IllegalArgumentException.class,
        () -> cpu.backwardFrom(p, q, k, k, out, Tensor.zeros(DType.F64, 4), out, q, k, k, null));
    assertEquals("scaled_dot_product_attention: backwardFrom needs lse as a contiguous float64 view of 3 elements, "
        + "got float64 [4]", wrongSize.getMessage());
    IllegalArgumentException noMask = assertThrows(IllegalArgumentException.class,
        () -> cpu.backwardFrom(p, q, k, k, out, Tensor.zeros(DType.F64, 3), out, q, k, k, Tensor.zeros(DType.F64, 12)));
    assertTrue(noMask.getMessage().startsWith("scaled_dot_product_attention: backwardFrom got a mask gradient view"),
        noMask.getMessage());
  }
}
