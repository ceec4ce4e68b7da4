package dev.ember.examples;

import dev.ember.autograd.Grad;
import dev.ember.data.Batch;
import dev.ember.data.BatchConfig;
import dev.ember.data.BatchIterator;
import dev.ember.data.Csv;
import dev.ember.data.DataLoader;
import dev.ember.data.TensorDataset;
import dev.ember.nn.Linear;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adam;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Random;

/**
 * An MLP classifier on a CSV file, trained with an explicit loop (the few lines {@code Trainer}
 * runs for you in {@link FashionCnn}).
 *
 * <p>The file has a header line, numeric feature columns and the class index (0, 1, ...) in the last
 * column. Without a file the example writes a two-moons set (1000 points, two classes) to a temporary
 * file and trains on that. 80% of the rows train, 20% test.
 *
 * <p>Run from the repository root (FILE and EPOCHS are optional; defaults: two moons, 30 epochs):
 * <pre>
 * scripts/mvn -q -pl examples -am test-compile exec:exec -Dexample=CsvMlp -Dargs="FILE.csv EPOCHS"
 * </pre>
 * The last line printed is {@code test_accuracy=0.xxxx}.
 */
public final class CsvMlp {
  private CsvMlp() {}

  public static void main(String[] args) throws IOException {
    Path file = args.length > 0 ? Path.of(args[0]) : writeTwoMoons(tempFile("two-moons", ".csv"), 1000, 0);
    int epochs = args.length > 1 ? Integer.parseInt(args[1]) : 30;

    // Read: inputs F32 [rows, features], targets I64 [rows].
    TensorDataset all = Csv.read(file, Csv.Options.defaults());
    int rows = all.size();
    int features = all.inputs().size(1);
    int classes = (int) all.targets().max().item() + 1;
    System.out.printf(Locale.ROOT, "%s: %d rows, %d features, %d classes%n", file, rows, features, classes);

    // Shuffle the rows once and split them 80/20.
    Generator gen = new Generator(0);
    Tensor perm = Tensor.randperm(gen, rows);
    int nTrain = rows * 4 / 5;
    Tensor trainIdx = perm.narrow(0, 0, nTrain);
    Tensor testIdx = perm.narrow(0, nTrain, rows - nTrain);
    Tensor xTrain = all.inputs().indexSelect(0, trainIdx);
    Tensor xTest = all.inputs().indexSelect(0, testIdx);
    Tensor yTrain = all.targets().indexSelect(0, trainIdx);
    Tensor yTest = all.targets().indexSelect(0, testIdx);

    // Standardize every feature with the training rows' mean and standard deviation.
    Tensor mean = xTrain.mean(0, true);
    Tensor std = xTrain.sub(mean).square().mean(0, true).sqrt().add(1e-6);
    xTrain = xTrain.sub(mean).div(std);
    xTest = xTest.sub(mean).div(std);

    Generator.manualSeed(0); // the layers' initial weights come from the global generator
    Sequential model = new Sequential(new Linear(features, 64), new ReLU(), new Linear(64, 64), new ReLU(),
        new Linear(64, classes));
    System.out.println(model);
    Adam opt = new Adam(model.parameters(), 1e-2);
    DataLoader train = new DataLoader(new TensorDataset(xTrain, yTrain), BatchConfig.shuffled(64, 0));

    for (int epoch = 0; epoch < epochs; epoch++) {
      model.train();
      double total = 0;
      int batches = 0;
      try (BatchIterator it = train.iterate(epoch, 0)) {
        while (it.hasNext()) {
          Batch b = it.next();
          // The step's temporary arrays go back to a pool when the scope closes (README: Memory).
          try (MemoryScope step = MemoryScope.open()) {
            opt.zeroGrad();
            Tensor loss = F.crossEntropy(model.call(b.input()), b.target());
            loss.backward();
            opt.step();
            total += loss.item();
            batches++;
          }
        }
      }
      if (epoch == 0 || (epoch + 1) % 10 == 0 || epoch + 1 == epochs) {
        System.out.printf(Locale.ROOT, "epoch %d/%d loss=%.4f%n", epoch + 1, epochs, total / batches);
      }
    }

    System.out.printf(Locale.ROOT, "test_accuracy=%.4f%n", accuracy(model, xTest, yTest));
  }

  /** The share of rows whose largest logit is their label, in eval mode and without the autograd tape. */
  static double accuracy(Sequential model, Tensor x, Tensor y) {
    model.eval();
    try (var ignored = Grad.off()) {
      return model.call(x).argmax(1, false).eq(y).to(DType.F32).mean().item();
    }
  }

  /** A new empty file in the temporary folder, deleted when the JVM exits. */
  static Path tempFile(String prefix, String suffix) throws IOException {
    Path file = Files.createTempFile(prefix, suffix);
    file.toFile().deleteOnExit();
    return file;
  }

  /**
   * Writes {@code n} points of two interleaved half circles with Gaussian noise (0.1) as CSV:
   * header {@code x1,x2,label}, label 0 for the upper moon and 1 for the lower one.
   */
  static Path writeTwoMoons(Path file, int n, long seed) throws IOException {
    Random rnd = new Random(seed);
    try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(file))) {
      out.println("x1,x2,label");
      for (int i = 0; i < n; i++) {
        int label = i % 2;
        double t = Math.PI * rnd.nextDouble();
        double x = label == 0 ? Math.cos(t) : 1 - Math.cos(t);
        double y = label == 0 ? Math.sin(t) : 0.5 - Math.sin(t);
        out.printf(Locale.ROOT, "%.5f,%.5f,%d%n", x + 0.1 * rnd.nextGaussian(), y + 0.1 * rnd.nextGaussian(), label);
      }
    }
    return file;
  }
}
