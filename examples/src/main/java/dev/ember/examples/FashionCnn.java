package dev.ember.examples;

import dev.ember.data.BatchConfig;
import dev.ember.data.DataLoader;
import dev.ember.data.FashionMnist;
import dev.ember.data.TensorDataset;
import dev.ember.metrics.Accuracy;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Flatten;
import dev.ember.nn.Linear;
import dev.ember.nn.MaxPool2d;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.nn.io.SafeTensors;
import dev.ember.optim.Adam;
import dev.ember.tensor.Generator;
import dev.ember.train.History;
import dev.ember.train.Trainer;
import dev.ember.train.callbacks.ProgressBar;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * A small CNN on Fashion-MNIST, trained by {@link Trainer}: epochs, validation on the test set after
 * each one, accuracy, a progress bar, then the weights saved as safetensors (which
 * {@link ImageInference} reads back, and PyTorch's {@code safetensors.torch.load_file} too).
 *
 * <p>The data is found as {@code ./ember train} finds it ({@link FashionMnist#locate}): DATA_DIR if
 * given, {@code $EMBER_DATA}, {@code ~/.cache/ember/fashion-mnist}, Debian's
 * {@code dataset-fashion-mnist} package, or else downloaded into the cache.
 *
 * <p>Run from the repository root (every argument optional; defaults: 2 epochs, 10000 training
 * images, {@code runs/fashion-cnn.safetensors}, the data searched as above):
 * <pre>
 * scripts/mvn -q -pl examples -am test-compile exec:exec -Dexample=FashionCnn -Dargs="EPOCHS LIMIT WEIGHTS DATA_DIR"
 * </pre>
 * The last lines are {@code test_accuracy=0.xxxx} and where the weights went.
 */
public final class FashionCnn {
  private FashionCnn() {}

  /** The network: two 3x3 convolution blocks (16 then 32 channels), each halving the image, then a linear classifier. */
  public static Sequential cnn() {
    return new Sequential(
        new Conv2d(1, 16, 3, 1, 1), new ReLU(), new MaxPool2d(2),    // [N, 16, 14, 14]
        new Conv2d(16, 32, 3, 1, 1), new ReLU(), new MaxPool2d(2),   // [N, 32, 7, 7]
        new Flatten(), new Linear(32 * 7 * 7, 10));
  }

  public static void main(String[] args) throws IOException {
    int epochs = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    int limit = args.length > 1 ? Integer.parseInt(args[1]) : 10_000;
    Path weights = Path.of(args.length > 2 ? args[2] : "runs/fashion-cnn.safetensors");
    Path dataDir = args.length > 3 ? Path.of(args[3]) : null;

    // Images F32 [N, 1, 28, 28] in [0, 1], labels I64 [N]; keep the first `limit` of each split.
    FashionMnist.Split split = FashionMnist.load(FashionMnist.locate(dataDir));
    TensorDataset trainSet = first(split.train(), limit);
    TensorDataset testSet = first(split.test(), limit);
    System.out.printf(Locale.ROOT, "train %d images, test %d%n", trainSet.size(), testSet.size());

    DataLoader train = new DataLoader(trainSet, BatchConfig.shuffled(64, 0));
    DataLoader test = new DataLoader(testSet, BatchConfig.sequential(500));

    Generator.manualSeed(0);
    Sequential model = cnn();
    Adam opt = new Adam(model.parameters(), 1e-3);
    History history = Trainer.builder()
        .maxEpochs(epochs)
        .metrics(new Accuracy())                // logged as accuracy and val_accuracy
        .callbacks(ProgressBar.auto())
        .build()
        .fit(model, F::crossEntropy, opt, train, test);

    System.out.printf(Locale.ROOT, "test_accuracy=%.4f%n", history.last("val_accuracy"));
    if (weights.getParent() != null) Files.createDirectories(weights.getParent());
    SafeTensors.save(model.stateDict(), weights);
    System.out.println("weights: " + weights);
  }

  private static TensorDataset first(TensorDataset d, int n) {
    int k = Math.min(n, d.size());
    return new TensorDataset(d.inputs().narrow(0, 0, k), d.targets().narrow(0, 0, k));
  }
}
