package dev.ember.examples;

import dev.ember.data.FashionLike;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.amp.Autocast;
import dev.ember.autograd.Grad;
import dev.ember.data.Batch;
import dev.ember.data.BatchConfig;
import dev.ember.data.BatchIterator;
import dev.ember.data.DataLoader;
import dev.ember.data.FashionMnist;
import dev.ember.metrics.Accuracy;
import dev.ember.nn.CheckpointSequential;
import dev.ember.nn.Linear;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.nn.io.SafeTensors;
import dev.ember.optim.Adam;
import dev.ember.optim.AdamW;
import dev.ember.optim.GradScaler;
import dev.ember.optim.SGD;
import dev.ember.optim.schedule.CosineAnnealingLR;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import dev.ember.train.History;
import dev.ember.train.Trainer;
import dev.ember.train.callbacks.CsvLogger;
import dev.ember.train.callbacks.EarlyStopping;
import dev.ember.train.callbacks.ModelCheckpoint;
import dev.ember.train.callbacks.ProgressBar;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * README's code blocks, line for line (only the file paths point into a temporary folder and the
 * data at a generated set), so that every snippet a reader copies compiles with the imports README
 * lists and runs. Change both together.
 */
class ReadmeSnippetsTest {
  @Test
  void mixedPrecisionAndCheckpointing() {
    Generator gen = new Generator(0);
    Sequential model = new Sequential(new Linear(8, 16, true, gen), new ReLU(), new Linear(16, 3, true, gen));
    SGD opt = new SGD(model.parameters(), 0.1);
    Tensor x = Tensor.randn(gen, 4, 8);
    Tensor y = Tensor.of(new long[] {0, 1, 2, 1}, 4);
    GradScaler scaler = new GradScaler();              // needed for F16, not for BF16
    Tensor loss;
    try (var ac = Autocast.enable(DType.F16)) {
      loss = F.crossEntropy(model.call(x), y);         // linear in F16, the loss in F32
    }
    scaler.scale(loss).backward();                     // backward outside autocast
    scaler.unscale(opt);                               // clip here, on the true gradients
    scaler.step(opt);                                  // skipped when a gradient overflowed
    scaler.update();

    Tensor out = CheckpointSequential.apply(model, 2, x);  // keeps segment inputs only
    assertEquals(DType.F32, loss.dtype());
    assertEquals(DType.F32, model.parameters().get(0).grad().dtype());
    assertEquals(65536.0, scaler.getScale());
    assertEquals(java.util.List.of(4, 3), java.util.Arrays.stream(out.shape()).boxed().toList());
  }

  @Test
  void aTaste() {
    Generator gen = new Generator(0);
    Tensor x = Tensor.randn(gen, 32, 784);
    Tensor w = Tensor.randn(gen, 784, 128).mul(0.05).requiresGrad(true);
    Tensor b = Tensor.zeros(128).requiresGrad(true);
    Tensor loss = x.matmul(w).add(b).relu().sum(1, false).mean();
    loss.backward();                       // w.grad(), b.grad()
    try (var ignored = Grad.off()) {       // no graph while updating
      w.sub_(w.grad().mul(0.01));
    }
    assertNotNull(b.grad());
  }

  @Test
  void withModulesAndAnOptimizer(@TempDir Path tmp) throws Exception {
    Generator gen = new Generator(0);
    Tensor images = Tensor.rand(gen, 64, 784);              // a batch of 64 flattened 28x28 images
    Tensor labels = Tensor.randint(gen, 0, 10, 64);         // their classes: I64 [64]
    Sequential model = new Sequential(new Linear(784, 128), new ReLU(), new Linear(128, 10));
    Tensor loss = F.crossEntropy(model.forward(images), labels);
    model.zeroGrad();
    loss.backward();
    System.out.println(model);                                           // the PyTorch-style tree
    SafeTensors.save(model.stateDict(), tmp.resolve("model.safetensors"));  // loads in Python too

    var opt = new AdamW(model.parameters(), Map.of("lr", 1e-3, "weight_decay", 0.01));
    var sched = new CosineAnnealingLR(opt, 100, 0.0);
    for (int step = 0; step < 100; step++) {
      opt.zeroGrad();
      F.crossEntropy(model.forward(images), labels).backward();
      opt.step();
      sched.step();
    }
    assertTrue(F.crossEntropy(model.forward(images), labels).item() < loss.item() / 2, "100 steps on one batch");
    assertEquals(model.stateDict().keySet(), SafeTensors.load(tmp.resolve("model.safetensors")).keySet());
  }

  @Test
  void training(@TempDir Path tmp) throws Exception {
    Path data = Files.createDirectory(tmp.resolve("data"));
    FashionLike.write(data, "train", 256, new Random(1));
    FashionLike.write(data, "t10k", 100, new Random(2));
    Path run = tmp.resolve("run");

    var split = FashionMnist.load(FashionMnist.locate(data));           // README: locate(null)
    var train = new DataLoader(split.train(), new BatchConfig(128, true, false, 0), 1);   // 1 prefetching worker
    var test = new DataLoader(split.test(), new BatchConfig(1000, false, false, 0));
    Generator.manualSeed(0);
    Module model = Models.lenet5(10);
    var opt = new Adam(model.parameters(), 1e-3);
    History h = Trainer.builder()
        .maxEpochs(2)                                                     // README: 5
        .metrics(new Accuracy())                                          // logged as accuracy / val_accuracy
        .callbacks(ProgressBar.auto(), new CsvLogger(run.resolve("metrics.csv")),
            new ModelCheckpoint(run.resolve("checkpoints"), 1, 0, 3), new EarlyStopping("val_loss", "min", 3))
        .build()
        .fit(model, F::crossEntropy, opt, train, test);
    assertEquals(2, h.values("val_accuracy").length);
    assertTrue(Files.exists(run.resolve("metrics.csv")));

    // the explicit loop
    double total = 0;
    int steps = 0;
    for (int epoch = 0; epoch < 1; epoch++) {                              // README: 5
      try (BatchIterator it = train.iterate(epoch, 0)) {
        while (it.hasNext()) {
          Batch b = it.next();
          try (MemoryScope step = MemoryScope.open()) {
            opt.zeroGrad();
            Tensor loss = F.crossEntropy(model.call(b.input()), b.target());
            loss.backward();
            opt.step();
            total += loss.item();             // numbers outlive the scope; its tensors do not
            steps++;
          }
        }
      }
    }
    assertTrue(steps == 2 && Double.isFinite(total), steps + " steps, total " + total);
  }
}
