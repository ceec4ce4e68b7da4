package dev.ember.optim;

import static dev.ember.optim.OptimTestSupport.FIX;
import static dev.ember.optim.OptimTestSupport.STEPS;
import static dev.ember.testing.Assertions.assertClose;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * 20-step trajectories against make_optim_fixtures.py (PyTorch 1.13, and the script's reference
 * updates for Lion, LAMB, SAM and SophiaG): the parameters after the first and the last step agree
 * to 1e-6 relative in float64 (1e-5 in float32).
 */
class OptimReferenceTest {
  private static double[] betas(double b1, double b2) {
    return new double[] {b1, b2};
  }

  private static Arguments c(String name, BiFunction<List<Tensor>, Void, Optimizer> make) {
    return Arguments.of(name, make);
  }

  private static BiFunction<List<Tensor>, Void, Optimizer> mk(
      java.util.function.BiFunction<List<ParamGroup>, Map<String, ?>, Optimizer> ctor, Map<String, ?> g0, Map<String, ?> g1) {
    return (ps, unused) -> ctor.apply(OptimTestSupport.groups(ps, g1), g0);
  }

  static Stream<Arguments> cases() {
    return Stream.of(
        c("sgd_plain", mk(SGD::new, Map.of("lr", 0.05), Map.of("lr", 0.02))),
        c("sgd_momentum", mk(SGD::new, Map.of("lr", 0.05, "momentum", 0.9, "dampening", 0.1, "weight_decay", 0.01),
            Map.of("weight_decay", 0.0))),
        c("sgd_nesterov", mk(SGD::new, Map.of("lr", 0.05, "momentum", 0.9, "nesterov", true, "weight_decay", 0.01),
            Map.of("lr", 0.02))),
        c("sgd_maximize", mk(SGD::new, Map.of("lr", 0.01, "momentum", 0.5, "maximize", true), Map.of("lr", 0.005))),
        c("adam", mk(Adam::new, Map.of("lr", 0.01), Map.of("lr", 0.005))),
        c("adam_wd_ams", mk(Adam::new, Map.of("lr", 0.01, "betas", betas(0.8, 0.99), "weight_decay", 0.1, "amsgrad", true),
            Map.of("weight_decay", 0.0))),
        c("adam_max", mk(Adam::new, Map.of("lr", 0.01, "eps", 1e-6, "maximize", true), Map.of("lr", 0.005))),
        c("adamw", mk(AdamW::new, Map.of("lr", 0.01, "weight_decay", 0.1), Map.of("weight_decay", 0.0))),
        c("adamw_ams", mk(AdamW::new, Map.of("lr", 0.01, "betas", betas(0.85, 0.95), "weight_decay", 0.05, "amsgrad", true),
            Map.of("lr", 0.005))),
        c("nadam", mk(NAdam::new, Map.of("lr", 0.01), Map.of("lr", 0.005))),
        c("nadam_wd", mk(NAdam::new, Map.of("lr", 0.02, "weight_decay", 0.1, "momentum_decay", 3e-3), Map.of("weight_decay", 0.0))),
        c("radam", mk(RAdam::new, Map.of("lr", 0.01), Map.of("lr", 0.005))),
        c("radam_wd", mk(RAdam::new, Map.of("lr", 0.01, "betas", betas(0.9, 0.9), "weight_decay", 0.1), Map.of("weight_decay", 0.0))),
        c("adamax", mk(Adamax::new, Map.of("lr", 0.02), Map.of("lr", 0.01))),
        c("adamax_wd", mk(Adamax::new, Map.of("lr", 0.02, "weight_decay", 0.1, "maximize", true), Map.of("weight_decay", 0.0))),
        c("rmsprop", mk(RMSprop::new, Map.of("lr", 0.01), Map.of("lr", 0.005))),
        c("rmsprop_centered", mk(RMSprop::new,
            Map.of("lr", 0.01, "alpha", 0.9, "centered", true, "momentum", 0.5, "weight_decay", 0.01), Map.of("weight_decay", 0.0))),
        c("adagrad", mk(Adagrad::new, Map.of("lr", 0.1), Map.of("lr", 0.05))),
        c("adagrad_decay", mk(Adagrad::new,
            Map.of("lr", 0.1, "lr_decay", 0.01, "weight_decay", 0.05, "initial_accumulator_value", 0.1), Map.of("weight_decay", 0.0))),
        c("adadelta", mk(Adadelta::new, Map.of("lr", 1.0), Map.of("lr", 0.5))),
        c("adadelta_wd", mk(Adadelta::new, Map.of("lr", 0.5, "rho", 0.8, "weight_decay", 0.1, "maximize", true),
            Map.of("weight_decay", 0.0))),
        c("lion", mk(Lion::new, Map.of("lr", 0.01), Map.of("lr", 0.005))),
        c("lion_wd", mk(Lion::new, Map.of("lr", 0.01, "betas", betas(0.95, 0.98), "weight_decay", 0.1), Map.of("weight_decay", 0.0))),
        c("lamb", mk(LAMB::new, Map.of("lr", 0.01), Map.of("lr", 0.005))),
        c("lamb_wd", mk(LAMB::new, Map.of("lr", 0.01, "weight_decay", 0.1, "bias_correction", false), Map.of("weight_decay", 0.0))),
        c("sophia", mk(SophiaG::new, Map.of("lr", 0.01, "rho", 0.04, "weight_decay", 0.1, "bs", 10.0), Map.of("weight_decay", 0.0))),
        c("sophia_b", mk(SophiaG::new, Map.of("lr", 0.02, "betas", betas(0.9, 0.95), "rho", 0.02, "weight_decay", 0.0, "bs", 2.0),
            Map.of("lr", 0.01))),
        c("sam_sgd", (ps, u) -> new SAM(new SGD(OptimTestSupport.groups(ps, Map.of("lr", 0.02)), Map.of("lr", 0.05, "momentum", 0.9)),
            0.05, false)),
        c("sam_adam_adaptive", (ps, u) -> new SAM(new Adam(OptimTestSupport.groups(ps, Map.of("lr", 0.005)), Map.of("lr", 0.01)),
            0.5, true)),
        c("sgd_momentum_f32", mk(SGD::new, Map.of("lr", 0.05, "momentum", 0.9, "dampening", 0.1, "weight_decay", 0.01),
            Map.of("weight_decay", 0.0))),
        c("adam_f32", mk(Adam::new, Map.of("lr", 0.01, "weight_decay", 0.1, "amsgrad", true), Map.of("lr", 0.005))),
        c("adamw_f32", mk(AdamW::new, Map.of("lr", 0.01, "weight_decay", 0.1), Map.of("weight_decay", 0.0))));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void trajectoryMatchesPyTorch(String name, BiFunction<List<Tensor>, Void, Optimizer> make) {
    boolean f32 = name.endsWith("_f32");
    List<Tensor> ps = OptimTestSupport.params(f32 ? DType.F32 : DType.F64);
    Optimizer opt = make.apply(ps, null);
    for (int t = 0; t < STEPS; t++) {
      int step = t;
      OptimTestSupport.setGrads(ps, t, false);
      if (opt instanceof SAM) {
        opt.step(() -> {
          OptimTestSupport.setGrads(ps, step, false);
          return null;
        });
      } else {
        opt.step();
      }
      if (opt instanceof SophiaG sophia && sophia.hessianDue(3)) {
        OptimTestSupport.setGrads(ps, t, true);
        sophia.updateHessian();
      }
      if (t == 0) check(name, "step1", ps, f32);
    }
    check(name, "final", ps, f32);
  }

  static void check(String name, String when, List<Tensor> ps, boolean f32) {
    double tol = f32 ? 1e-5 : 1e-6;
    for (int i = 0; i < ps.size(); i++) {
      assertClose(FIX.get(name + "." + when + "." + i), ps.get(i).to(DType.F64), tol, tol, name + " " + when + " p" + i);
    }
  }
}
