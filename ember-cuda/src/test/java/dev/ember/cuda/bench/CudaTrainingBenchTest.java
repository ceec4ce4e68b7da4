package dev.ember.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.testing.Gpu;
import dev.ember.tensor.Device;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The training bench measured everywhere on core's strict fake device (quick sizes), which fails any model, batch
 * or mask left on the host, and on a GPU where there is one.
 */
class CudaTrainingBenchTest {
  static List<String> lines(Device device, String only) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    int status = CudaTrainingBench.run(new PrintStream(bytes, true, StandardCharsets.UTF_8), device, 0.01, true, only);
    List<String> out = Arrays.asList(bytes.toString(StandardCharsets.UTF_8).split("\n"));
    assertEquals(0, status, String.join("\n", out));
    return out;
  }

  @Test
  void measuresEveryWorkloadOfTheCpuSuiteOnTheDeviceWithThePeersCaseNames() {
    List<String> rows = lines(Device.of("fake", 0), "mlp_mnist,seed_small,lenet,convnet,transformer");
    List<String> cases = rows.stream().map(r -> r.replaceAll(".*\"case\": \"([^\"]*)\".*", "$1")).toList();
    List<String> want = new java.util.ArrayList<>();
    for (String c : List.of("train b=32", "train b=128", "train b=32 sgd", "train b=32 adam", "train b=128 sgd",
        "train b=128 adam", "train b=64 adam", "train b=64 sgd-mom", "train b=16 T=128 adamw")) {
      want.add(c + " f32");
      want.add(c + " bf16");
    }
    assertEquals(want, cases);
    for (String r : rows) {
      assertFalse(r.contains("\"error\""), r);
      double value = Double.parseDouble(r.replaceAll(".*\"value\": ([0-9.Ee+-]+),.*", "$1"));
      assertTrue(value > 0, r);
      assertTrue(r.contains("\"device\": \"fake:0\""), r);
    }
    assertTrue(rows.get(rows.size() - 1).contains("\"metric\": \"tokens/s\""), rows.get(rows.size() - 1));
  }

  @Test
  void selectsWorkloadsByPrefix() {
    assertTrue(CudaTrainingBench.selected("seed_large", ""));
    assertTrue(CudaTrainingBench.selected("seed_large", "mlp, seed"));
    assertFalse(CudaTrainingBench.selected("lenet", "mlp,seed"));
  }

  @Test
  void withoutAGpuItSaysTheDeviceIsNotAvailable() {
    Assumptions.assumeTrue(CudaDriver.unavailableReason().isPresent(), "this machine has a CUDA driver");
    assertEquals(List.of("{\"skipped\": \"training: device cuda:0 is not available\"}"),
        lines(Device.cuda(0), ""));
  }

  @Test
  void trainsTheMlpOnTheGpu() {
    Gpu.assumeDevice();
    for (String r : lines(Device.cuda(0), "mlp_mnist")) {
      assertFalse(r.contains("\"error\""), r);
      assertTrue(r.contains("\"device\": \"cuda:0\""), r);
    }
  }
}
