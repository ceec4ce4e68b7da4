package dev.ember.optim;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Arr;
import dev.ember.testing.Assertions;
import dev.ember.testing.FakeDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every optimizer of the convergence table steps parameters on the strict fake device as on the CPU: its fused
 * kernels run on the parameter's device, its state is allocated there, and the values agree after a few steps.
 */
class OptimizersOnDeviceTest {
  static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> table() {
    return OptimConvergenceTest.table();
  }

  /** Gradients of a quadratic bowl with a tilt, computed with tensor ops on the parameter's own device. */
  private static void setGrads(List<Tensor> ps, int t) {
    for (int i = 0; i < ps.size(); i++) {
      Tensor p = ps.get(i);
      p.setGrad(p.detach().mul(1 + i).add(0.1 * (t + 1)));
    }
  }

  private static List<Tensor> run(Device device, Function<List<Tensor>, Optimizer> make) {
    Generator gen = new Generator(11);
    List<Tensor> ps = new ArrayList<>();
    for (Tensor t : List.of(Tensor.randn(gen, 3, 4), Tensor.randn(gen, 4))) ps.add(t.to(device).requiresGrad(true));
    Optimizer opt = make.apply(ps);
    for (int t = 0; t < 4; t++) {
      setGrads(ps, t);
      int step = t;
      if (opt instanceof SAM) {
        opt.step(() -> {
          setGrads(ps, step);
          return null;
        });
      } else {
        opt.step();
      }
      if (opt instanceof SophiaG s && (t == 0 || s.hessianDue(2))) {
        for (Tensor p : ps) p.setGrad(p.detach().abs().add(0.5));
        s.updateHessian();
      }
    }
    for (Tensor p : ps) {
      assertEquals(device, p.device());
      for (var e : opt.state(p).entrySet()) {
        if (e.getValue().dim() > 0) assertEquals(device, e.getValue().device(), e.getKey() + " state");
      }
    }
    return ps;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("table")
  void stepsOnTheFakeDeviceAsOnTheCpu(String name, Function<List<Tensor>, Optimizer> quad,
      Function<List<Tensor>, Optimizer> rosen, double rosenTol) {
    List<Tensor> cpu = run(Device.CPU, quad);
    List<Tensor> fake = run(FakeDevice.DEVICE, quad);
    for (int i = 0; i < cpu.size(); i++) {
      Assertions.assertClose(Arr.of(cpu.get(i)), fake.get(i).cpu(), 1e-6, 1e-6, name + " parameter " + i);
    }
  }
}
