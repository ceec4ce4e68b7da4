package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ModuleTest {
  /** A model with nesting, a shared layer, a buffer and a non-persistent buffer. */
  static final class Net extends Module {
    Net(Generator g) {
      registerModule("features", new Sequential(new Linear(4, 3, true, g), new ReLU(), new Linear(3, 2, false, g)));
      registerModule("head", new Linear(2, 1, true, g));
      registerBuffer("steps", Tensor.zeros(DType.I64, 1));
      registerBuffer("scratch", Tensor.zeros(2), false);
    }

    @Override
    public Tensor forward(Tensor x) {
      return child("head").forward(child("features").forward(x));
    }
  }

  @Test
  void namesFollowPyTorchsOrder() {
    Net net = new Net(new Generator(1));
    assertEquals(List.of("features.0.weight", "features.0.bias", "features.2.weight", "head.weight", "head.bias"),
        List.copyOf(net.namedParameters().keySet()));
    assertEquals(List.of("steps", "scratch"), List.copyOf(net.namedBuffers().keySet()));
    assertEquals(List.of("", "features", "features.0", "features.1", "features.2", "head"),
        List.copyOf(net.namedModules().keySet()));
    // PyTorch's state_dict order: a module's own parameters and buffers, then its children's;
    // the non-persistent buffer is not saved
    assertEquals(List.of("steps", "features.0.weight", "features.0.bias", "features.2.weight", "head.weight", "head.bias"),
        List.copyOf(net.stateDict().keySet()));
    assertEquals(4 * 3 + 3 + 3 * 2 + 2 + 1, net.numParameters(false));
  }

  @Test
  void sharedParametersAppearOnce() {
    Linear shared = new Linear(3, 3);
    Sequential s = new Sequential(shared, new ReLU(), shared);
    assertEquals(List.of("0.weight", "0.bias"), List.copyOf(s.namedParameters().keySet()));
    assertEquals(List.of("", "0", "1"), List.copyOf(s.namedModules().keySet()));
  }

  @Test
  void printsLikePyTorch() {
    Net net = new Net(new Generator(1));
    assertEquals("""
        Net(
          (features): Sequential(
            (0): Linear(in_features=4, out_features=3, bias=True)
            (1): ReLU()
            (2): Linear(in_features=3, out_features=2, bias=False)
          )
          (head): Linear(in_features=2, out_features=1, bias=True)
        )""", net.toString());
    assertEquals("LeakyReLU(negative_slope=0.01)", new LeakyReLU().toString());
    assertEquals("GELU(approximate='tanh')", new GELU(true).toString());
    assertEquals("Softmax(dim=-1)", new Softmax(-1).toString());
  }

  @Test
  void trainEvalReachesEveryModule() {
    Net net = new Net(new Generator(1));
    assertTrue(net.isTraining());
    net.eval();
    for (Module m : net.modules()) assertFalse(m.isTraining(), m.name());
    net.train();
    for (Module m : net.modules()) assertTrue(m.isTraining(), m.name());
  }

  @Test
  void zeroGradAndFreezing() {
    Net net = new Net(new Generator(1));
    net.forward(Tensor.randn(new Generator(2), 5, 4)).sum().backward();
    for (Tensor p : net.parameters()) assertTrue(p.grad() != null);
    net.zeroGrad(false);
    for (Tensor p : net.parameters()) assertEquals(0.0, p.grad().abs().sum().item());
    net.zeroGrad();
    for (Tensor p : net.parameters()) assertNull(p.grad());

    net.child("features").requiresGrad(false);
    assertEquals(2 + 1, net.numParameters(true));
    net.forward(Tensor.randn(new Generator(2), 5, 4)).sum().backward();
    assertNull(((Linear) ((Sequential) net.child("features")).get(0)).weight().grad());
    assertTrue(((Linear) net.child("head")).weight().grad() != null);
  }

  @Test
  void applyVisitsChildrenFirst() {
    Net net = new Net(new Generator(1));
    StringBuilder order = new StringBuilder();
    net.apply(m -> order.append(m.name()).append(' '));
    assertEquals("Linear ReLU Linear Sequential Linear Net ", order.toString());
  }

  @Test
  void stateDictRoundTripCopiesInPlace() {
    Net a = new Net(new Generator(1));
    Net b = new Net(new Generator(2));
    Tensor x = Tensor.randn(new Generator(3), 6, 4);
    Tensor weightBefore = ((Linear) b.child("head")).weight();
    b.loadStateDict(a.stateDict());
    assertSame(weightBefore, ((Linear) b.child("head")).weight(), "parameters are updated in place");
    assertArrayEquals(a.forward(x).toFloatArray(), b.forward(x).toFloatArray());
    // the state dict shares storage: snapshot semantics need a copy
    Map<String, Tensor> sd = a.stateDict();
    assertNotSame(sd.get("head.weight"), ((Linear) a.child("head")).weight());
    assertFalse(sd.get("head.weight").requiresGrad());
  }

  @Test
  void loadStateDictNamesEveryBadKeyAndChangesNothing() {
    Net net = new Net(new Generator(1));
    LinkedHashMap<String, Tensor> sd = net.stateDict();
    float[] before = ((Linear) net.child("head")).weight().toFloatArray();
    sd.remove("features.0.bias");
    sd.put("features.9.weight", Tensor.zeros(1));
    sd.put("head.weight", Tensor.zeros(1, 3));
    sd.put("features.2.weight", Tensor.zeros(2, 3)); // right shape: would be copied if nothing failed
    StateDictException e = assertThrows(StateDictException.class, () -> net.loadStateDict(sd));
    assertEquals("""
        Net.loadStateDict: state dict does not match the model
          missing keys: [features.0.bias]
          unexpected keys: [features.9.weight]
          shape mismatch: head.weight: checkpoint [1, 3] vs model [1, 2]""", e.getMessage());
    assertEquals(List.of("features.0.bias"), e.missingKeys());
    assertArrayEquals(before, ((Linear) net.child("head")).weight().toFloatArray());
    assertTrue(((Linear) ((Sequential) net.child("features")).get(2)).weight().abs().sum().item() > 0);

    // non-strict: missing and unexpected are reported, shapes still checked
    sd.put("head.weight", Tensor.zeros(1, 2));
    Module.LoadResult r = net.loadStateDict(sd, false);
    assertEquals(List.of("features.0.bias"), r.missingKeys());
    assertEquals(List.of("features.9.weight"), r.unexpectedKeys());
    assertEquals(0.0, ((Linear) net.child("head")).weight().abs().sum().item());
  }

  @Test
  void toConvertsParametersAndKeepsThemTrainable() {
    Net net = new Net(new Generator(1));
    net.to(DType.F64);
    for (Tensor p : net.parameters()) {
      assertEquals(DType.F64, p.dtype());
      assertTrue(p.requiresGrad() && p.isLeaf());
    }
    assertEquals(DType.I64, net.buffer("steps").dtype(), "integer buffers keep their type");
    Tensor y = net.forward(Tensor.randn(new Generator(2), DType.F64, 3, 4));
    assertEquals(DType.F64, y.dtype());
  }

  @Test
  void toKeepsEachParameterSoAnOptimizerBuiltBeforeUpdatesTheConvertedOnes() {
    Linear l = new Linear(3, 2, true, new Generator(4));
    List<Tensor> before = l.parameters();
    dev.ember.optim.SGD sgd = new dev.ember.optim.SGD(before, 0.5);
    l.forward(Tensor.ones(1, 3)).sum().backward();
    l.to(DType.F64);
    for (int i = 0; i < before.size(); i++) {
      assertSame(before.get(i), l.parameters().get(i));
      assertEquals(DType.F64, before.get(i).grad().dtype(), "the gradient is converted with its parameter");
    }
    double w00 = l.weight().getDouble(0, 0);
    sgd.step();
    assertEquals(w00 - 0.5, l.weight().getDouble(0, 0), 1e-12); // d(sum)/dw = x = 1
    assertEquals(DType.F64, l.weight().dtype());
  }

  @Test
  void registrationErrors() {
    Module m = new Module() {};
    assertEquals("does not take a single input",
        assertThrows(IllegalArgumentException.class, () -> new Bilinear(2, 2, 1).forward(Tensor.zeros(2)))
            .getMessage().replaceAll(".*: this module (does not take a single input).*", "$1"));
    Linear l = new Linear(2, 2);
    assertEquals("Linear: 'weight' is already registered",
        assertThrows(IllegalArgumentException.class, () -> l.registerParameter("weight", Tensor.zeros(1))).getMessage());
    assertEquals("Linear: parameter name must be non-empty and contain no '.', got 'a.b'",
        assertThrows(IllegalArgumentException.class, () -> l.registerParameter("a.b", Tensor.zeros(1))).getMessage());
    assertEquals("Linear: parameter 'n' must be floating point, got I64",
        assertThrows(IllegalArgumentException.class, () -> l.registerParameter("n", Tensor.zeros(DType.I64, 1))).getMessage());
    assertEquals("Linear: no parameter 'gamma'; has [weight, bias]",
        assertThrows(IllegalArgumentException.class, () -> l.param("gamma")).getMessage());
    assertTrue(m.parameters().isEmpty());
  }
}
