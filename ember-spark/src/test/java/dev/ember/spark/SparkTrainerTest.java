package dev.ember.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Models;
import dev.ember.optim.SGD;
import dev.ember.tensor.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SparkTrainer} in Spark's local mode ({@code local[2,4]}: two task slots, a task may fail 4 times) on a
 * small synthetic Dataset: the run trains, is bitwise reproducible, survives a failed task by resuming from its
 * checkpoint with the uninterrupted run's bits, and bad columns raise {@link SparkInputException} on the driver.
 */
class SparkTrainerTest {
  static SparkSession spark;

  @BeforeAll
  static void start() {
    spark = SparkTests.session("local[2,4]");
  }

  @AfterAll
  static void stop() {
    if (spark != null) spark.stop();
  }

  /** Three Gaussian blobs in 8 dimensions, {@code n} rows in 2 partitions; labels as doubles (Spark ML's way). */
  static Dataset<Row> blobs(int n) {
    Random rnd = new Random(7);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int c = i % 3;
      float[] x = new float[8];
      for (int j = 0; j < 8; j++) x[j] = (float) (rnd.nextGaussian() * 0.7 + (j % 3 == c ? 1.5 : 0));
      rows.add(RowFactory.create(x, (double) c));
    }
    StructType schema = new StructType()
        .add("features", DataTypes.createArrayType(DataTypes.FloatType, false), false)
        .add("label", DataTypes.DoubleType, false);
    return spark.createDataFrame(rows, schema);
  }

  static SparkTrainer.Builder blobTrainer() {
    return SparkTrainer.builder().worldSize(2).epochs(4).batchSize(16).seed(3)
        .optimizer(p -> new SGD(p, Map.of("lr", 0.05, "momentum", 0.9)));
  }

  static void assertSameWeights(Map<String, Tensor> expected, Map<String, Tensor> actual) {
    assertEquals(expected.keySet(), actual.keySet());
    for (String k : expected.keySet()) {
      assertArrayEquals(expected.get(k).shape(), actual.get(k).shape(), k);
      float[] e = expected.get(k).toFloatArray();
      float[] a = actual.get(k).toFloatArray();
      for (int i = 0; i < e.length; i++) {
        if (Float.floatToRawIntBits(e[i]) != Float.floatToRawIntBits(a[i])) {
          throw new AssertionError(k + "[" + i + "]: " + e[i] + " vs " + a[i] + " (not the same bits)");
        }
      }
    }
  }

  @Test
  void trainsOnTwoRanksAndIsBitwiseReproducible() {
    Dataset<Row> data = blobs(600);                    // 2 partitions, one per rank
    assertEquals(2, data.rdd().getNumPartitions());
    SparkTrainingResult a = blobTrainer().build().fit(spark, SparkData.rows(data, "features", "label"), () -> Models.mlp(8, 16, 3));
    assertEquals(4, a.history().size());
    assertEquals(1, a.stageAttempts());
    assertEquals(-1, a.resumedFromEpoch());
    assertEquals(600, a.history().get(0).samples());
    assertTrue(a.history().get(3).loss() < a.history().get(0).loss(), a.history().toString());
    assertTrue(a.history().get(3).accuracy() > 0.9, a.history().toString());
    // the same rows in 1 partition (shuffled to the 2 ranks) give the same bits: sample i is row i either way
    SparkTrainingResult b = blobTrainer().build().fit(spark, SparkData.rows(data.coalesce(1), "features", "label"),
        () -> Models.mlp(8, 16, 3));
    assertEquals(1, b.stageAttempts());
    assertSameWeights(a.stateDict(), b.stateDict());
    assertEquals(a.history(), b.history());
  }

  @Test
  void aFailedTaskMakesSparkRetryTheStageWhichResumesFromTheCheckpointWithTheSameBits(@TempDir Path dir) throws Exception {
    Dataset<Row> data = blobs(600);
    SparkTrainingResult clean = blobTrainer().checkpointDir(dir.resolve("clean").toString()).build()
        .fit(spark, SparkData.rows(data, "features", "label"), () -> Models.mlp(8, 16, 3));
    assertEquals(1, clean.stageAttempts());
    // rank 1 fails as epoch 2 starts, on the stage's first attempt only; the checkpoint directory is a file:// URI,
    // which goes through Hadoop's FileSystem
    String uri = dir.resolve("faulty").toUri().toString();
    SparkTrainingResult faulty = blobTrainer().checkpointDir(uri).listener(e -> {
      if (e.rank() == 1 && e.epoch() == 2 && e.stageAttempt() == 0) throw new IllegalStateException("injected failure");
    }).build().fit(spark, SparkData.rows(data, "features", "label"), () -> Models.mlp(8, 16, 3));
    assertEquals(2, faulty.stageAttempts());
    assertEquals(1, faulty.resumedFromEpoch());
    assertSameWeights(clean.stateDict(), faulty.stateDict());
    assertEquals(clean.history(), faulty.history());
    // the newest two checkpoints are kept
    try (var files = Files.list(dir.resolve("faulty"))) {
      assertEquals(List.of("epoch-0002.ckpt", "epoch-0003.ckpt"),
          files.map(p -> p.getFileName().toString()).filter(s -> s.endsWith(".ckpt") && !s.startsWith(".")).sorted().toList());
    }
  }
}
