package dev.ember.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Module;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class CustomModuleAndCallbackTest {
  @Test
  void trainsLogsGradientNormsAndStopsBelowTheLoss() throws Exception {
    String out = Output.of(() -> CustomModuleAndCallback.main(new String[] {"30", "0.5"}));
    assertTrue(out.contains("(1): ResidualBlock(\n    (norm): LayerNorm"), out);

    Matcher m = Pattern.compile("(?m)^epoch (\\d+): loss=(\\S+) grad_norm=(\\S+) val_accuracy=(\\S+)$").matcher(out);
    int epochs = 0;
    double lastLoss = Double.NaN;
    while (m.find()) {
      epochs++;
      assertEquals(epochs, Integer.parseInt(m.group(1)), out);
      double g = Double.parseDouble(m.group(3));
      assertTrue(g > 0 && Double.isFinite(g), "grad_norm " + g);
      lastLoss = Double.parseDouble(m.group(2));
    }
    assertTrue(epochs >= 1 && epochs < 30, "should stop early: " + epochs + " epochs\n" + out);
    assertTrue(lastLoss < 0.5, "stopped at loss " + lastLoss);
    assertTrue(out.contains("trained " + epochs + " epoch" + (epochs == 1 ? "" : "s") + " of at most 30"), out);
    assertTrue(Output.value(out, "val_accuracy") > 0.8, out);
  }

  @Test
  void theBlockIsAModuleWithNamedParametersAndASkipConnection() {
    var block = new CustomModuleAndCallback.ResidualBlock(4, 8);
    assertEquals(List.of("norm.weight", "norm.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"),
        List.copyOf(block.stateDict().keySet()));
    Module asModule = block;
    // with fc2 zeroed the block is the identity
    try (var ignored = dev.ember.autograd.Grad.off()) {
      block.child("fc2").param("weight").mul_(0);
      block.child("fc2").param("bias").mul_(0);
    }
    Tensor x = Tensor.of(new float[] {1, -2, 3, 0.5f}, 1, 4);
    assertEquals(List.of(1f, -2f, 3f, 0.5f), boxed(asModule.call(x).toFloatArray()));
  }

  private static List<Float> boxed(float[] a) {
    Float[] b = new Float[a.length];
    for (int i = 0; i < a.length; i++) b[i] = a[i];
    return List.of(b);
  }
}
