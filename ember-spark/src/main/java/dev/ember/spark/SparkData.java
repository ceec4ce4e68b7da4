package dev.ember.spark;

import dev.ember.data.TensorDataset;
import java.io.IOException;
import java.io.Serializable;
import java.util.Arrays;
import java.util.Objects;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * Where the training samples of a {@link SparkTrainer} run come from: a Spark {@code Dataset<Row>}
 * ({@link #rows}) or a path that every worker reads itself ({@link #files}). Either way every rank ends up
 * holding the whole training set in memory, indexed the same way, and trains on its
 * {@link dev.ember.distributed.DistributedSampler} shard of each epoch, as PyTorch's
 * {@code DistributedDataParallel} does with a data set every rank can open.
 */
public sealed interface SparkData permits SparkData.Rows, SparkData.Files {

  /**
   * Samples from the rows of a Spark {@code Dataset}: {@code featuresColumn} an array of numbers (float, double
   * or any integer type; cast to float32) of {@code product(featureShape)} values per row, reshaped to
   * {@code featureShape}; {@code labelColumn} a class index (any integer type, or float/double holding whole
   * numbers, as Spark ML's labels). Sample {@code i} is the {@code i}-th row in the Dataset's own order (the
   * order of its partitions, then of the rows in each). The rows travel to the workers through one shuffle
   * (row {@code i} to the task of rank {@code i % worldSize}); the ranks then exchange their parts over Ember's
   * process group, so that each holds all rows.
   *
   * @param featureShape the shape of one sample; empty: a vector of the arrays' length (which must be the same
   *     in every row)
   */
  static Rows rows(Dataset<Row> dataset, String featuresColumn, String labelColumn, int... featureShape) {
    return new Rows(dataset, featuresColumn, labelColumn, featureShape);
  }

  /**
   * Samples that every worker reads from {@code path} with {@code reader} (a local directory present on every
   * machine, or a shared file system), for example {@code SparkData.files(dir, p -> FashionMnist.load(Path.of(p))
   * .train())}. The readers must return the same samples on every rank.
   */
  static Files files(String path, Reader reader) {
    return new Files(path, reader);
  }

  /** Reads a training set on a worker; it runs in the Spark tasks, so it must be serializable. */
  @FunctionalInterface
  interface Reader extends Serializable {
    /** The samples: inputs {@code [N, ...]} (float32) and class indices {@code [N]}. */
    TensorDataset read(String path) throws IOException;
  }

  /** The samples of a {@code Dataset<Row>}; see {@link SparkData#rows}. */
  record Rows(Dataset<Row> dataset, String featuresColumn, String labelColumn, int[] featureShape) implements SparkData {
    /** Checks that nothing is null and the shape has no dimension below 1; the columns are checked by the trainer. */
    public Rows {
      Objects.requireNonNull(dataset, "SparkData.rows: dataset is null");
      Objects.requireNonNull(featuresColumn, "SparkData.rows: featuresColumn is null");
      Objects.requireNonNull(labelColumn, "SparkData.rows: labelColumn is null");
      featureShape = featureShape == null ? new int[0] : featureShape.clone();
      for (int d : featureShape) {
        if (d < 1) {
          throw new IllegalArgumentException("SparkData.rows: feature shape " + Arrays.toString(featureShape)
              + " has a dimension below 1");
        }
      }
    }

    @Override
    public int[] featureShape() {
      return featureShape.clone();
    }
  }

  /** The samples each worker reads from a path; see {@link SparkData#files}. */
  record Files(String path, Reader reader) implements SparkData {
    /** Checks that nothing is null. */
    public Files {
      Objects.requireNonNull(path, "SparkData.files: path is null");
      Objects.requireNonNull(reader, "SparkData.files: reader is null");
    }
  }
}
