package dev.ember.nn.functional;

import static dev.ember.testing.Assertions.assertClose;

import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * Runs one PyTorch fixture case (conv/conv_fixtures.txt) in float64 and float32: the named inputs
 * become leaves, the op's output (and max pooling's indices) must match {@code out}
 * ({@code indices}), and after backward with the fixed upstream gradient {@code up} each leaf's
 * gradient must match {@code grad.<name>}. Tolerances: 1e-10 in float64, 1e-5 relative (plus a
 * 1e-5 absolute floor) in float32.
 */
final class FixtureRunner {
  private FixtureRunner() {}

  static final Map<String, Tensor> ALL = Fixtures.read(FixtureRunner.class, "conv/conv_fixtures.txt");

  private static final String[] ROLES = {"input", "weight", "bias"};

  /** {@code op} maps the leaves by role to the output, or to a {values, indices} pair. */
  static void check(String name, Function<Map<String, Tensor>, Tensor[]> op) {
    Map<String, Tensor> f = Fixtures.under(ALL, name);
    if (f.isEmpty()) throw new AssertionError("no fixture " + name);
    for (DType dt : new DType[] {DType.F64, DType.F32}) {
      double tol = dt == DType.F64 ? 1e-10 : 1e-5;
      Map<String, Tensor> leaves = new LinkedHashMap<>();
      for (String role : ROLES) {
        if (f.containsKey(role)) leaves.put(role, f.get(role).to(dt).clone().requiresGrad(true));
      }
      Tensor[] r = op.apply(leaves);
      assertClose(f.get("out"), r[0], tol, tol, name + " out " + dt);
      if (f.containsKey("indices")) {
        if (r.length < 2) throw new AssertionError(name + ": the fixture has indices, the op returned none");
        assertClose(f.get("indices"), r[1], 0, 0, name + " indices " + dt);
      }
      r[0].backward(f.get("up").to(dt));
      for (var e : leaves.entrySet()) {
        Tensor expected = f.get("grad." + e.getKey());
        if (expected == null) throw new AssertionError(name + ": no gradient for " + e.getKey());
        assertClose(expected, e.getValue().grad(), tol, tol, name + " grad " + e.getKey() + " " + dt);
      }
    }
  }

  static Tensor[] one(Tensor t) {
    return new Tensor[] {t};
  }
}
