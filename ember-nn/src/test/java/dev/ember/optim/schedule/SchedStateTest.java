package dev.ember.optim.schedule;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.optim.Optimizer;
import dev.ember.optim.OptimizerState;
import dev.ember.optim.ParamGroup;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** Saving and restoring schedules (with their optimizer) mid-run continues with identical values. */
class SchedStateTest {
  static SGD sgd(Tensor w) {
    return new SGD(List.of(ParamGroup.of(w).set("lr", 0.1)), Map.of("lr", 0.1, "momentum", 0.9));
  }

  static void check(Function<Optimizer, LRScheduler> make) {
    Tensor w = Tensor.ones(DType.F64, 3).requiresGrad(true);
    SGD opt = sgd(w);
    LRScheduler s = make.apply(opt);
    for (int t = 0; t < 13; t++) {
      w.setGrad(Tensor.full(0.1 * t, DType.F64, 3));
      opt.step();
      s.step();
    }
    OptimizerState os = opt.stateDict();
    Map<String, Object> ss = s.stateDict();
    Tensor w2 = w.detach().cloneContiguous().requiresGrad(true);
    SGD opt2 = sgd(w2);
    LRScheduler s2 = make.apply(opt2);
    opt2.loadStateDict(os);
    s2.loadStateDict(ss);
    for (int t = 13; t < 20; t++) {
      for (Tensor p : List.of(w, w2)) p.setGrad(Tensor.full(0.1 * t, DType.F64, 3));
      opt.step();
      opt2.step();
      s.step();
      s2.step();
      assertArrayEquals(s.lastLr(), s2.lastLr(), 0.0, "lr at " + t);
      assertEquals(opt.paramGroups().get(0).getDouble("momentum"), opt2.paramGroups().get(0).getDouble("momentum"), 0.0);
      assertArrayEquals(w.toDoubleArray(), w2.toDoubleArray(), 0.0, "params at " + t);
    }
  }

  @Test
  void restoredSchedulesContinueIdentically() {
    check(o -> new CosineAnnealingLR(o, 10, 0.01));
    check(o -> new OneCycleLR(o, 0.5, 30));
    check(o -> new CyclicLR(o, 0.01, 0.1, 4));
    check(o -> new SequentialLR(o, List.of(new LinearLR(o, 0.1, 1.0, 5), new StepLR(o, 3, 0.5)), new int[] {5}));
    check(o -> new LinearWarmup(new ExponentialLR(o, 0.9), 4, 0.0));
  }

  @Test
  void restoredPlateauContinuesIdentically() {
    double[] metrics = {1, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8};
    Tensor w = Tensor.ones(DType.F64, 1).requiresGrad(true);
    SGD opt = sgd(w);
    ReduceLROnPlateau p = new ReduceLROnPlateau(opt, "min", 0.5, 2, 1e-4, "rel", 1, 0.0, 1e-8);
    for (int i = 0; i < 6; i++) p.step(metrics[i]);
    SGD opt2 = sgd(Tensor.ones(DType.F64, 1).requiresGrad(true));
    opt2.loadStateDict(opt.stateDict());
    ReduceLROnPlateau p2 = new ReduceLROnPlateau(opt2, "min", 0.5, 2, 1e-4, "rel", 1, 0.0, 1e-8);
    p2.loadStateDict(p.stateDict());
    for (int i = 6; i < metrics.length; i++) {
      p.step(metrics[i]);
      p2.step(metrics[i]);
      assertArrayEquals(p.lastLr(), p2.lastLr(), 0.0);
    }
    assertEquals(p.best(), p2.best());
  }

  @Test
  void validationMessages() {
    SGD opt = sgd(Tensor.ones(1).requiresGrad(true));
    assertEquals("StepLR: step_size must be > 0, got 0",
        assertThrows(IllegalArgumentException.class, () -> new StepLR(opt, 0, 0.1)).getMessage());
    assertEquals("ReduceLROnPlateau: Factor should be < 1.0, got 1.5",
        assertThrows(IllegalArgumentException.class,
            () -> new ReduceLROnPlateau(opt, "min", 1.5, 10, 1e-4, "rel", 0, 0.0, 1e-8)).getMessage());
    assertEquals("SequentialLR: expects number of schedulers provided to be one more than the number of milestone points,"
        + " but got number of schedulers 1 and the number of milestones to be equal to 1",
        assertThrows(IllegalArgumentException.class,
            () -> new SequentialLR(opt, List.of(new ExponentialLR(opt, 0.9)), new int[] {3})).getMessage());
    assertEquals("OneCycleLR: anneal_strategy must by one of 'cos' or 'linear', instead got cosine",
        assertThrows(IllegalArgumentException.class,
            () -> new OneCycleLR(opt, 0.1, 10, 0.3, "cosine", true, 0.85, 0.95, 25, 1e4, false)).getMessage());
  }
}
