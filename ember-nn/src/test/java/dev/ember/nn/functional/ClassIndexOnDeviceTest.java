package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import dev.ember.testing.FakeDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;

/**
 * Cross entropy and nll_loss with class-index targets, and embedding, on a device whose targets/indices are already
 * there: the CPU's loss and gradient to the bit, with nothing read on the host and nothing uploaded in the whole
 * forward and backward (on a GPU either waits for every queued kernel); the range check is the backend's
 * {@code checkIndexRange} (on the fake device its default, which throws at once), naming the op and the value.
 */
class ClassIndexOnDeviceTest {
  /** Runs body on the fake device, returning "upload"/"download" for every copy that crosses to or from the host. */
  private static List<String> transfers(Runnable body) throws Exception {
    List<String> seen = new ArrayList<>();
    try (AutoCloseable w = FakeDevice.watch((name, args) -> {
      if (name.equals("copy") || name.equals("copyNonBlocking")) {
        boolean src = ((View) args[0]).storage().onDevice();
        boolean dst = ((View) args[1]).storage().onDevice();
        if (!src) seen.add("upload");
        if (!dst) seen.add("download");
      }
    })) {
      body.run();
    }
    return seen;
  }

  /**
   * loss(input, target) and its input gradient on the CPU and on the fake device (input and target moved there
   * first), compared to the bit, with no transfer during the device's forward and backward.
   */
  private static void sameOnDevice(String what, Tensor input, Tensor target,
      BiFunction<Tensor, Tensor, Tensor> loss) throws Exception {
    Tensor x = input.detach().requiresGrad(true);
    Tensor y = loss.apply(x, target);
    Tensor up = Tensor.randn(new Generator(11), y.shape()).to(y.dtype());
    y.mul(up).sum().backward();
    Tensor xd = input.detach().to(FakeDevice.DEVICE).requiresGrad(true);
    Tensor td = target.to(FakeDevice.DEVICE);
    Tensor upd = up.to(FakeDevice.DEVICE);
    Tensor[] yd = new Tensor[1];
    List<String> seen = transfers(() -> {
      yd[0] = loss.apply(xd, td);
      yd[0].mul(upd).sum().backward();
    });
    assertTrue(seen.isEmpty(), what + ": host transfers in the step: " + seen);
    assertEquals(FakeDevice.DEVICE, yd[0].device(), what);
    assertArrayEquals(y.toDoubleArray(), yd[0].to(Device.CPU).toDoubleArray(), what + ": loss");
    assertArrayEquals(x.grad().toDoubleArray(), xd.grad().to(Device.CPU).toDoubleArray(), what + ": gradient");
  }

  @Test
  void crossEntropyAndNllLossAreTheCpusWithoutTransfers() throws Exception {
    Generator g = new Generator(3);
    Tensor w = Tensor.rand(g, 5).add(0.5);
    Tensor wd = w.to(FakeDevice.DEVICE);
    long[] none = {0, 4, 2, 2, 1, 3};
    long[] some = {0, -100, 2, 4, -100, 3};
    long[] all = {-100, -100, -100, -100, -100, -100};
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      Tensor logits = Tensor.randn(g, 6, 5).mul(3).to(dt);
      Tensor spatial = Tensor.randn(g, 2, 5, 3).to(dt); // [N, C, d]
      Tensor single = Tensor.randn(g, 5).to(dt); // unbatched [C]
      for (long[] t : new long[][] {none, some, all}) {
        for (DType tt : new DType[] {DType.I64, DType.I32}) {
          Tensor target = Tensor.of(t, 6).to(tt);
          Tensor target2 = Tensor.of(t, 2, 3).to(tt);
          Tensor target0 = Tensor.of(new long[] {t[1]}, 1).reshape().to(tt);
          for (Reduction r : new Reduction[] {Reduction.MEAN, Reduction.SUM, Reduction.NONE}) {
            for (boolean weighted : new boolean[] {false, true}) {
              for (double smoothing : new double[] {0, 0.1}) {
                String what = "cross_entropy " + dt + " target " + tt + " " + t[1] + "/" + t[0] + " " + r
                    + (weighted ? " weighted" : "") + " smoothing " + smoothing;
                BiFunction<Tensor, Tensor, Tensor> ce = (x, y) -> F.crossEntropy(x, y,
                    weighted ? (x.device().isCpu() ? w : wd).to(x.dtype()) : null, -100, r, smoothing);
                sameOnDevice(what, logits, target, ce);
                sameOnDevice(what + " [N, C, d]", spatial, target2, ce);
                sameOnDevice(what + " [C]", single, target0, ce);
              }
              String what = "nll_loss " + dt + " target " + tt + " " + t[1] + " " + r + (weighted ? " weighted" : "");
              BiFunction<Tensor, Tensor, Tensor> nll = (x, y) -> F.nllLoss(x.logSoftmax(x.dim() == 1 ? 0 : 1), y,
                  weighted ? (x.device().isCpu() ? w : wd).to(x.dtype()) : null, -100, r);
              sameOnDevice(what, logits, target, nll);
              sameOnDevice(what + " [N, C, d]", spatial, target2, nll);
            }
          }
        }
      }
    }
  }

  @Test
  void focalPolyAndDiceLossesAreTheCpusWithoutTransfers() throws Exception {
    Generator g = new Generator(8);
    Tensor alpha = Tensor.rand(g, 4).add(0.25);
    Tensor alphad = alpha.to(FakeDevice.DEVICE);
    for (long[] t : new long[][] {{0, 3, 2, 1, 1}, {0, -100, 2, -100, 3}}) {
      Tensor logits = Tensor.randn(g, 5, 4);
      Tensor target = Tensor.of(t, 5);
      for (Reduction r : new Reduction[] {Reduction.MEAN, Reduction.SUM, Reduction.NONE}) {
        sameOnDevice("focal_loss " + t[1] + " " + r, logits, target,
            (x, y) -> F.focalLoss(x, y, x.device().isCpu() ? alpha : alphad, 2.0, -100, r));
        sameOnDevice("poly_loss " + t[1] + " " + r, logits, target, (x, y) -> F.polyLoss(x, y, 1.0, 0.05, -100, r));
        if (t[1] >= 0) sameOnDevice("dice_loss " + r, logits, target, (x, y) -> F.diceLoss(x, y, 1.0, r));
      }
    }
  }

  @Test
  void strideTargetIsReadInOrder() throws Exception {
    Tensor logits = Tensor.randn(new Generator(5), 3, 4, 2); // [N, C, d]
    Tensor target = Tensor.of(new long[] {1, 3, -100, 0, 2, 1}, 2, 3).t(); // [3, 2], strided
    sameOnDevice("strided target", logits, target, (x, y) -> F.crossEntropy(x, y, null, -100, Reduction.MEAN, 0));
  }

  @Test
  void outOfRangeTargetNamesTheOpAndValue() {
    Tensor logits = Tensor.randn(new Generator(6), 4, 3).to(FakeDevice.DEVICE);
    for (long bad : new long[] {3, -1, 7}) {
      Tensor target = Tensor.of(new long[] {0, -100, bad, 1}, 4).to(FakeDevice.DEVICE);
      TensorArgumentException e = assertThrows(TensorArgumentException.class,
          () -> F.crossEntropy(logits, target, null, -100, Reduction.MEAN, 0));
      assertTrue(e.getMessage().contains("cross_entropy") && e.getMessage().contains("target[2] = " + bad)
          && e.getMessage().contains("class index out of range"), e.getMessage());
      e = assertThrows(TensorArgumentException.class,
          () -> F.nllLoss(logits, target.to(DType.I32), null, -100, Reduction.SUM));
      assertTrue(e.getMessage().contains("nll_loss") && e.getMessage().contains("target[2] = " + bad),
          e.getMessage());
    }
    // the same message as the CPU's
    Tensor target = Tensor.of(new long[] {0, 1, 2, 9}, 4);
    String cpu = assertThrows(TensorArgumentException.class,
        () -> F.crossEntropy(logits.to(Device.CPU), target, null, -100, Reduction.MEAN, 0)).getMessage();
    String dev = assertThrows(TensorArgumentException.class,
        () -> F.crossEntropy(logits, target.to(FakeDevice.DEVICE), null, -100, Reduction.MEAN, 0)).getMessage();
    assertEquals(cpu.replace("cpu", "fake:0"), dev);
  }

  @Test
  void embeddingChecksOnTheDeviceWithoutTransfers() throws Exception {
    Tensor idx = Tensor.of(new long[] {3, 0, 3, 7, 1, 0}, 2, 3);
    for (Tensor i : new Tensor[] {idx, idx.to(DType.I32), idx.t()}) {
      Tensor w = Tensor.randn(new Generator(4), 8, 5);
      Tensor x = w.detach().requiresGrad(true);
      Tensor y = F.embedding(i, x, null, null, 2);
      Tensor up = Tensor.randn(new Generator(5), y.shape());
      y.mul(up).sum().backward();
      Tensor xd = w.to(FakeDevice.DEVICE).requiresGrad(true);
      Tensor id = i.to(FakeDevice.DEVICE);
      Tensor upd = up.to(FakeDevice.DEVICE);
      Tensor[] yd = new Tensor[1];
      List<String> seen = transfers(() -> {
        yd[0] = F.embedding(id, xd, null, null, 2);
        yd[0].mul(upd).sum().backward();
      });
      assertTrue(seen.isEmpty(), "host transfers in the step: " + seen);
      assertArrayEquals(y.toFloatArray(), yd[0].to(Device.CPU).toFloatArray());
      assertArrayEquals(x.grad().toFloatArray(), xd.grad().to(Device.CPU).toFloatArray());
    }
    Tensor bad = Tensor.of(new long[] {3, 0, 8, 7}, 2, 2).to(FakeDevice.DEVICE);
    Tensor wd = Tensor.randn(new Generator(4), 8, 5).to(FakeDevice.DEVICE);
    TensorArgumentException e = assertThrows(TensorArgumentException.class, () -> F.embedding(bad, wd, null, null, 2));
    assertTrue(e.getMessage().contains("embedding") && e.getMessage().contains("index out of range (8 at position [1, 0]"),
        e.getMessage());
  }

  /**
   * Binary cross entropy's check that the input holds probabilities runs on the device too (it read the input's
   * min and max on the host: two waits per call on a GPU), and an input outside [0, 1] (or NaN) gets the CPU's
   * message, naming the first such element and its value.
   */
  @Test
  void binaryCrossEntropyChecksItsProbabilitiesOnTheDevice() throws Exception {
    Generator g = new Generator(8);
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      Tensor p = Tensor.rand(g, 4, 3).to(dt);
      Tensor t = Tensor.rand(g, 4, 3).gt(0.5).to(dt);
      sameOnDevice("bce " + dt, p, t, F::bceLoss);
      Tensor w = Tensor.rand(g, 3).to(dt);
      Tensor wd = w.to(FakeDevice.DEVICE);
      sameOnDevice("bce weighted " + dt, p, t, (x, y) -> F.bceLoss(x, y, x.device().isCpu() ? w : wd, Reduction.SUM));
      for (double badValue : new double[] {1.5, -0.25, Double.NaN}) {
        double[] v = p.toDoubleArray();
        v[7] = badValue;
        v[10] = 2; // a later one: the first is named
        Tensor bad = Tensor.of(v, 4, 3).to(dt);
        String cpu = assertThrows(TensorArgumentException.class, () -> F.bceLoss(bad, t)).getMessage();
        assertTrue(cpu.contains("input values must be in [0, 1] (input[2, 1] = "), cpu);
        String device = assertThrows(TensorArgumentException.class,
            () -> F.bceLoss(bad.to(FakeDevice.DEVICE), t.to(FakeDevice.DEVICE))).getMessage();
        assertEquals(cpu.replace("device=cpu", "device=fake:0"), device);
      }
    }
  }
}
