package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.util.List;
import java.util.function.DoubleUnaryOperator;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class LayersTest {
  private static Tensor randn(long seed, int... shape) {
    return Tensor.randn(new Generator(seed), DType.F64, shape);
  }

  @Test
  void linearMatchesADoubleOracleOnAnyLeadingDims() {
    Linear l = new Linear(5, 3, true, new Generator(1));
    l.to(DType.F64);
    Tensor x = randn(2, 2, 4, 5);
    double[] w = l.weight().toDoubleArray(), b = l.bias().toDoubleArray(), xv = x.toDoubleArray();
    double[] y = l.forward(x).toDoubleArray();
    assertArrayEquals(new int[] {2, 4, 3}, l.forward(x).shape());
    for (int r = 0; r < 8; r++) {
      for (int o = 0; o < 3; o++) {
        double s = b[o];
        for (int i = 0; i < 5; i++) s += xv[r * 5 + i] * w[o * 5 + i];
        assertEquals(s, y[r * 3 + o], 1e-12);
      }
    }
    // 1-d input and no bias
    Linear nb = new Linear(5, 3, false, new Generator(1));
    nb.to(DType.F64);
    Tensor v = randn(3, 5);
    assertArrayEquals(nb.forward(v.unsqueeze(0)).squeeze(0).toDoubleArray(), nb.forward(v).toDoubleArray());
  }

  @Test
  void linearAndBilinearGradcheck() {
    Linear l = new Linear(4, 3, true, new Generator(1));
    l.to(DType.F64);
    Tensor x = randn(2, 2, 3, 4).requiresGrad(true);
    GradCheck.check("Linear", in -> l.forward(in.get(0)), List.of(x, l.weight(), l.bias()));

    Bilinear bl = new Bilinear(3, 2, 4, true, new Generator(1));
    bl.to(DType.F64);
    Tensor x1 = randn(3, 5, 3).requiresGrad(true), x2 = randn(4, 5, 2).requiresGrad(true);
    GradCheck.check("Bilinear", in -> bl.forward(in.get(0), in.get(1)), List.of(x1, x2, bl.weight(), bl.bias()));
    // forward against the definition
    double[] w = bl.weight().toDoubleArray(), b = bl.bias().toDoubleArray();
    double[] a = x1.toDoubleArray(), c = x2.toDoubleArray(), y = bl.forward(x1, x2).toDoubleArray();
    for (int n = 0; n < 5; n++) {
      for (int o = 0; o < 4; o++) {
        double s = b[o];
        for (int i = 0; i < 3; i++) for (int j = 0; j < 2; j++) s += a[n * 3 + i] * w[(o * 3 + i) * 2 + j] * c[n * 2 + j];
        assertEquals(s, y[n * 4 + o], 1e-12);
      }
    }
  }

  @Test
  void shapeErrorsNameTheShapes() {
    Linear l = new Linear(4, 3);
    assertEquals("Linear: input's last dimension must be in_features (4): input=[2, 5], weight=[3, 4]",
        assertThrows(IllegalArgumentException.class, () -> l.forward(Tensor.zeros(2, 5))).getMessage());
    Bilinear bl = new Bilinear(3, 2, 4);
    assertEquals("Bilinear: inputs must be [..., in1_features (3)] and [..., in2_features (2)] with the same leading dims: "
        + "input1=[5, 3], input2=[4, 2]",
        assertThrows(IllegalArgumentException.class, () -> bl.forward(Tensor.zeros(5, 3), Tensor.zeros(4, 2))).getMessage());
    assertEquals("Residual: body and shortcut outputs differ in shape: body=[2, 3], shortcut=[2, 4]; "
        + "hint: give a shortcut module that maps the input to the body's output shape",
        assertThrows(IllegalArgumentException.class, () -> new Residual(new Linear(4, 3)).forward(Tensor.zeros(2, 4))).getMessage());
  }

  private static void checkActivation(String name, Module m, DoubleUnaryOperator oracle) {
    Tensor x = Tensor.linspace(-6, 6, 97, DType.F64);
    double[] xv = x.toDoubleArray(), y = m.forward(x).toDoubleArray();
    for (int i = 0; i < xv.length; i++) assertEquals(oracle.applyAsDouble(xv[i]), y[i], 1e-12 * Math.max(1, Math.abs(y[i])), name + "(" + xv[i] + ")");
    Tensor g = randn(11, 3, 5).requiresGrad(true);
    GradCheck.check(name, in -> m.forward(in.get(0)), List.of(g));
  }

  private static double softplus(double x) {
    return x > 20 ? x : Math.log1p(Math.exp(x));
  }

  @Test
  void activationModulesMatchTheirDefinitions() {
    checkActivation("ReLU", new ReLU(), x -> Math.max(x, 0));
    checkActivation("LeakyReLU", new LeakyReLU(0.2), x -> x > 0 ? x : 0.2 * x);
    checkActivation("ELU", new ELU(), x -> x > 0 ? x : Math.expm1(x));
    checkActivation("SiLU", new SiLU(), x -> x / (1 + Math.exp(-x)));
    checkActivation("Mish", new Mish(), x -> x * Math.tanh(softplus(x)));
    checkActivation("Sigmoid", new Sigmoid(), x -> 1 / (1 + Math.exp(-x)));
    checkActivation("Tanh", new Tanh(), Math::tanh);
    checkActivation("Softplus", new Softplus(2, 3), x -> 2 * x > 3 ? x : Math.log1p(Math.exp(2 * x)) / 2);
    checkActivation("Hardswish", new Hardswish(), x -> x * Math.min(Math.max(x + 3, 0), 6) / 6);
    checkActivation("GELU", new GELU(), x -> 0.5 * x * dev.ember.backend.cpu.ScalarKernels.erfc(-x / Math.sqrt(2)));
    checkActivation("GELU tanh", new GELU(true),
        x -> 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x))));
    Tensor x = randn(5, 3, 4);
    assertArrayEquals(x.softmax(1).toDoubleArray(), new Softmax(1).forward(x).toDoubleArray());
    assertArrayEquals(x.logSoftmax(-1).toDoubleArray(), new LogSoftmax(-1).forward(x).toDoubleArray());
    UnaryOperator<Tensor> f = Activations::softplus;
    assertArrayEquals(new Softplus().forward(x).toDoubleArray(), f.apply(x).toDoubleArray());
  }

  @Test
  void containersAndShapeLayers() {
    Generator g = new Generator(4);
    Sequential s = new Sequential(new Flatten(), new Linear(12, 6, true, g), new ReLU(), new Unflatten(1, 2, -1));
    Tensor y = s.forward(Tensor.randn(g, 5, 3, 4));
    assertArrayEquals(new int[] {5, 2, 3}, y.shape());
    assertEquals(4, s.size());
    assertEquals("ReLU", s.get(-2).name());
    assertEquals("Unflatten(dim=1, unflattened_size=(2, -1))", s.get(3).toString());
    assertArrayEquals(new int[] {5, 12}, new Flatten().forward(Tensor.zeros(5, 3, 4)).shape());
    assertArrayEquals(new int[] {60}, new Flatten(0, -1).forward(Tensor.zeros(5, 3, 4)).shape());
    assertEquals("Unflatten: sizes [5, -1] do not multiply to dimension 1's length (12): input=[2, 12]",
        assertThrows(IllegalArgumentException.class, () -> new Unflatten(1, 5, -1).forward(Tensor.zeros(2, 12))).getMessage());
    // a 0-d input threw ArrayIndexOutOfBoundsException; -2 sizes reached reshape, which named itself
    assertEquals("Unflatten: cannot be applied to a 0-dim tensor (dim 0): x=[]",
        assertThrows(IllegalArgumentException.class, () -> new Unflatten(0, 1).forward(Tensor.scalar(3))).getMessage());
    assertEquals("Unflatten: invalid size -2 in sizes [-2, -2]: input=[3, 4]",
        assertThrows(IllegalArgumentException.class, () -> new Unflatten(1, -2, -2).forward(Tensor.zeros(3, 4))).getMessage());

    ModuleList list = new ModuleList(new Linear(2, 2), new Tanh());
    assertEquals(List.of("0.weight", "0.bias"), List.copyOf(list.namedParameters().keySet()));
    int n = 0;
    for (Module m : list) n += m == list.get(n) ? 1 : 0;
    assertEquals(2, n);
    ModuleDict dict = new ModuleDict().put("enc", new Linear(2, 3)).put("act", new ReLU());
    assertEquals(List.of("enc.weight", "enc.bias"), List.copyOf(dict.namedParameters().keySet()));
    assertEquals("ModuleDict(\n  (enc): Linear(in_features=2, out_features=3, bias=True)\n  (act): ReLU()\n)", dict.toString());

    Linear body = new Linear(3, 3, true, g);
    Residual r = new Residual(body);
    Tensor x = Tensor.randn(g, 2, 3);
    assertArrayEquals(body.forward(x).add(x).toFloatArray(), r.forward(x).toFloatArray());
    assertEquals(List.of("body.weight", "body.bias"), List.copyOf(r.namedParameters().keySet()));
    assertArrayEquals(x.toFloatArray(), new Identity().forward(x).toFloatArray());
  }
}
