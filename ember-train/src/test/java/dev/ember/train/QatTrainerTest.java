package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.nn.quant.QConfig;
import dev.ember.nn.quant.Quantize;
import dev.ember.nn.quant.QuantizedLinear;
import dev.ember.optim.Adam;
import dev.ember.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Quantization-aware training inside Trainer: a model prepared with {@code Quantize.prepareQat} trains as any other
 * (fake quantization in the forward, straight-through gradients), and its converted int8 model is as accurate as the
 * same model trained in float (within 0.5 points) on the 3-blob data.
 */
class QatTrainerTest {
  private final Tensor[] train = Fixtures.blobs(1, 300);
  private final Tensor[] val = Fixtures.blobs(2, 900);

  private double accuracy(Module m) {
    return Trainer.evaluate(m, null, Fixtures.source(val, 300, 0), List.of(new TrainerTest.Acc())).get("accuracy");
  }

  private void fit(Module m) {
    Trainer.builder().maxEpochs(6).build()
        .fit(m, F::crossEntropy, new Adam(m.parameters(), 0.01), Fixtures.source(train, 16, 3), null);
  }

  @Test
  void qatTrainsWithTrainerAndConvertsWithinHalfAPointOfFloat() {
    Module floatModel = Fixtures.mlp(7);
    fit(floatModel);
    double floatAcc = accuracy(floatModel);

    Module qat = Quantize.prepareQat(Fixtures.mlp(7), QConfig.qatDefault());
    double before = accuracy(qat);
    fit(qat);
    Module q = Quantize.convert(qat);
    assertInstanceOf(QuantizedLinear.class, ((Sequential) q).get(0));
    double int8Acc = accuracy(q);
    assertTrue(int8Acc > before + 0.2, "QAT learned: " + before + " -> " + int8Acc);
    assertTrue(int8Acc >= floatAcc - 0.005, "int8 after QAT " + int8Acc + " vs float " + floatAcc);
  }
}
