package dev.ember.nn.functional;

import static dev.ember.testing.Assertions.assertClose;

import dev.ember.nn.functional.Attention.Kernel;
import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Scaled dot-product attention (plain path, tiled path with tiny and default blocks) against the
 * explicit PyTorch reference in attention/attention_fixtures.txt (written by
 * attention/make_attention_fixtures.py): outputs and gradients, with no mask, a bool mask, a
 * broadcast float mask, a custom scale and causal masking (square and L < S).
 */
class AttentionFixtureTest {
  private static final Map<String, Tensor> ALL =
      Fixtures.read(AttentionFixtureTest.class, "attention/attention_fixtures.txt");
  private static final Kernel[] KERNELS = {Kernel.plain(), Kernel.tiled(2, 3), Kernel.tiled(64, 64)};

  @ParameterizedTest
  @ValueSource(strings = {"plain", "scaled", "boolmask", "floatmask", "causal", "causalrect"})
  void matchesTorchOnEveryPath(String name) {
    var f = Fixtures.under(ALL, name);
    for (DType dt : new DType[] {DType.F64, DType.F32}) {
      double tol = dt == DType.F64 ? 1e-10 : 2e-5;
      for (Kernel kernel : KERNELS) {
        String what = name + " " + dt + " " + kernel;
        Tensor q = f.get("q").to(dt).clone().requiresGrad(true);
        Tensor k = f.get("k").to(dt).clone().requiresGrad(true);
        Tensor v = f.get("v").to(dt).clone().requiresGrad(true);
        Tensor mask = f.get("mask");
        if (mask != null) mask = name.equals("boolmask") ? mask.ne(0) : mask.to(dt);
        Double scale = f.containsKey("scale") ? f.get("scale").item() : null;
        Tensor out = Attention.scaledDotProductAttention(q, k, v, mask, 0, name.startsWith("causal"), scale,
            Attention.NO_WINDOW, null, kernel);
        assertClose(f.get("out"), out, tol, tol, what + " out");
        out.backward(f.get("up").to(dt));
        assertClose(f.get("grad.q"), q.grad(), tol, tol * 10, what + " grad q");
        assertClose(f.get("grad.k"), k.grad(), tol, tol * 10, what + " grad k");
        assertClose(f.get("grad.v"), v.grad(), tol, tol * 10, what + " grad v");
      }
    }
  }
}
