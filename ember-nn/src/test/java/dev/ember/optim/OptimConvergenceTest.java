package dev.ember.optim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The convergence table (as optax's): every optimizer, with a learning rate suited to it, brings an
 * ill-conditioned quadratic {@code 0.5 * sum(c_i x_i^2)} (c from 1 to 10, start at 1) and the
 * Rosenbrock function {@code (1 - x)^2 + 100 (y - x^2)^2} (start (-1.2, 1)) below a threshold in a
 * fixed number of steps, in float64 (Rosenbrock below 1e-2, Adadelta below 0.15). Gradients are analytic; SophiaG's Hessian refresh is fed the
 * square root of the exact diagonal Hessian, so its EMA tracks that diagonal.
 */
class OptimConvergenceTest {
  static final int QUAD_STEPS = 500;
  static final int ROSEN_STEPS = 3000;
  static final double QUAD_TOL = 1e-3;
  static final double ROSEN_TOL = 1e-2;

  static Stream<Arguments> table() {
    return Stream.of(
        row("SGD", p -> new SGD(p, 0.1), p -> new SGD(p, 1.5e-3)),
        row("SGD momentum nesterov", p -> new SGD(p, Map.of("lr", 0.05, "momentum", 0.9, "nesterov", true)),
            p -> new SGD(p, Map.of("lr", 5e-4, "momentum", 0.9, "nesterov", true))),
        row("Adam", p -> new Adam(p, 0.05), p -> new Adam(p, 0.02)),
        row("Adam amsgrad", p -> new Adam(p, Map.of("lr", 0.05, "amsgrad", true)), p -> new Adam(p, Map.of("lr", 0.02, "amsgrad", true))),
        row("AdamW", p -> new AdamW(p, Map.of("lr", 0.05, "weight_decay", 1e-4)), p -> new AdamW(p, Map.of("lr", 0.02, "weight_decay", 0.0))),
        row("NAdam", p -> new NAdam(p, 0.05), p -> new NAdam(p, 0.02)),
        row("RAdam", p -> new RAdam(p, 0.05), p -> new RAdam(p, Map.of("lr", 5e-3, "betas", new double[] {0.9, 0.99}))),
        row("Adamax", p -> new Adamax(p, 0.05), p -> new Adamax(p, 0.05)),
        row("RMSprop", p -> new RMSprop(p, 0.01), p -> new RMSprop(p, Map.of("lr", 1e-3, "centered", true, "momentum", 0.9))),
        row("Adagrad", p -> new Adagrad(p, 0.5), p -> new Adagrad(p, 0.3)),
        row("Adadelta", p -> new Adadelta(p, Map.of("lr", 0.1, "eps", 1e-4)),
            p -> new Adadelta(p, Map.of("lr", 0.1, "eps", 1e-6, "rho", 0.95)), 0.15),
        row("Lion", p -> new Lion(p, 0.01), p -> new Lion(p, Map.of("lr", 1e-3, "betas", new double[] {0.9, 0.99}))),
        row("LAMB", p -> new LAMB(p, 0.05), p -> new LAMB(p, 0.01)),
        row("SAM(SGD)", p -> new SAM(new SGD(p, 0.1), 0.01, false), p -> new SAM(new SGD(p, 1.5e-3), 1e-3, false)),
        row("SAM(Adam) adaptive", p -> new SAM(new Adam(p, 0.05), 0.05, true), p -> new SAM(new Adam(p, 0.02), 0.01, true)),
        row("SophiaG", p -> new SophiaG(p, Map.of("lr", 0.5, "rho", 1.0, "bs", 1.0, "weight_decay", 0.0)),
            p -> new SophiaG(p, Map.of("lr", 0.5, "rho", 1.0, "bs", 1.0, "weight_decay", 0.0))));
  }

  private static Arguments row(String name, Function<List<Tensor>, Optimizer> quad, Function<List<Tensor>, Optimizer> rosen) {
    return row(name, quad, rosen, ROSEN_TOL);
  }

  /** A row with its own Rosenbrock threshold (Adadelta crawls along the valley). */
  private static Arguments row(String name, Function<List<Tensor>, Optimizer> quad, Function<List<Tensor>, Optimizer> rosen,
      double rosenTol) {
    return Arguments.of(name, quad, rosen, rosenTol);
  }

  interface Problem {
    double value(double[] x);

    double[] grad(double[] x);

    double[] hessianDiag(double[] x);
  }

  static final Problem QUADRATIC = new Problem() {
    public double value(double[] x) {
      double s = 0;
      for (int i = 0; i < x.length; i++) s += 0.5 * (1 + i) * x[i] * x[i];
      return s;
    }

    public double[] grad(double[] x) {
      double[] g = new double[x.length];
      for (int i = 0; i < x.length; i++) g[i] = (1 + i) * x[i];
      return g;
    }

    public double[] hessianDiag(double[] x) {
      double[] h = new double[x.length];
      for (int i = 0; i < x.length; i++) h[i] = 1 + i;
      return h;
    }
  };

  static final Problem ROSENBROCK = new Problem() {
    public double value(double[] v) {
      double x = v[0], y = v[1];
      return (1 - x) * (1 - x) + 100 * (y - x * x) * (y - x * x);
    }

    public double[] grad(double[] v) {
      double x = v[0], y = v[1];
      return new double[] {-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)};
    }

    public double[] hessianDiag(double[] v) {
      double x = v[0], y = v[1];
      return new double[] {2 - 400 * (y - x * x) + 800 * x * x, 200};
    }
  };

  static double run(Problem f, double[] start, Function<List<Tensor>, Optimizer> make, int steps) {
    Tensor x = Tensor.of(start.clone(), start.length).requiresGrad(true);
    Optimizer opt = make.apply(List.of(x));
    for (int t = 0; t < steps; t++) {
      x.setGrad(Tensor.of(f.grad(x.toDoubleArray()), start.length));
      if (opt instanceof SAM) {
        opt.step(() -> {
          x.setGrad(Tensor.of(f.grad(x.toDoubleArray()), start.length));
          return null;
        });
      } else {
        opt.step();
      }
      if (opt instanceof SophiaG s && s.hessianDue(10) || opt instanceof SophiaG && t == 0) {
        double[] h = f.hessianDiag(x.toDoubleArray());
        for (int i = 0; i < h.length; i++) h[i] = Math.sqrt(Math.abs(h[i]));
        x.setGrad(Tensor.of(h, start.length));
        ((SophiaG) opt).updateHessian();
      }
    }
    double v = f.value(x.toDoubleArray());
    return Double.isNaN(v) ? Double.POSITIVE_INFINITY : v;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("table")
  void reducesQuadraticAndRosenbrock(String name, Function<List<Tensor>, Optimizer> quad, Function<List<Tensor>, Optimizer> rosen,
      double rosenTol) {
    double[] ones = new double[10];
    java.util.Arrays.fill(ones, 1.0);
    double q0 = QUADRATIC.value(ones);
    double q = run(QUADRATIC, ones, quad, QUAD_STEPS);
    double r0 = ROSENBROCK.value(new double[] {-1.2, 1.0});
    double r = run(ROSENBROCK, new double[] {-1.2, 1.0}, rosen, ROSEN_STEPS);
    System.out.printf("convergence %-24s quadratic %.3g -> %.3g (%d steps), rosenbrock %.3g -> %.3g (%d steps)%n",
        name, q0, q, QUAD_STEPS, r0, r, ROSEN_STEPS);
    assertTrue(q < QUAD_TOL, name + ": quadratic " + q0 + " -> " + q + " after " + QUAD_STEPS + " steps, want < " + QUAD_TOL);
    assertTrue(r < rosenTol, name + ": rosenbrock " + r0 + " -> " + r + " after " + ROSEN_STEPS + " steps, want < " + rosenTol);
  }

}
