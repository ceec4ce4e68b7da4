package dev.ember.examples;

import dev.ember.autograd.Grad;
import dev.ember.data.Batch;
import dev.ember.data.BatchConfig;
import dev.ember.data.DataLoader;
import dev.ember.data.FashionMnist;
import dev.ember.data.TensorDataset;
import dev.ember.metrics.Accuracy;
import dev.ember.nn.Fuse;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.nn.quant.QConfig;
import dev.ember.nn.quant.Quantize;
import dev.ember.optim.Adam;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.train.Trainer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Static post-training int8 quantization on Fashion-MNIST (issue #36's measurement): the MLP 784-256-128-10 and
 * LeNet-5 are trained (Adam 1e-3, batch 128), their Linear/Conv2d + ReLU pairs fused ({@link Fuse#fuse}), observed
 * on the first CALIB training images ({@link Quantize#prepare} with {@link QConfig#ptqDefault()}) and converted
 * ({@link Quantize#convert}). Prints per model the test accuracy of the float and the int8 model and the median
 * inference time of each (fused float vs int8) on a batch of 128 test images.
 *
 * <p>Run from the repository root (every argument optional; defaults: 2 epochs, all 60000 training images, 1000
 * calibration images, the data searched as {@link FashionCnn} does, {@code -} searches too):
 * <pre>
 * scripts/mvn -q -pl examples -am test-compile exec:exec -Dexample=QuantizeFashion -Dargs="EPOCHS LIMIT CALIB DATA_DIR"
 * </pre>
 * Each model's line reads {@code model=mlp float=0.xxxx int8=0.xxxx loss_pt=x.xx float_ms=x.xx int8_ms=x.xx}.
 */
public final class QuantizeFashion {
  private QuantizeFashion() {}

  public static void main(String[] args) throws IOException {
    int epochs = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    int limit = args.length > 1 ? Integer.parseInt(args[1]) : 60_000;
    int calib = args.length > 2 ? Integer.parseInt(args[2]) : 1000;
    Path dataDir = args.length > 3 && !args[3].equals("-") ? Path.of(args[3]) : null;

    FashionMnist.Split split = FashionMnist.load(FashionMnist.locate(dataDir));
    TensorDataset trainSet = first(split.train(), limit);
    TensorDataset calibSet = first(split.train(), calib);
    TensorDataset testSet = split.test();
    DataLoader test = new DataLoader(testSet, BatchConfig.sequential(1000));
    Tensor batch = testSet.inputs().narrow(0, 0, Math.min(128, testSet.size())).contiguous();
    System.out.printf(Locale.ROOT, "train %d images, %d epochs, calibration %d images, test %d, timing batch %d%n",
        trainSet.size(), epochs, calibSet.size(), testSet.size(), batch.size(0));

    for (String name : new String[] {"mlp", "lenet5"}) {
      Generator.manualSeed(0);
      Module model = name.equals("mlp") ? Models.mlp(784, 256, 128, 10) : Models.lenet5(10);
      DataLoader train = new DataLoader(trainSet, BatchConfig.shuffled(128, 0));
      Trainer.builder().maxEpochs(epochs).build()
          .fit(model, F::crossEntropy, new Adam(model.parameters(), 1e-3), train, null);
      double floatAcc = accuracy(model, test);
      model.eval();
      Module fused = fuse(model);
      double floatMs = medianMs(fused, batch);

      Module prepared = Quantize.prepare(fused, QConfig.ptqDefault());
      try (Grad g = Grad.off()) {
        for (Batch b : new DataLoader(calibSet, BatchConfig.sequential(100))) prepared.call(b.input());
      }
      Module int8 = Quantize.convert(prepared);
      double int8Acc = accuracy(int8, test);
      double int8Ms = medianMs(int8, batch);
      System.out.printf(Locale.ROOT, "model=%s float=%.4f int8=%.4f loss_pt=%.2f float_ms=%.2f int8_ms=%.2f%n", name,
          floatAcc, int8Acc, 100 * (floatAcc - int8Acc), floatMs, int8Ms);
    }
  }

  /**
   * A fused copy: Conv2d/Linear + ReLU pairs become ConvReLU2d/LinearReLU (for LeNet-5, a Sequential of its two fused
   * Sequentials, "features" and "classifier", which is what its forward runs).
   */
  static Module fuse(Module model) {
    if (model instanceof Sequential s) return Fuse.fuse(s);
    return new Sequential(Fuse.fuse((Sequential) model.child("features")),
        Fuse.fuse((Sequential) model.child("classifier")));
  }

  /** Median of 30 timed forwards (after 10 warm-up ones) without the tape, in milliseconds. */
  static double medianMs(Module model, Tensor x) {
    double[] t = new double[30];
    try (Grad g = Grad.off()) {
      for (int i = 0; i < 10; i++) model.call(x);
      for (int i = 0; i < t.length; i++) {
        long t0 = System.nanoTime();
        model.call(x);
        t[i] = (System.nanoTime() - t0) / 1e6;
      }
    }
    Arrays.sort(t);
    return t[t.length / 2];
  }

  private static double accuracy(Module model, DataLoader test) {
    return Trainer.evaluate(model, null, test, List.of(new Accuracy())).get("accuracy");
  }

  private static TensorDataset first(TensorDataset d, int n) {
    int k = Math.min(n, d.size());
    return new TensorDataset(d.inputs().narrow(0, 0, k), d.targets().narrow(0, 0, k));
  }
}
