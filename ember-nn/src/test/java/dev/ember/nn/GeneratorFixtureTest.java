package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.nn.functional.F;
import dev.ember.nn.init.Init;
import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * A seed draws what it draws in PyTorch (random/make_random_fixtures.py, torch 1.13 on CPU): the
 * factories, the initialisers, dropout's mask, the modules' default initialisation and LeNet-5's
 * whole initial state. Uniform and integer draws must match to the bit; normal ones to a few float
 * ulps (PyTorch's float32 Box-Muller uses its own vectorised log/sin/cos). After each case the next
 * draws must match too, so a case that consumes one number too many or too few fails.
 */
class GeneratorFixtureTest {
  private static final Map<String, Tensor> FIX = Fixtures.read(GeneratorFixtureTest.class, "random/random_fixtures.txt");

  private static Tensor fix(String name) {
    Tensor t = FIX.get(name);
    if (t == null) throw new IllegalStateException("no fixture " + name);
    return t;
  }

  /** Seeds the global generator, runs {@code draw}, checks it and the three float64 uniforms after it. */
  private static void check(String name, long seed, double tol, Function<Generator, Tensor> draw) {
    Generator.manualSeed(seed);
    Tensor got = draw.apply(Generator.global());
    Tensor want = fix(name);
    assertArrayEquals(want.shape(), got.shape(), name + " shape");
    double[] w = want.toDoubleArray();
    double[] g = got.toDoubleArray();
    for (int i = 0; i < w.length; i++) {
      if (tol == 0) assertEquals(w[i], g[i], name + " [" + i + "]");
      else assertEquals(w[i], g[i], tol * Math.max(1, Math.abs(w[i])), name + " [" + i + "]");
    }
    assertArrayEquals(fix(name + ".next").toDoubleArray(), Tensor.rand(Generator.global(), DType.F64, 3).toDoubleArray(),
        name + ": the draws after it");
  }

  @Test
  void factoriesDrawPyTorchsNumbers() {
    check("rand_f32", 0, 0, g -> Tensor.rand(g, 37));
    check("rand_f64", 1, 0, g -> Tensor.rand(g, DType.F64, 9));
    check("randn_f32_small", 2, 0, g -> Tensor.cat(java.util.List.of(Tensor.randn(g, 5), Tensor.randn(g, 3)), 0));
    check("randn_f64_small", 3, 1e-15, g -> Tensor.randn(g, DType.F64, 7));
    check("randn_f32_blocks", 4, 1e-6, g -> Tensor.randn(g, 37));
    check("randn_f32_whole_blocks", 18, 1e-6, g -> Tensor.randn(g, 2, 16));
    check("randn_f64_blocks", 5, 1e-15, g -> Tensor.randn(g, DType.F64, 37));
    check("randint", 6, 0, g -> Tensor.randint(g, -5, 1000, 20));
    check("randint_wide", 7, 0, g -> Tensor.randint(g, 0, 1L << 40, 6));
    check("randperm", 8, 0, g -> Tensor.randperm(g, 1000));
    check("bernoulli_f32", 9, 0, g -> Tensor.bernoulli(g, Tensor.linspace(0, 1, 30)));
    check("bernoulli_f64", 10, 0, g -> Tensor.bernoulli(g, Tensor.linspace(0, 1, 30, DType.F64)));
    check("dropout", 11, 0, g -> F.dropout(Tensor.ones(40), 0.25, true, g));
  }

  @Test
  void initialisersDrawPyTorchsNumbers() {
    check("uniform", 12, 0, g -> Init.uniform_(Tensor.zeros(13), -0.37, 0.37, g));
    check("normal", 13, 1e-6, g -> Init.normal_(Tensor.zeros(37), 0.5, 2.0, g));
    check("trunc_normal", 14, 1e-6, g -> Init.truncNormal_(Tensor.zeros(37), 0.1, 0.5, -0.4, 0.6, g));
    check("orthogonal", 15, 1e-5, g -> Init.orthogonal_(Tensor.zeros(4, 6), 1.0, g));
    check("xavier_normal", 16, 1e-6, g -> Init.xavierNormal_(Tensor.zeros(5, 7), 1.0, g));
  }

  @Test
  void aLoadersEpochsAreSuccessivePermutationsOfOneGenerator() {
    Generator g = new Generator(17);
    Tensor want = fix("generator_randperm");
    for (int e = 0; e < 3; e++) {
      assertArrayEquals(want.select(0, e).toDoubleArray(), Tensor.randperm(g, 50).to(DType.F64).toDoubleArray(), "epoch " + e);
    }
  }

  @Test
  void modulesStartFromPyTorchsWeights() {
    module("linear", 20, () -> new Linear(5, 3));
    module("conv2d", 21, () -> new Conv2d(2, 3, 3));
    module("embedding", 22, () -> new Embedding(10, 4));
  }

  private static void module(String name, long seed, java.util.function.Supplier<Module> make) {
    Generator.manualSeed(seed);
    Module m = make.get();
    Map<String, Tensor> want = Fixtures.under(FIX, name);
    for (var e : m.stateDict().entrySet()) {
      double tol = name.equals("embedding") ? 1e-6 : 0; // normal draws
      double[] w = want.get(e.getKey()).toDoubleArray();
      double[] g = e.getValue().toDoubleArray();
      for (int i = 0; i < w.length; i++) assertEquals(w[i], g[i], tol * Math.max(1, Math.abs(w[i])), name + "." + e.getKey() + " [" + i + "]");
    }
    assertArrayEquals(want.get("next").toDoubleArray(), Tensor.rand(Generator.global(), DType.F64, 3).toDoubleArray(),
        name + ": the draws after it");
  }

  @Test
  void leNetStartsFromPyTorchsWeights() {
    Generator.manualSeed(0);
    Module lenet = Models.lenet5(10);
    for (var e : lenet.stateDict().entrySet()) {
      String k = "lenet." + e.getKey();
      double[] v = e.getValue().toDoubleArray();
      double sum = 0;
      for (double x : v) sum += x;
      int h = Math.min(16, v.length);
      assertArrayEquals(fix(k + ".head").toDoubleArray(), java.util.Arrays.copyOfRange(v, 0, h), k + " head");
      assertArrayEquals(fix(k + ".tail").toDoubleArray(), java.util.Arrays.copyOfRange(v, v.length - h, v.length), k + " tail");
      assertEquals(fix(k + ".sum").item(), sum, 1e-9, k + " sum");
    }
  }
}
