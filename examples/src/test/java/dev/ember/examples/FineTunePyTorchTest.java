package dev.ember.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Linear;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FineTunePyTorchTest {
  @Test
  void matchesPyTorchThenFineTunesOnTheShiftedData(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("finetuned.safetensors");
    Path weights = FineTunePyTorch.resource("pytorch-mlp.safetensors");
    Path check = FineTunePyTorch.resource("pytorch-mlp-check.safetensors");
    String printed = Output.of(() -> FineTunePyTorch.main(new String[] {weights.toString(), check.toString(), "5", out.toString()}));

    assertTrue(Output.value(printed, "pytorch_max_abs_diff") <= FineTunePyTorch.TOLERANCE, printed);
    double before = Output.value(printed, "accuracy_before");
    double after = Output.value(printed, "accuracy_after");
    assertTrue(before < 0.85, "the shift should cost the pretrained model accuracy: " + before);
    assertTrue(after >= 0.95 && after > before, "fine-tuning should recover: before " + before + ", after " + after);

    // the fine-tuned file has PyTorch's keys and shapes, and differs from the pretrained weights
    Map<String, Tensor> tuned = SafeTensors.load(out);
    Map<String, Tensor> pretrained = SafeTensors.load(weights);
    assertEquals(pretrained.keySet(), tuned.keySet());
    for (String k : pretrained.keySet()) {
      assertEquals(java.util.Arrays.toString(pretrained.get(k).shape()), java.util.Arrays.toString(tuned.get(k).shape()), k);
    }
    assertTrue(tuned.get("2.weight").sub(pretrained.get("2.weight")).abs().max().item() > 1e-3);
  }

  @Test
  void refusesWeightsThatDoNotGivePyTorchsOutputs(@TempDir Path tmp) throws Exception {
    Generator.manualSeed(42);
    Sequential other = new Sequential(new Linear(2, 32), new ReLU(), new Linear(32, 3));
    Path wrong = tmp.resolve("wrong.safetensors");
    SafeTensors.save(other.stateDict(), wrong);
    Path check = FineTunePyTorch.resource("pytorch-mlp-check.safetensors");
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> Output.of(() -> FineTunePyTorch.main(new String[] {wrong.toString(), check.toString(), "1", tmp.resolve("o").toString()})));
    assertTrue(e.getMessage().startsWith("FineTunePyTorch: Ember's outputs differ from PyTorch's by "), e.getMessage());
  }
}
