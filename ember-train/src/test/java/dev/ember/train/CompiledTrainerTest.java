package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adam;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** {@link Trainer.Builder#compile}: compiled steps train to eager's losses, metrics and weights. */
class CompiledTrainerTest {
  private final Tensor[] train = Fixtures.blobs(1, 200);
  private final Tensor[] val = Fixtures.blobs(2, 90);

  private History fit(Module model, boolean compile) {
    Trainer t = Trainer.builder().maxEpochs(3).compile(compile).metrics(new dev.ember.metrics.Accuracy()).build();
    assertTrue(t.compiled() == compile);
    return t.fit(model, F::crossEntropy, new Adam(model.parameters(), 1e-2), Fixtures.source(train, 32, 5),
        Fixtures.source(val, 45, 6));
  }

  @Test
  void compiledStepsTrainToEagersWeightsAndHistory() {
    Module eager = Fixtures.mlp(3);
    Module compiled = Fixtures.mlp(3);
    History he = fit(eager, false);
    History hc = fit(compiled, true);
    Fixtures.assertSameState(eager.stateDict(), compiled.stateDict());
    for (String key : new String[] {"loss", "accuracy", "val_loss", "val_accuracy"}) {
      assertArrayEquals(he.values(key), hc.values(key), 0.0, key);
    }
  }

  @Test
  void compileRefusesWhatItCannotCompile() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Trainer.builder().compile(true).accumulate(2).build());
    assertTrue(e.getMessage().contains("accumulate(2)"), e.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> Trainer.builder().compile(true).precision(Trainer.Precision.BF16).build());
    assertFalse(Trainer.builder().build().compiled());
  }
}
