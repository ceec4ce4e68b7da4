package dev.ember.spark;

import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.autograd.Grad;
import dev.ember.data.FashionMnist;
import dev.ember.data.TensorDataset;
import dev.ember.nn.Module;
import dev.ember.nn.Models;
import dev.ember.optim.Adam;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.SparkSession;

/**
 * Fashion-MNIST for the Spark tests: Debian's copy (package dataset-fashion-mnist, which CI installs), read once
 * per JVM; its training images as a Spark Dataset of rows (features: 784 floats in [0, 1], label: int), the MLP and
 * the settings that reach 88% test accuracy, and the test accuracy of trained weights.
 */
final class FashionRows {
  private static FashionMnist.Split split;

  private FashionRows() {}

  /** The data; fails (never skips) with what to install when it is absent. */
  static synchronized FashionMnist.Split split() {
    if (split != null) return split;
    Path dir = FashionMnist.DEBIAN_DIR;
    String problem = FashionMnist.problem(dir);
    if (problem != null) {
      fail("Fashion-MNIST is needed by this test but " + dir + " is unusable (" + problem
          + "); install it with: apt-get install dataset-fashion-mnist");
    }
    try {
      split = FashionMnist.load(dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return split;
  }

  /** One image as a Java bean, for Spark's bean encoder (which writes the float array without boxing). */
  public static final class Image implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private float[] features;
    private int label;

    public Image() {}

    Image(float[] features, int label) {
      this.features = features;
      this.label = label;
    }

    public float[] getFeatures() {
      return features;
    }

    public void setFeatures(float[] features) {
      this.features = features;
    }

    public int getLabel() {
      return label;
    }

    public void setLabel(int label) {
      this.label = label;
    }
  }

  /**
   * The training images as rows {@code (features array<float> of 784, label int)}, in their file order, in Spark's
   * default parallelism of partitions, cached (built once on the driver; later passes read the cache instead of
   * shipping 188 MB of rows in their tasks).
   */
  static Dataset<Row> trainRows(SparkSession spark) {
    TensorDataset train = split().train();
    float[] x = train.inputs().toFloatArray();
    long[] y = train.targets().toLongArray();
    int n = y.length;
    List<Image> rows = new ArrayList<>(n);
    for (int i = 0; i < n; i++) rows.add(new Image(Arrays.copyOfRange(x, i * 784, (i + 1) * 784), (int) y[i]));
    Dataset<Row> df = spark.createDataset(rows, Encoders.bean(Image.class)).toDF().select("features", "label");
    df = df.cache();
    df.count();
    return df;
  }

  static Module mlp() {
    return Models.mlp(784, 256, 10);
  }

  /**
   * 2 ranks x 32 = a global batch of 64, Adam, 6 epochs at lr 1e-3 (4), 3e-4, 1e-4: 0.8858 test accuracy
   * (PyTorch's twin, {@code ember-spark/bench/fashion_schedule.py}: 0.876 after the 4 epochs at 1e-3, 0.8864 after
   * the two decayed ones; without the decay Adam needs about 8 epochs to 88%).
   */
  static SparkTrainer.Builder trainer() {
    return SparkTrainer.builder().worldSize(2).epochs(6).batchSize(32).seed(42)
        .optimizer(p -> new Adam(p, 1e-3))
        .learningRates(epoch -> epoch < 4 ? 1e-3 : epoch == 4 ? 3e-4 : 1e-4);
  }

  /** The accuracy on the 10,000 test images of an MLP holding {@code weights}. */
  static double testAccuracy(SparkTrainingResult result) {
    Module m = result.loadInto(mlp());
    m.eval();
    TensorDataset test = split().test();
    try (var ignored = Grad.off()) {
      Tensor pred = m.forward(test.inputs()).argmax(1, false);
      return pred.eq(test.targets()).sum().item() / test.size();
    }
  }
}
