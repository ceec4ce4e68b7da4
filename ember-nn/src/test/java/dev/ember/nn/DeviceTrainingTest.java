package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.functional.F;
import dev.ember.nn.io.SafeTensors;
import dev.ember.optim.Adam;
import dev.ember.optim.AdamW;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.FakeDevice;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Models trained on the strict fake device ({@link FakeDevice}: its memory is out of the host's reach, so any op,
 * layer, loss or optimizer that allocates on the CPU or reads device data on the host fails) give the losses the
 * CPU gives, step for step: the fake backend runs the CPU kernels, so they agree to the bit.
 */
class DeviceTrainingTest {
  private static final Device FAKE = FakeDevice.DEVICE;

  /** The losses of {@code steps} training steps of a copy of {@code reference} on {@code device}. */
  private static double[] train(Supplier<Module> build, Module reference, Device device, boolean optimizerFirst,
      Function<List<Tensor>, Optimizer> optimizer, Tensor x, Tensor y, BiFunction<Tensor, Tensor, Tensor> loss,
      int steps) {
    Module model = build.get();
    model.loadStateDict(reference.stateDict());
    List<Tensor> params = model.parameters();
    Optimizer opt = optimizerFirst ? optimizer.apply(params) : null;
    model.to(device); // in place: the optimizer built before the move holds the same tensors
    if (opt == null) opt = optimizer.apply(model.parameters());
    List<Tensor> after = model.parameters();
    for (int i = 0; i < params.size(); i++) assertSame(params.get(i), after.get(i), "parameter " + i + " kept");
    assertEquals(device, model.device());
    Tensor xd = x.to(device);
    Tensor yd = y.to(device);
    double[] losses = new double[steps];
    for (int s = 0; s < steps; s++) {
      opt.zeroGrad();
      Tensor l = loss.apply(model.call(xd), yd);
      assertEquals(device, l.device());
      l.backward();
      for (Tensor p : model.parameters()) assertEquals(device, p.grad().device());
      opt.step();
      losses[s] = l.item();
    }
    for (Tensor p : model.parameters()) assertEquals(device, p.device());
    return losses;
  }

  private static void assertSameLosses(Supplier<Module> build, boolean optimizerFirst,
      Function<List<Tensor>, Optimizer> optimizer, Tensor x, Tensor y, BiFunction<Tensor, Tensor, Tensor> loss) {
    Module reference = build.get();
    double[] cpu = train(build, reference, Device.CPU, optimizerFirst, optimizer, x, y, loss, 3);
    double[] fake = train(build, reference, FAKE, optimizerFirst, optimizer, x, y, loss, 3);
    assertTrue(cpu[2] < cpu[0], "the loss falls on the cpu: " + java.util.Arrays.toString(cpu));
    assertArrayEquals(cpu, fake, 1e-6, "losses on cpu " + java.util.Arrays.toString(cpu) + " vs fake:0 "
        + java.util.Arrays.toString(fake));
  }

  private static Tensor labels(Generator gen, int n, int classes) {
    long[] v = new long[n];
    for (int i = 0; i < n; i++) v[i] = (long) (gen.nextDouble() * classes);
    return Tensor.of(v, n);
  }

  @Test
  void mlpWithBatchNormAndDropoutTrainsAsOnTheCpu() {
    Generator gen = new Generator(1);
    Tensor x = Tensor.randn(gen, 16, 12);
    Tensor y = labels(gen, 16, 4);
    Supplier<Module> build = () -> new Sequential(new Linear(12, 32), new BatchNorm1d(32), new ReLU(),
        new Dropout(0.2, new Generator(7)), new Linear(32, 4));
    // SGD with momentum built before the move: its parameters are the moved ones
    assertSameLosses(build, true, p -> new SGD(p, Map.of("lr", 0.1, "momentum", 0.9)), x, y, F::crossEntropy);
  }

  @Test
  void lenet5TrainsAsOnTheCpu() {
    Generator gen = new Generator(2);
    Tensor x = Tensor.randn(gen, 4, 1, 28, 28);
    Tensor y = labels(gen, 4, 10);
    assertSameLosses(() -> Models.lenet5(10), false, p -> new Adam(p, 1e-3), x, y, F::crossEntropy);
  }

  @Test
  void transformerEncoderLayerTrainsAsOnTheCpu() {
    Generator gen = new Generator(3);
    Tensor x = Tensor.randn(gen, 2, 5, 16);
    Tensor y = Tensor.randn(gen, 2, 5, 16);
    Supplier<Module> build = () -> new TransformerEncoderLayer(16, 2, 32, 0.0, "gelu", 1e-5, true, false, true,
        new Generator(4));
    assertSameLosses(build, false, p -> new AdamW(p, 1e-2), x, y, F::mseLoss);
  }

  @Test
  void stateDictOfAFakeDeviceModelSavesAndLoads(@TempDir Path dir) throws Exception {
    Module model = Models.lenet5(10);
    Tensor x = Tensor.randn(new Generator(5), 2, 1, 28, 28);
    Tensor want = model.call(x);
    model.to(FAKE);
    Map<String, Tensor> state = model.stateDict();
    for (Tensor t : state.values()) assertEquals(FAKE, t.device());
    Path file = dir.resolve("lenet.safetensors");
    SafeTensors.save(state, file);
    Module back = Models.lenet5(10);
    back.loadStateDict(SafeTensors.load(file));
    assertArrayEquals(want.toFloatArray(), back.call(x).toFloatArray());
    Module onFake = Models.lenet5(10).to(FAKE); // a host state dict into a fake-device model
    onFake.loadStateDict(back.stateDict());
    assertEquals(FAKE, onFake.device());
    assertArrayEquals(want.toFloatArray(), onFake.call(x.to(FAKE)).cpu().toFloatArray());
  }

  @Test
  void moduleDeviceNamesTwoDevicesWhenMixed() {
    Sequential m = new Sequential(new Linear(2, 3), new Linear(3, 1));
    assertEquals(Device.CPU, m.device());
    m.child("1").to(FAKE);
    IllegalStateException e = assertThrows(IllegalStateException.class, m::device);
    assertEquals("Sequential.device: parameters and buffers are on more than one device (0.weight on cpu, 1.weight on"
        + " fake:0); hint: model.to(device)", e.getMessage());
    IllegalArgumentException mixed = assertThrows(IllegalArgumentException.class, () -> m.call(Tensor.ones(1, 2)));
    assertTrue(mixed.getMessage().contains("different devices (cpu vs fake:0)"), mixed.getMessage());
  }

  @Test
  void aGradientMovesWithItsParameterAndOptimizerStateFollowsTheModel() {
    Linear lin = new Linear(3, 2);
    Adam opt = new Adam(lin.parameters(), 0.1);
    lin.call(Tensor.ones(4, 3)).sum().backward();
    opt.step(); // state made on the cpu
    lin.call(Tensor.ones(4, 3)).sum().backward();
    lin.to(FAKE);
    for (Tensor p : lin.parameters()) assertEquals(FAKE, p.grad().device());
    opt.step(); // the cpu state moves to the parameters' device
    for (Tensor p : lin.parameters()) {
      for (var e : opt.state(p).entrySet()) {
        if (e.getValue().dim() > 0) assertEquals(FAKE, e.getValue().device(), e.getKey());
      }
    }
    List<Tensor> checked = new ArrayList<>(lin.parameters());
    assertEquals(DType.F32, checked.get(0).dtype());
  }
}
