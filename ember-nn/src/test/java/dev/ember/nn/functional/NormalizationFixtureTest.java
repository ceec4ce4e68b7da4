package dev.ember.nn.functional;

import static dev.ember.testing.Assertions.assertClose;

import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Forward values, running-stat updates and gradients of the normalizations against PyTorch 1.13
 * (norm/norm_fixtures.txt, written by norm/make_norm_fixtures.py), in float64 (tight) and float32.
 */
class NormalizationFixtureTest {
  private static final Map<String, Tensor> ALL = Fixtures.read(NormalizationFixtureTest.class, "norm/norm_fixtures.txt");

  private static Map<String, Tensor> fixture(String name) {
    return Fixtures.under(ALL, name);
  }

  private static Tensor leaf(Tensor t, DType dt) {
    return t.to(dt).clone().requiresGrad(true);
  }

  private static double tol(DType dt) {
    return dt == DType.F64 ? 1e-10 : 2e-5;
  }

  @ParameterizedTest
  @ValueSource(strings = {"bn2d", "bn3d", "bn4d"})
  void batchNormTrainingMatchesTorchAndUpdatesRunningStats(String name) {
    for (DType dt : new DType[] {DType.F64, DType.F32}) {
      var f = fixture(name);
      Tensor x = leaf(f.get("input"), dt);
      Tensor w = leaf(f.get("weight"), dt);
      Tensor b = leaf(f.get("bias"), dt);
      Tensor rm = f.get("rm0").to(dt).clone();
      Tensor rv = f.get("rv0").to(dt).clone();
      Tensor out = Normalization.batchNorm(x, rm, rv, w, b, true, 0.1, 1e-5);
      assertClose(f.get("out"), out, tol(dt), tol(dt), name + " out " + dt);
      assertClose(f.get("rm1"), rm, tol(dt), tol(dt), name + " running_mean " + dt);
      assertClose(f.get("rv1"), rv, tol(dt), tol(dt), name + " running_var " + dt);
      out.backward(f.get("up").to(dt));
      assertClose(f.get("grad.input"), x.grad(), tol(dt), tol(dt) * 10, name + " grad input " + dt);
      assertClose(f.get("grad.weight"), w.grad(), tol(dt), tol(dt) * 10, name + " grad weight " + dt);
      assertClose(f.get("grad.bias"), b.grad(), tol(dt), tol(dt) * 10, name + " grad bias " + dt);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"F64", "F32"})
  void batchNormEvalUsesRunningStats(String dtype) {
    DType dt = DType.valueOf(dtype);
    var f = fixture("bneval");
    Tensor x = leaf(f.get("input"), dt);
    Tensor w = leaf(f.get("weight"), dt);
    Tensor b = leaf(f.get("bias"), dt);
    Tensor rm = f.get("rm0").to(dt).clone();
    Tensor rv = f.get("rv0").to(dt).clone();
    Tensor out = Normalization.batchNorm(x, rm, rv, w, b, false);
    assertClose(f.get("out"), out, tol(dt), tol(dt), "bneval out");
    assertClose(f.get("rm0").to(dt), rm, 0, 0, "running_mean untouched in eval");
    assertClose(f.get("rv0").to(dt), rv, 0, 0, "running_var untouched in eval");
    out.backward(f.get("up").to(dt));
    assertClose(f.get("grad.input"), x.grad(), tol(dt), tol(dt) * 10, "bneval grad input");
    assertClose(f.get("grad.weight"), w.grad(), tol(dt), tol(dt) * 10, "bneval grad weight");
    assertClose(f.get("grad.bias"), b.grad(), tol(dt), tol(dt) * 10, "bneval grad bias");
  }

  @ParameterizedTest
  @ValueSource(strings = {"ln1", "ln2"})
  void layerNormMatchesTorch(String name) {
    for (DType dt : new DType[] {DType.F64, DType.F32}) {
      var f = fixture(name);
      Tensor x = leaf(f.get("input"), dt);
      Tensor w = leaf(f.get("weight"), dt);
      Tensor b = leaf(f.get("bias"), dt);
      Tensor out = Normalization.layerNorm(x, w.shape(), w, b, 1e-5);
      assertClose(f.get("out"), out, tol(dt), tol(dt), name + " out " + dt);
      out.backward(f.get("up").to(dt));
      assertClose(f.get("grad.input"), x.grad(), tol(dt), tol(dt) * 10, name + " grad input " + dt);
      assertClose(f.get("grad.weight"), w.grad(), tol(dt), tol(dt) * 10, name + " grad weight " + dt);
      assertClose(f.get("grad.bias"), b.grad(), tol(dt), tol(dt) * 10, name + " grad bias " + dt);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"gn3d:3", "gn4d:2"})
  void groupNormMatchesTorch(String spec) {
    String name = spec.split(":")[0];
    int groups = Integer.parseInt(spec.split(":")[1]);
    for (DType dt : new DType[] {DType.F64, DType.F32}) {
      var f = fixture(name);
      Tensor x = leaf(f.get("input"), dt);
      Tensor w = leaf(f.get("weight"), dt);
      Tensor b = leaf(f.get("bias"), dt);
      Tensor out = Normalization.groupNorm(x, groups, w, b);
      assertClose(f.get("out"), out, tol(dt), tol(dt), name + " out " + dt);
      out.backward(f.get("up").to(dt));
      assertClose(f.get("grad.input"), x.grad(), tol(dt), tol(dt) * 10, name + " grad input " + dt);
      assertClose(f.get("grad.weight"), w.grad(), tol(dt), tol(dt) * 10, name + " grad weight " + dt);
      assertClose(f.get("grad.bias"), b.grad(), tol(dt), tol(dt) * 10, name + " grad bias " + dt);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"F64", "F32"})
  void rmsNormMatchesReferenceWithFloat32MachineEpsilon(String dtype) {
    DType dt = DType.valueOf(dtype);
    var f = fixture("rms");
    Tensor x = leaf(f.get("input"), dt);
    Tensor w = leaf(f.get("weight"), dt);
    // the fixture used eps = finfo(float32).eps, the default for F32 inputs
    Tensor out = Normalization.rmsNorm(x, new int[] {5}, w, dt == DType.F32 ? null : (double) Math.ulp(1.0f));
    assertClose(f.get("out"), out, tol(dt), tol(dt), "rms out");
    out.backward(f.get("up").to(dt));
    assertClose(f.get("grad.input"), x.grad(), tol(dt), tol(dt) * 10, "rms grad input");
    assertClose(f.get("grad.weight"), w.grad(), tol(dt), tol(dt) * 10, "rms grad weight");
  }
}
