package dev.ember.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.TensorDataset;
import dev.ember.nn.Models;
import dev.ember.optim.SGD;
import dev.ember.tensor.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataType;
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

  /** Reads the CSV that {@link #filesThatEveryWorkerReadsTrainAsTheSameRowsDo} writes: label, then 8 features. */
  static TensorDataset readCsv(String path) throws java.io.IOException {
    List<String> lines = Files.readAllLines(Path.of(path));
    float[] x = new float[lines.size() * 8];
    long[] y = new long[lines.size()];
    for (int i = 0; i < lines.size(); i++) {
      String[] f = lines.get(i).split(",");
      y[i] = Long.parseLong(f[0]);
      for (int j = 0; j < 8; j++) x[i * 8 + j] = Float.parseFloat(f[j + 1]);
    }
    return new TensorDataset(Tensor.of(x, lines.size(), 8), Tensor.of(y, lines.size()));
  }

  @Test
  void filesThatEveryWorkerReadsTrainAsTheSameRowsDo(@TempDir Path dir) throws Exception {
    Dataset<Row> data = blobs(300);
    StringBuilder csv = new StringBuilder();
    for (Row r : data.collectAsList()) {
      csv.append((int) r.getDouble(1));
      for (Object v : r.getList(0)) csv.append(',').append(v);   // Float.toString reads back to the same float
      csv.append('\n');
    }
    Path file = dir.resolve("blobs.csv");
    Files.writeString(file, csv);
    SparkTrainingResult fromRows = blobTrainer().build().fit(spark, SparkData.rows(data, "features", "label"),
        () -> Models.mlp(8, 16, 3));
    SparkTrainingResult fromFiles = blobTrainer().build().fit(new JavaSparkContext(spark.sparkContext()),
        SparkData.files(file.toString(), SparkTrainerTest::readCsv), () -> Models.mlp(8, 16, 3));
    assertSameWeights(fromRows.stateDict(), fromFiles.stateDict());
    assertEquals(fromRows.history(), fromFiles.history());
    SparkTrainingException missing = assertThrows(SparkTrainingException.class, () -> blobTrainer().build()
        .fit(spark, SparkData.files(dir.resolve("absent.csv").toString(), SparkTrainerTest::readCsv), () -> Models.mlp(8, 16, 3)));
    assertTrue(missing.getMessage().contains("absent.csv"), missing.getMessage());
  }

  @Test
  void badSettingsAreRejected() {
    assertEquals("SparkTrainer: worldSize must be >= 0 (0: Spark's default parallelism), got -1",
        assertThrows(IllegalArgumentException.class, () -> SparkTrainer.builder().worldSize(-1)).getMessage());
    assertEquals("SparkTrainer: epochs must be >= 1, got 0",
        assertThrows(IllegalArgumentException.class, () -> SparkTrainer.builder().epochs(0)).getMessage());
    assertEquals("SparkTrainer: batchSize must be >= 1, got 0",
        assertThrows(IllegalArgumentException.class, () -> SparkTrainer.builder().batchSize(0)).getMessage());
    assertEquals("SparkTrainer: timeout must be positive, got PT0S",
        assertThrows(IllegalArgumentException.class, () -> SparkTrainer.builder().timeout(java.time.Duration.ZERO))
            .getMessage());
    assertEquals("SparkTrainer: worldSize 3 needs 3 task slots at once but the local master 'local[2,4]' has 2; hint:"
        + " local[3]", assertThrows(IllegalArgumentException.class, () -> blobTrainer().worldSize(3).build()
            .fit(spark, SparkData.rows(blobs(30), "features", "label"), () -> Models.mlp(8, 3))).getMessage());
    SparkTrainingException lr = assertThrows(SparkTrainingException.class, () -> blobTrainer().epochs(1)
        .learningRates(epoch -> Double.NaN).build().fit(spark, SparkData.rows(blobs(30), "features", "label"),
            () -> Models.mlp(8, 3)));
    assertTrue(lr.getMessage().contains("SparkTrainer: the learning rate of epoch 0 is NaN, expected a finite value >= 0"),
        lr.getMessage());
  }

  // ------------------------------------------------------------------ bad input

  static StructType schema(DataType features, DataType label) {
    return new StructType().add("features", features).add("label", label);
  }

  static Dataset<Row> frame(StructType schema, Object[]... rows) {
    List<Row> list = new ArrayList<>();
    for (Object[] r : rows) list.add(RowFactory.create(r));
    return spark.createDataFrame(list, schema);
  }

  static SparkInputException rejected(Dataset<Row> data, int[] shape, SparkTrainer.ModelFactory model) {
    return assertThrows(SparkInputException.class,
        () -> blobTrainer().build().fit(spark, SparkData.rows(data, "features", "label", shape), model));
  }

  static final DataType FLOATS = DataTypes.createArrayType(DataTypes.FloatType);

  @Test
  void aFeaturesColumnOfTheWrongTypeIsNamed() {
    Dataset<Row> d = frame(schema(DataTypes.StringType, DataTypes.IntegerType), new Object[] {"1,2", 0});
    SparkInputException e = rejected(d, new int[0], () -> Models.mlp(2, 3));
    assertEquals("features", e.column());
    assertEquals("SparkTrainer: features column 'features' is string, expected an array of numbers (array<float>,"
        + " array<double> or an integer array)", e.getMessage());
  }

  @Test
  void arraysOfTheWrongLengthAreNamedWithTheShapes() {
    Dataset<Row> d = frame(schema(FLOATS, DataTypes.IntegerType), new Object[] {new float[7], 0},
        new Object[] {new float[8], 1});
    SparkInputException e = rejected(d, new int[] {2, 4}, () -> Models.mlp(8, 3));
    assertEquals("features", e.column());
    assertEquals("SparkTrainer: features column 'features' holds arrays of 7 to 8 values, expected 8 per row (feature shape"
        + " [2, 4])", e.getMessage());
    Dataset<Row> all7 = frame(schema(FLOATS, DataTypes.IntegerType), new Object[] {new float[7], 0});
    assertEquals("SparkTrainer: features column 'features' holds arrays of 7 values, expected 8 per row (feature shape"
        + " [8])", rejected(all7, new int[] {8}, () -> Models.mlp(8, 3)).getMessage());
  }

  @Test
  void aShapeTheModelCannotTakeIsNamed() {
    Dataset<Row> d = frame(schema(FLOATS, DataTypes.IntegerType), new Object[] {new float[8], 0});
    SparkInputException e = rejected(d, new int[0], () -> Models.mlp(9, 3));
    assertEquals("features", e.column());
    assertTrue(e.getMessage().startsWith("SparkTrainer: the model rejects a sample of shape [8] from column 'features'"
        + " (input [1, 8]): "), e.getMessage());
  }

  @Test
  void missingColumnsNullsAndLabelsThatAreNoClassesAreNamed() {
    Dataset<Row> d = frame(schema(FLOATS, DataTypes.DoubleType), new Object[] {new float[2], 0.0});
    SparkInputException missing = assertThrows(SparkInputException.class, () -> blobTrainer().build()
        .fit(spark, SparkData.rows(d, "pixels", "label"), () -> Models.mlp(2, 3)));
    assertEquals("pixels", missing.column());
    assertEquals("SparkTrainer: the Dataset has no column 'pixels'; its columns: [features, label]", missing.getMessage());

    Dataset<Row> text = frame(schema(FLOATS, DataTypes.StringType), new Object[] {new float[2], "cat"});
    SparkInputException label = rejected(text, new int[0], () -> Models.mlp(2, 3));
    assertEquals("label", label.column());
    assertEquals("SparkTrainer: label column 'label' is string, expected class indices (an integer type, or float/double"
        + " holding whole numbers)", label.getMessage());

    Dataset<Row> half = frame(schema(FLOATS, DataTypes.DoubleType), new Object[] {new float[2], 0.0},
        new Object[] {new float[2], 1.5});
    assertEquals("SparkTrainer: label column 'label' holds 1 values that are not class indices (negative, fractional or"
        + " NaN), e.g. 1.5", rejected(half, new int[0], () -> Models.mlp(2, 3)).getMessage());

    Dataset<Row> big = frame(schema(FLOATS, DataTypes.DoubleType), new Object[] {new float[2], 3.0});
    assertEquals("SparkTrainer: label column 'label' holds class 3 but the model has 3 outputs (classes 0..2)",
        rejected(big, new int[0], () -> Models.mlp(2, 3)).getMessage());

    Dataset<Row> nulls = frame(schema(FLOATS, DataTypes.DoubleType), new Object[] {null, 0.0},
        new Object[] {new float[2], 1.0});
    assertEquals("SparkTrainer: features column 'features' is null in 1 of 2 rows",
        rejected(nulls, new int[0], () -> Models.mlp(2, 3)).getMessage());

    // a null element is found as the tasks read the rows (a scan on the driver would cost a pass over every value)
    Dataset<Row> holes = frame(schema(FLOATS, DataTypes.DoubleType), new Object[] {new float[2], 0.0},
        new Object[] {new Float[] {1f, null}, 1.0}).coalesce(1);
    SparkInputException hole = rejected(holes, new int[0], () -> Models.mlp(2, 3));
    assertEquals("features", hole.column());
    assertEquals("SparkTrainer: features column 'features' holds a null element (at 1) in row 1 of partition 0",
        hole.getMessage());
  }
}
