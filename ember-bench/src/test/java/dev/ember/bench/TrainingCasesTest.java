package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The training category's join keys with pytorch_bench.py and the parameter counts behind compare.py's MFU. */
class TrainingCasesTest {
  @Test
  void mlpParameterCountsMatchThePeer() {
    // the counts pytorch_bench.py prints as "params" for these models (torch.nn.Linear with bias)
    assertEquals(101_770, TrainingCases.mlpParams("mlp_mnist"));
    assertEquals(1_055_242, TrainingCases.mlpParams("seed_small"));
    assertEquals(10_512_394, TrainingCases.mlpParams("seed_medium"));
    assertEquals(95_506_954, TrainingCases.mlpParams("seed_large"));
    assertEquals(-1, TrainingCases.mlpParams("lenet"));
  }

  @Test
  void casesAreThePeersWorkloadsAndNames() {
    List<String> names = TrainingCases.cases().stream().map(c -> c.workload() + "/" + c.name()).toList();
    assertEquals(3 + 3 * 2 * 3 + 3, names.size(), names.toString());
    assertTrue(names.contains("mlp_mnist/train b=32") && names.contains("mlp_mnist/infer b=1 latency"), names.toString());
    assertTrue(names.contains("seed_large/train b=128 adamw"), names.toString());
    assertTrue(names.contains("transformer/train b=16 T=128 adamw"), names.toString());
  }

  @Test
  void trainingRecordsOfMlpsCarryTheirParameterCount() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int status = Compare.run(new String[] {"training", "--only", "mlp_mnist/train b=32", "--repeats", "1", "--warmup", "0",
        "--target", "0.01", "--max-wait", "0"}, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8));
    assertEquals(0, status);
    List<String> lines = out.toString(StandardCharsets.UTF_8).lines().toList();
    assertEquals(2, lines.size(), lines.toString());
    Map<?, ?> rec = (Map<?, ?>) Report.parseJson(lines.get(1));
    assertEquals("train b=32", rec.get("case"));
    assertEquals("samples/s", rec.get("unit"));
    assertEquals(101_770L, rec.get("params"));
    assertTrue((Double) rec.get("median") > 0, rec.toString());
  }
}
