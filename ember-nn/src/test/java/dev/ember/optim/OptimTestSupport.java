package dev.ember.optim;

import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The setup of make_optim_fixtures.py: three parameters, the gradient
 * {@code a * p + b + 0.4 * p^3 + noise_t}, and p2 without a gradient at step index 4.
 */
final class OptimTestSupport {
  static final Map<String, Tensor> FIX = Fixtures.read(OptimTestSupport.class, "optim_fixtures.txt");
  static final int STEPS = 20;

  private OptimTestSupport() {}

  static List<Tensor> params(DType dtype) {
    List<Tensor> ps = new ArrayList<>();
    for (int i = 0; i < 3; i++) ps.add(FIX.get("init." + i).to(dtype).cloneContiguous().requiresGrad(true));
    return ps;
  }

  /** Sets each parameter's gradient for step {@code t} (Sophia's sampled-loss gradient when {@code hess}). */
  static void setGrads(List<Tensor> ps, int t, boolean hess) {
    for (int i = 0; i < ps.size(); i++) {
      Tensor p = ps.get(i);
      if (i == 2 && t == 4) {
        p.setGrad(null);
        continue;
      }
      double[] x = p.to(DType.F64).toDoubleArray();
      double[] a = FIX.get("a." + i).toDoubleArray();
      double[] b = FIX.get("b." + i).toDoubleArray();
      double[] n = FIX.get((hess ? "hnoise." : "noise.") + t + "." + i).toDoubleArray();
      double[] g = new double[x.length];
      for (int j = 0; j < g.length; j++) {
        g[j] = hess ? a[j] * x[j] + n[j] : a[j] * x[j] + b[j] + 0.4 * x[j] * x[j] * x[j] + n[j];
      }
      p.setGrad(Tensor.of(g, p.shape()).to(p.dtype()));
    }
  }

  /** Two groups as in the script: [p0, p1] with the optimizer's options, [p2] with {@code overrides}. */
  static List<ParamGroup> groups(List<Tensor> ps, Map<String, ?> overrides) {
    ParamGroup g1 = ParamGroup.of(ps.get(2));
    for (var e : overrides.entrySet()) g1.set(e.getKey(), e.getValue());
    return List.of(ParamGroup.of(ps.get(0), ps.get(1)), g1);
  }
}
