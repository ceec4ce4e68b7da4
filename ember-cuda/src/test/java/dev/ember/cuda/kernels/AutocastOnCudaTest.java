package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.amp.Autocast;
import dev.ember.cuda.testing.Gpu;
import dev.ember.nn.Linear;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.Transformer;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.nn.loss.CrossEntropyLoss;
import dev.ember.optim.GradScaler;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * BF16 and F16 on cuda:0 against the CPU (skipped without a GPU): conversions to the bit, the tensor-core GEMM and
 * its mixed-dtype backward within the half dtype's rounding, and whole models trained under autocast (with a
 * GradScaler for F16) giving the CPU's losses within mixed-precision tolerance.
 */
class AutocastOnCudaTest {
  static final Device CUDA = Device.cuda(0);
  static final Device FAKE = Device.of("fake", 0);
  static final DType[] HALVES = {DType.BF16, DType.F16};

  // Each check runs on cuda:0 where there is a GPU, and everywhere on core's strict fake device (the CPU's kernels
  // behind a device boundary that fails any tensor left on the host), which checks the checks themselves.

  @Test
  void onCuda() {
    Gpu.assumeDevice();
    conversions(CUDA);
    gemm(CUDA);
    training(CUDA);
    scalerOverflow(CUDA);
  }

  @Test
  void onTheFakeDevice() {
    conversions(FAKE);
    gemm(FAKE);
    training(FAKE);
    scalerOverflow(FAKE);
  }

  private static int[] bits(Tensor t) {
    Tensor c = t.to(Device.CPU).contiguous();
    int n = (int) c.numel();
    int[] out = new int[n];
    for (int i = 0; i < n; i++) {
      out[i] = switch (c.dtype()) {
        case F32 -> Float.floatToRawIntBits(c.storage().floats()[c.offset() + i]);
        case BF16, F16 -> c.storage().halves()[c.offset() + i] & 0xffff;
        default -> throw new AssertionError(c.dtype());
      };
    }
    return out;
  }

  /** Every BF16/F16 pattern widened, float32 rounding boundaries narrowed, and fills: the CPU's bits. */
  static void conversions(Device dev) {
    short[] all = new short[65536];
    for (int i = 0; i < all.length; i++) all[i] = (short) i;
    Tensor floats = ElementwiseHostTest.boundaryFloats();
    for (DType h : HALVES) {
      Tensor every = TensorData.wrapHalf(all, h, 256, 256);
      Tensor onDevice = every.to(dev);
      assertArrayEquals(bits(every.to(DType.F32)), bits(onDevice.to(DType.F32)), h + " -> f32 on cuda");
      // strided: the CPU's copy goes through double there, which quiets signalling NaNs (cuda keeps their payload,
      // as both do on the contiguous path), so NaNs need only be NaNs
      int[] want = bits(every.t().to(DType.F32));
      int[] got = bits(onDevice.t().to(DType.F32));
      for (int i = 0; i < want.length; i++) {
        boolean nans = Float.isNaN(Float.intBitsToFloat(want[i])) && Float.isNaN(Float.intBitsToFloat(got[i]));
        if (!nans) assertEquals(want[i], got[i], h + " -> f32, transposed, element " + i);
      }
      DType other = h == DType.BF16 ? DType.F16 : DType.BF16;
      assertArrayEquals(bits(every.to(other)), bits(onDevice.to(other)), h + " -> " + other + " on cuda");
      assertArrayEquals(bits(floats.to(h)), bits(floats.to(dev).to(h)), "f32 rounding boundaries -> " + h);
      Tensor z = Tensor.zeros(h, 3, 5).to(dev);
      z.fill_(2.7);
      assertArrayEquals(bits(Tensor.zeros(h, 3, 5).fill_(2.7)), bits(z), "fill " + h);
    }
  }

  /**
   * |got - want| <= rel * (|want| + 1e-2 * max |want|) everywhere (a half dtype's rounding of a product, plus a little
   * of its scale), else the count and the first miss; prints how many are close (the GPU run's log).
   */
  static void assertClose(Tensor want, Tensor got, double rel, String what) {
    float[] w = want.to(Device.CPU).to(DType.F32).toFloatArray();
    float[] g = got.to(Device.CPU).to(DType.F32).toFloatArray();
    assertEquals(w.length, g.length, what);
    double scale = 0;
    for (float v : w) scale = Math.max(scale, Math.abs(v));
    int bad = 0;
    String first = null;
    for (int i = 0; i < w.length; i++) {
      if (!(Math.abs(g[i] - w[i]) <= rel * (Math.abs(w[i]) + 1e-2 * scale)) && bad++ == 0) {
        first = "element " + i + ": want " + w[i] + ", got " + g[i];
      }
    }
    System.out.println(what + ": " + (w.length - bad) + "/" + w.length + " close");
    assertEquals(0, bad, what + ": " + bad + " of " + w.length + " differ, first " + first);
  }

  private static double rel(DType h) {
    return h == DType.BF16 ? 1.0 / 64 : 1.0 / 512; // two units in the last place of the rounded product
  }

  /** The half GEMM (tensor cores on cuda) and its mixed-dtype backward, within the half dtype's rounding. */
  static void gemm(Device dev) {
    for (DType h : HALVES) {
      Generator g = new Generator(3);
      Tensor a = Tensor.randn(g, 3, 64, 96).to(h);
      Tensor b = Tensor.randn(g, 3, 96, 80).to(h);
      assertClose(a.matmul(b), a.to(dev).matmul(b.to(dev)), rel(h), h + " bmm");
      assertEquals(h, a.to(dev).matmul(b.to(dev)).dtype());
      Tensor at = Tensor.randn(g, 3, 96, 64).to(h).transpose(1, 2); // cuBLAS's transposed operand
      assertClose(at.matmul(b), at.to(dev).matmul(b.to(dev)), rel(h), h + " bmm, a transposed");
      // the backward multiplies an F32 gradient by a half operand: widened on the device, as on the CPU
      Tensor x = Tensor.randn(g, 33, 70).to(h).requiresGrad(true);
      Tensor w = Tensor.randn(g, 50, 70).to(h).requiresGrad(true);
      Tensor xd = x.detach().to(dev).requiresGrad(true);
      Tensor wd = w.detach().to(dev).requiresGrad(true);
      Tensor up = Tensor.randn(g, 33, 50);
      x.matmul(w.t()).to(DType.F32).mul(up).sum().backward();
      xd.matmul(wd.t()).to(DType.F32).mul(up.to(dev)).sum().backward();
      assertEquals(h, xd.grad().dtype());
      assertClose(x.grad(), xd.grad(), rel(h), h + " matmul's x gradient");
      assertClose(w.grad(), wd.grad(), rel(h), h + " matmul's w gradient");
    }
  }

  /** Per-step losses of {@code steps} SGD steps under autocast to {@code h} (a GradScaler for F16) on device. */
  private static List<Double> train(Supplier<Module> make, DType h, Device device, int steps, Tensor x, Tensor y,
      Tensor mask) {
    Module m = make.get();
    m.to(device);
    Optimizer opt = new SGD(m.parameters(), Map.of("lr", 0.05));
    GradScaler scaler = new GradScaler(h == DType.F16);
    CrossEntropyLoss ce = new CrossEntropyLoss();
    Tensor xd = x.to(device);
    Tensor yd = y.to(device);
    Tensor md = mask == null ? null : mask.to(device);
    List<Double> losses = new ArrayList<>();
    for (int s = 0; s < steps; s++) {
      opt.zeroGrad();
      Tensor loss;
      try (Autocast ac = Autocast.enable(h)) {
        Tensor out = md == null ? m.call(xd) : ((TransformerEncoderLayer) m).forward(xd, md, null, false);
        loss = ce.forward(out.reshape(-1, out.shape()[out.dim() - 1]), yd);
      }
      assertEquals(DType.F32, loss.dtype(), "the loss runs in F32 under autocast");
      scaler.scale(loss).backward();
      for (Tensor p : m.parameters()) {
        assertEquals(DType.F32, p.dtype(), "master weights stay F32");
        assertEquals(DType.F32, p.grad().dtype(), "their gradients are F32");
        assertEquals(device, p.grad().device());
      }
      scaler.step(opt);
      scaler.update();
      losses.add(loss.item());
    }
    return losses;
  }

  private static void assertSameLosses(List<Double> cpu, List<Double> cuda, double rel, String what) {
    for (int i = 0; i < cpu.size(); i++) {
      double c = cpu.get(i);
      double d = cuda.get(i);
      assertTrue(Double.isFinite(d) && Math.abs(c - d) <= rel * Math.abs(c), what + " step " + i + ": cpu " + cpu
          + ", cuda " + cuda);
    }
    assertTrue(cuda.get(cuda.size() - 1) < cuda.get(0), what + " learns: " + cuda);
  }

  /** An MLP and LeNet under BF16 and F16 autocast, a transformer layer under BF16: the CPU's losses. */
  static void training(Device dev) {
    for (DType h : HALVES) {
      Generator g = new Generator(11);
      Tensor x = Tensor.randn(g, 32, 64);
      Tensor y = Tensor.randint(g, 0, 10, 32);
      Supplier<Module> mlp = () -> new Sequential(new Linear(64, 128, true, new Generator(1)), new ReLU(),
          new Linear(128, 10, true, new Generator(2)));
      assertSameLosses(train(mlp, h, Device.CPU, 6, x, y, null), train(mlp, h, dev, 6, x, y, null), 2e-2,
          "mlp " + h);
      Tensor img = Tensor.randn(g, 16, 1, 28, 28);
      Tensor lab = Tensor.randint(g, 0, 10, 16);
      Supplier<Module> lenet = () -> {
        Generator.manualSeed(5);
        return Models.lenet5(10);
      };
      assertSameLosses(train(lenet, h, Device.CPU, 4, img, lab, null), train(lenet, h, dev, 4, img, lab, null), 3e-2,
          "lenet " + h);
    }
    Generator g = new Generator(12);
    Tensor seq = Tensor.randn(g, 4, 16, 32);
    Tensor tok = Tensor.randint(g, 0, 32, 4 * 16);
    Tensor mask = Transformer.generateSquareSubsequentMask(16);
    Supplier<Module> layer = () -> new TransformerEncoderLayer(32, 4, 64, 0.0, "relu", 1e-5, true, false, true,
        new Generator(7));
    assertSameLosses(train(layer, DType.BF16, Device.CPU, 4, seq, tok, mask),
        train(layer, DType.BF16, dev, 4, seq, tok, mask), 3e-2, "transformer layer bf16");
  }

  /** GradScaler skips the step whose scaled gradients overflow, backs off, and leaves the weights. */
  static void scalerOverflow(Device dev) {
    Module m = new Sequential(new Linear(8, 4, true, new Generator(1)));
    m.to(dev);
    Optimizer opt = new SGD(m.parameters(), 0.1);
    GradScaler scaler = new GradScaler(3e38, 2.0, 0.5, 2000, true);
    Tensor before = m.parameters().get(0).to(Device.CPU).clone();
    Tensor x = Tensor.randn(new Generator(2), 5, 8).to(dev);
    Tensor loss;
    try (Autocast ac = Autocast.enable(DType.F16)) {
      loss = m.call(x).pow(2).sum().mul(1e3);
    }
    scaler.scale(loss).backward(); // 3e38 * the loss overflows float32: infinite gradients
    assertFalse(scaler.step(opt), "the step is skipped");
    scaler.update();
    assertEquals(1.5e38, scaler.getScale(), 1e32, "the scale backs off");
    assertArrayEquals(before.toFloatArray(), m.parameters().get(0).to(Device.CPU).toFloatArray(), "weights unchanged");
  }
}
