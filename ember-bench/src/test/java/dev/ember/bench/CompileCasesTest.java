package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The compile category: its cases, that each runs, and the PyTorch peer's names. */
class CompileCasesTest {
  private static final List<String> NAMES = List.of(
      "mlp_infer/784-128-10 b=1 eager", "mlp_infer/784-128-10 b=1 compiled",
      "lenet_infer/b=1 eager", "lenet_infer/b=1 compiled", "lenet_infer/b=64 eager", "lenet_infer/b=64 compiled",
      "train_step/mlp_mnist b=32 eager", "train_step/mlp_mnist b=32 compiled",
      "train_step/transformer b=16 T=128 eager", "train_step/transformer b=16 T=128 compiled",
      "compile_time/mlp_mnist", "compile_time/lenet5", "compile_time/convnet", "compile_time/transformer",
      "kernels/mlp_mnist traced", "kernels/mlp_mnist after passes", "kernels/lenet5 traced",
      "kernels/lenet5 after passes", "kernels/convnet traced", "kernels/convnet after passes",
      "kernels/transformer traced", "kernels/transformer after passes");

  @Test
  void listsItsCasesAndEachRuns() {
    CommandRun r = CommandRun.of(Compare::run, "compile", "--list");
    assertEquals(0, r.status(), r.err());
    assertEquals(NAMES, r.out().lines().toList());
    for (BenchCase c : CompileCases.cases()) {
      assertTrue(c.lowerIsBetter(), c.name());
      if (c.probe() != null) {
        assertTrue(c.probe().getAsDouble() > 0, c.name());
        continue;
      }
      if (c.name().startsWith("transformer")) continue; // a step of seconds on a loaded host: run below, once
      c.call().run();
      c.call().run();
    }
  }

  @Test
  void compiledStepsTrainAsTheEagerOnes() {
    // the same model, data and optimizer: the compiled joint step runs the eager kernels, so the losses agree
    Runnable eager = CompileCases.mlpStep(false);
    Runnable compiled = CompileCases.mlpStep(true);
    for (int i = 0; i < 3; i++) {
      eager.run();
      compiled.run();
    }
    CompileCases.transformerStep(true).run();
    CompileCases.transformerStep(true).run();
  }

  @Test
  void thePassesDoNotAddKernels() {
    for (String model : CompileCases.MODELS) {
      double[] k = CompileCases.kernels(model);
      assertTrue(k[1] <= k[0] && k[1] > 0, model + ": " + k[0] + " traced, " + k[1] + " after passes");
    }
  }

  @Test
  void thePeerScriptBuildsTheSameNames() throws IOException {
    String py = Files.readString(Path.of("..").toAbsolutePath().normalize().resolve("bench/peers/pytorch_compile.py"));
    for (String name : NAMES) {
      String workload = name.substring(0, name.indexOf('/'));
      if (workload.equals("kernels") || name.equals("compile_time/transformer")) continue; // Ember only
      String kase = name.substring(name.indexOf('/') + 1).replaceFirst(" (eager|compiled)$", " "); // + mode there
      if (workload.equals("lenet_infer")) kase = kase.replaceFirst("b=[0-9]+ ", "b=%d ");
      assertTrue(py.contains("\"" + workload + "\""), "pytorch_compile.py lacks workload " + workload);
      assertTrue(py.contains("\"" + kase), "pytorch_compile.py lacks case " + kase + " (" + name + ")");
    }
    assertTrue(py.contains("torch.jit.freeze(torch.jit.trace(model.eval(), x))"), "the peer compiles with TorchScript");
  }
}
