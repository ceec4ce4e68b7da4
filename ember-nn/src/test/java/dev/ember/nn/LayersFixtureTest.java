package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Linear, Bilinear and the activation modules against PyTorch (layers/make_layer_fixtures.py):
 * outputs and the gradients of every input and parameter, in float64 (to 1e-10) and float32 (to
 * 1e-5 relative), with PyTorch's weights loaded through a strict state dict.
 */
class LayersFixtureTest {
  private static final Map<String, Tensor> FIX = Fixtures.read(LayersFixtureTest.class, "layers/layer_fixtures.txt");

  private static void assertClose(String what, Tensor want, Tensor got, double rel, double abs) {
    assertArrayEquals(want.shape(), got.shape(), what + " shape");
    double[] w = want.toDoubleArray(), g = got.toDoubleArray();
    for (int i = 0; i < w.length; i++) assertEquals(w[i], g[i], abs + rel * Math.abs(w[i]), what + "[" + i + "]");
  }

  private static void check(String name, Supplier<Module> make) {
    check(name, make, DType.F64, 1e-10, 1e-12);
    check(name, make, DType.F32, 1e-5, 1e-6);
  }

  private static void check(String name, Supplier<Module> make, DType dtype, double rel, double abs) {
    LinkedHashMap<String, Tensor> all = Fixtures.under(FIX, name);
    assertTrue(all.containsKey("output"), "no fixture for " + name);
    Module m = make.get();
    m.to(dtype);
    LinkedHashMap<String, Tensor> sd = new LinkedHashMap<>();
    for (String k : m.stateDict().keySet()) sd.put(k, all.get(k).to(dtype));
    m.loadStateDict(sd);
    String what = name + " (" + dtype + ")";
    Tensor x = all.get("input").detach().to(dtype).requiresGrad(true);
    Tensor x2 = all.containsKey("input2") ? all.get("input2").detach().to(dtype).requiresGrad(true) : null;
    Tensor y = m instanceof Bilinear b ? b.forward(x, x2) : m.forward(x);
    assertClose(what + " output", all.get("output"), y, rel, abs);
    y.backward(all.get("grad_output").to(dtype));
    assertClose(what + " grad_input", all.get("grad_input"), x.grad(), rel, abs);
    if (x2 != null) assertClose(what + " grad_input2", all.get("grad_input2"), x2.grad(), rel, abs);
    for (var p : m.namedParameters().entrySet()) {
      assertClose(what + " grad." + p.getKey(), all.get("grad." + p.getKey()), p.getValue().grad(), rel, abs);
    }
  }

  @Test
  void linearAndBilinearMatchPyTorch() {
    Generator g = new Generator(1);
    check("linear", () -> new Linear(5, 3, true, g));
    check("linear_3d_nobias", () -> new Linear(5, 3, false, g));
    check("bilinear", () -> new Bilinear(3, 2, 4, true, g));
    check("bilinear_nobias", () -> new Bilinear(3, 2, 4, false, g));
  }

  @Test
  void activationModulesMatchPyTorchAtTheirKinksAndThresholds() {
    check("relu", ReLU::new);
    check("leaky_relu", LeakyReLU::new);
    check("leaky_relu_0.2", () -> new LeakyReLU(0.2));
    check("elu", ELU::new);
    check("elu_0.5", () -> new ELU(0.5));
    check("gelu", GELU::new);
    check("gelu_tanh", () -> new GELU(true));
    check("silu", SiLU::new);
    check("mish", Mish::new);
    check("sigmoid", Sigmoid::new);
    check("tanh", Tanh::new);
    check("softplus", Softplus::new);
    check("softplus_beta2_threshold1", () -> new Softplus(2, 1));
    check("hardswish", Hardswish::new);
    check("softmax_dim1", () -> new Softmax(1));
    check("softmax_dim0", () -> new Softmax(0));
    check("log_softmax_dim1", () -> new LogSoftmax(1));
    check("log_softmax_dim0", () -> new LogSoftmax(0));
  }
}
