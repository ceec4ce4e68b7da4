package dev.ember.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.first;
import static org.apache.spark.sql.functions.isnan;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.min;
import static org.apache.spark.sql.functions.round;
import static org.apache.spark.sql.functions.size;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.when;

import dev.ember.autograd.Grad;
import dev.ember.nn.Module;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.train.Checkpoint;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.Partitioner;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StructField;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Data-parallel training of an Ember model on Apache Spark, as XGBoost4J-Spark or PySpark's
 * {@code TorchDistributor} do it: {@link #fit} runs <b>one barrier stage</b> of {@code worldSize} tasks
 * ({@code rdd.barrier().mapPartitions}), which Spark starts together. Each task is one rank: it publishes its
 * address with {@code BarrierTaskContext.allGather}, joins an Ember {@link dev.ember.distributed.ProcessGroup} at
 * rank 0's, builds the model with the factory (seeded with {@link Builder#seed}), wraps it in
 * {@link dev.ember.distributed.DistributedDataParallel} and trains it with cross-entropy on its
 * {@link dev.ember.distributed.DistributedSampler} shard of each epoch, at {@link Builder#batchSize} samples per rank
 * (a global batch of {@code worldSize * batchSize}). Gradients move between the tasks over the process group's TCP
 * ring, never through Spark's shuffle or {@code treeAggregate}. Rank 0 returns the trained state dict and the
 * per-epoch history to the driver.
 *
 * <p><b>Checkpoints and retries.</b> With a {@link Builder#checkpointDir} (a path every worker sees, or a Hadoop
 * {@code FileSystem} URI such as {@code hdfs://...}), rank 0 writes a {@link Checkpoint} (weights, optimizer state,
 * history) atomically after every epoch, and no rank starts the next epoch before it is written. A task that dies
 * (its executor killed, an exception) fails the barrier stage; Spark then reruns the whole stage (up to
 * {@code spark.task.maxFailures} failures of a task, {@code spark.stage.maxConsecutiveAttempts} attempts of the stage),
 * and every rank of the new attempt resumes from the newest checkpoint. The checkpoints are exact and the training
 * order depends only on the seed, so the final weights equal those of a run without failures, bit for bit. Without a
 * checkpoint directory a retried stage starts from epoch 0 (with the same result).
 *
 * <p><b>Requirements.</b> The barrier stage needs {@code worldSize} task slots at once. Spark 4 on JDK 25 needs
 * {@code --add-opens} for {@code java.base}'s {@code java.lang}, {@code java.lang.invoke}, {@code java.lang.reflect},
 * {@code java.io}, {@code java.net}, {@code java.nio}, {@code java.util}, {@code java.util.concurrent},
 * {@code java.util.concurrent.atomic}, {@code sun.nio.ch}, {@code sun.nio.cs}, {@code sun.security.action} and
 * {@code sun.util.calendar}, and Ember needs {@code --add-modules jdk.incubator.vector}, in the driver's and the
 * executors' JVM options ({@code spark.executor.extraJavaOptions}). The model factory, the optimizer factory and the
 * listener run in the tasks: they must be serializable (a lambda assigned to these interfaces is).
 *
 * <pre>{@code
 * SparkTrainingResult r = SparkTrainer.builder()
 *     .worldSize(2).epochs(5).batchSize(64).seed(42)
 *     .optimizer(params -> new SGD(params, Map.of("lr", 0.05, "momentum", 0.9)))
 *     .checkpointDir("hdfs:///user/me/run1")
 *     .build()
 *     .fit(spark, SparkData.rows(df, "features", "label", 1, 28, 28), () -> Models.mlp(784, 256, 10));
 * Module trained = r.loadInto(Models.mlp(784, 256, 10));
 * }</pre>
 */
public final class SparkTrainer {
  /** Builds the model, in every task (and once on the driver, to check the data's shape against it). */
  @FunctionalInterface
  public interface ModelFactory extends Serializable {
    /** A new model; its initial weights do not matter on ranks other than 0 (DDP copies rank 0's). */
    Module create();
  }

  /** Builds the optimizer over the model's parameters, in every task. */
  @FunctionalInterface
  public interface OptimizerFactory extends Serializable {
    /** An optimizer over {@code parameters} (the model's, in registration order). */
    Optimizer create(List<Tensor> parameters);
  }

  /**
   * The learning rate of each epoch (step decay, warm-up, ...), set on every parameter group as the epoch starts; a
   * function of the epoch alone, so a resumed run follows it exactly.
   */
  @FunctionalInterface
  public interface LearningRates extends Serializable {
    /** The learning rate of epoch {@code epoch} (0-based). */
    double at(int epoch);
  }

  /** Called in every task before each epoch it trains (logging, monitoring); an exception it throws fails the task. */
  @FunctionalInterface
  public interface EpochListener extends Serializable {
    /** Epoch {@code e.epoch()} is about to start on rank {@code e.rank()}. */
    void epochStarting(TaskEpoch e) throws Exception;
  }

  /** Where a task stands: its rank, the world size, the epoch about to start and the barrier stage's attempt (0 first). */
  public record TaskEpoch(int rank, int worldSize, int epoch, int stageAttempt) implements Serializable {}

  private final int worldSize;
  private final int epochs;
  private final int batchSize;
  private final long seed;
  private final boolean shuffle;
  private final Duration timeout;
  private final String checkpointDir;
  private final OptimizerFactory optimizer;
  private final EpochListener listener;
  private final LearningRates learningRates;

  private SparkTrainer(Builder b) {
    this.worldSize = b.worldSize;
    this.epochs = b.epochs;
    this.batchSize = b.batchSize;
    this.seed = b.seed;
    this.shuffle = b.shuffle;
    this.timeout = b.timeout;
    this.checkpointDir = b.checkpointDir;
    this.optimizer = b.optimizer;
    this.listener = b.listener;
    this.learningRates = b.learningRates;
  }

  /** A builder with the defaults: world size = Spark's default parallelism, 1 epoch, batch 64, SGD lr 0.01, seed 0. */
  public static Builder builder() {
    return new Builder();
  }

  /** Settings of a {@link SparkTrainer}. */
  public static final class Builder {
    private int worldSize;
    private int epochs = 1;
    private int batchSize = 64;
    private long seed;
    private boolean shuffle = true;
    private Duration timeout = dev.ember.distributed.ProcessGroup.DEFAULT_TIMEOUT;
    private String checkpointDir;
    private OptimizerFactory optimizer = params -> new SGD(params, 0.01);
    private EpochListener listener;
    private LearningRates learningRates;

    private Builder() {}

    /** The number of tasks (ranks); 0 (the default): Spark's {@code defaultParallelism}. */
    public Builder worldSize(int n) {
      if (n < 0) throw new IllegalArgumentException("SparkTrainer: worldSize must be >= 0 (0: Spark's default parallelism), got " + n);
      this.worldSize = n;
      return this;
    }

    /** The number of epochs (passes over the training set). */
    public Builder epochs(int n) {
      if (n < 1) throw new IllegalArgumentException("SparkTrainer: epochs must be >= 1, got " + n);
      this.epochs = n;
      return this;
    }

    /** Samples per rank and step: the global batch is {@code worldSize} times this. */
    public Builder batchSize(int n) {
      if (n < 1) throw new IllegalArgumentException("SparkTrainer: batchSize must be >= 1, got " + n);
      this.batchSize = n;
      return this;
    }

    /** Seeds the model's initialisation (the global generator, before the factory runs) and the epochs' shuffles. */
    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    /** Whether each epoch visits the samples in a new random order (default true). */
    public Builder shuffle(boolean shuffle) {
      this.shuffle = shuffle;
      return this;
    }

    /** How long a collective may wait for a slow rank before the task fails (default 5 minutes). */
    public Builder timeout(Duration timeout) {
      Objects.requireNonNull(timeout, "SparkTrainer: timeout is null");
      if (timeout.isNegative() || timeout.isZero()) throw new IllegalArgumentException("SparkTrainer: timeout must be positive, got " + timeout);
      this.timeout = timeout;
      return this;
    }

    /**
     * Where rank 0 writes a checkpoint after every epoch and where a retried stage resumes from: a directory every
     * worker sees, or a Hadoop {@code FileSystem} URI ({@code hdfs://}, {@code s3a://}, {@code file://}); null (the
     * default): none. A directory that already holds checkpoints (of an earlier run of the same model and settings)
     * makes the run continue after the newest of them: use a fresh directory for a fresh run.
     */
    public Builder checkpointDir(String dir) {
      if (dir != null && dir.isBlank()) throw new IllegalArgumentException("SparkTrainer: checkpointDir is blank");
      this.checkpointDir = dir;
      return this;
    }

    /** The optimizer (default SGD with lr 0.01). */
    public Builder optimizer(OptimizerFactory factory) {
      this.optimizer = Objects.requireNonNull(factory, "SparkTrainer: optimizer factory is null");
      return this;
    }

    /** Sets the learning rate at the start of each epoch (default none: the optimizer's own stays). */
    public Builder learningRates(LearningRates schedule) {
      this.learningRates = schedule;
      return this;
    }

    /** A listener called in every task before each epoch (default none). */
    public Builder listener(EpochListener listener) {
      this.listener = listener;
      return this;
    }

    public SparkTrainer build() {
      return new SparkTrainer(this);
    }
  }

  /** Trains on {@code spark}'s cluster; see the class comment. */
  public SparkTrainingResult fit(SparkSession spark, SparkData data, ModelFactory model) {
    Objects.requireNonNull(spark, "SparkTrainer.fit: spark is null");
    return fit(spark.sparkContext(), data, model);
  }

  /** Trains on {@code sc}'s cluster; see the class comment. */
  public SparkTrainingResult fit(JavaSparkContext sc, SparkData data, ModelFactory model) {
    Objects.requireNonNull(sc, "SparkTrainer.fit: sc is null");
    return fit(sc.sc(), data, model);
  }

  private SparkTrainingResult fit(SparkContext sc, SparkData data, ModelFactory model) {
    Objects.requireNonNull(data, "SparkTrainer.fit: data is null");
    Objects.requireNonNull(model, "SparkTrainer.fit: model factory is null");
    int world = worldSize > 0 ? worldSize : sc.defaultParallelism();
    if (sc.isLocal() && world > sc.defaultParallelism()) {    // Spark would retry its slot check for ten minutes
      throw new IllegalArgumentException("SparkTrainer: worldSize " + world + " needs " + world + " task slots at once but"
          + " the local master '" + sc.master() + "' has " + sc.defaultParallelism() + "; hint: local[" + world + "]");
    }
    CheckpointStore store = null;
    if (checkpointDir != null) {
      Map<String, String> hadoop = null;
      if (CheckpointStore.isUri(checkpointDir)) {
        hadoop = new HashMap<>();
        for (Map.Entry<String, String> e : sc.hadoopConfiguration()) hadoop.put(e.getKey(), e.getValue());
      }
      store = new CheckpointStore(checkpointDir, hadoop);
    }
    TrainTask.Plan plan = new TrainTask.Plan(world, epochs, batchSize, seed, shuffle, timeout, store, model, optimizer, listener,
        learningRates);
    RDD<?> input;
    TrainTask.Source source;
    switch (data) {
      case SparkData.Rows rows -> {
        Checked c = check(rows, model);
        JavaRDD<TrainTask.Example> ex = examples(rows);
        source = new TrainTask.Gather(c.count(), ex.getNumPartitions(), c.featureShape());
        input = (ex.getNumPartitions() == world ? ex : spread(ex, world)).rdd();
      }
      case SparkData.Files files -> {
        source = new TrainTask.Read(files.path(), files.reader());
        List<Integer> ranks = new ArrayList<>();
        for (int r = 0; r < world; r++) ranks.add(r);
        input = new JavaSparkContext(sc).parallelize(ranks, world).rdd();
      }
    }
    ClassTag<TrainTask.Result> tag = ClassTag$.MODULE$.apply(TrainTask.Result.class);
    List<TrainTask.Result> results;
    String description = sc.getLocalProperty("spark.job.description");
    sc.setJobDescription("Ember SparkTrainer: " + world + " ranks, " + epochs + " epochs");
    try {
      @SuppressWarnings({"unchecked", "rawtypes"})
      RDD<TrainTask.Result> out = input.barrier().mapPartitions(new TrainTask(plan, source), false, tag);
      // Spark retries a failed barrier stage only when it is a shuffle map stage (a failed barrier result stage
      // aborts the job): the results (a few weights, not gradients) go through one shuffle to the driver.
      results = out.toJavaRDD().repartition(1).collect();
    } catch (Exception e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t instanceof SparkInputException bad) throw new SparkInputException(bad.column(), bad.getMessage());
      }
      throw new SparkTrainingException("SparkTrainer: training on " + world + " ranks failed: " + e.getMessage(), e);
    } finally {
      sc.setJobDescription(description);
    }
    TrainTask.Result r0 = results.stream().filter(r -> r.rank() == 0).findFirst()
        .orElseThrow(() -> new IllegalStateException("SparkTrainer: rank 0 returned no result"));
    return result(r0);
  }

  @SuppressWarnings("unchecked")
  private static SparkTrainingResult result(TrainTask.Result r0) {
    try {
      Path tmp = Files.createTempFile("ember-spark-result-", ".ckpt");
      try {
        Files.write(tmp, r0.state());
        Map<String, Object> s = Checkpoint.read(tmp);
        LinkedHashMap<String, Tensor> weights = new LinkedHashMap<>();
        ((Map<String, Object>) s.get("model")).forEach((k, v) -> weights.put(k, (Tensor) v));
        return new SparkTrainingResult(weights, TrainTask.history((List<Object>) s.get("history")), r0.stageAttempt() + 1,
            r0.resumedFrom());
      } finally {
        Files.deleteIfExists(tmp);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("SparkTrainer: cannot read rank 0's result: " + e.getMessage(), e);
    }
  }

  // ------------------------------------------------------------------ the rows

  /** The Dataset's size and the shape of one sample, after the checks. */
  private record Checked(long count, int[] featureShape) {}

  /**
   * Checks the columns on the driver, with one aggregation over the Dataset (count, nulls, array lengths, label
   * range), and the sample shape against the model (a forward of one zero sample).
   */
  private Checked check(SparkData.Rows rows, ModelFactory model) {
    Dataset<Row> ds = rows.dataset();
    String fc = rows.featuresColumn();
    String lc = rows.labelColumn();
    List<String> names = Arrays.asList(ds.columns());
    for (String c : List.of(fc, lc)) {
      if (!names.contains(c)) {
        throw new SparkInputException(c, "SparkTrainer: the Dataset has no column '" + c + "'; its columns: " + names);
      }
    }
    StructField ff = ds.schema().apply(fc);
    StructField lf = ds.schema().apply(lc);
    if (!(ff.dataType() instanceof ArrayType at) || !(at.elementType() instanceof NumericType)) {
      throw new SparkInputException(fc, "SparkTrainer: features column '" + fc + "' is " + ff.dataType().simpleString()
          + ", expected an array of numbers (array<float>, array<double> or an integer array)");
    }
    if (!(lf.dataType() instanceof NumericType)) {
      throw new SparkInputException(lc, "SparkTrainer: label column '" + lc + "' is " + lf.dataType().simpleString()
          + ", expected class indices (an integer type, or float/double holding whole numbers)");
    }
    Column f = col(quote(fc));
    Column l = col(quote(lc)).cast("double");
    Column badLabel = isnan(l).or(l.lt(0)).or(l.notEqual(round(l, 0)));
    Row s = ds.agg(
        count(lit(1)),
        sum(when(f.isNull(), 1).otherwise(0)),
        min(when(f.isNotNull(), size(f))),
        max(when(f.isNotNull(), size(f))),
        sum(when(l.isNull(), 1).otherwise(0)),
        sum(when(l.isNotNull().and(badLabel), 1).otherwise(0)),
        first(when(l.isNotNull().and(badLabel), l), true),
        max(l)).first();
    long n = s.getLong(0);
    if (n == 0) throw new SparkInputException(fc, "SparkTrainer: the Dataset is empty (no rows to train on)");
    if (n > Integer.MAX_VALUE) {
      throw new SparkInputException(fc, "SparkTrainer: the Dataset has " + n + " rows, more than one rank can index ("
          + Integer.MAX_VALUE + ")");
    }
    long nullFeatures = s.getLong(1);
    if (nullFeatures > 0) {
      throw new SparkInputException(fc, "SparkTrainer: features column '" + fc + "' is null in " + nullFeatures + " of " + n
          + " rows");
    }
    int shortest = s.getInt(2);
    int longest = s.getInt(3);
    int[] shape = rows.featureShape();
    if (shape.length == 0) shape = new int[] {longest};
    long want = 1;
    for (int d : shape) want *= d;
    if (shortest != want || longest != want) {
      throw new SparkInputException(fc, "SparkTrainer: features column '" + fc + "' holds arrays of "
          + (shortest == longest ? shortest + " values" : shortest + " to " + longest + " values") + ", expected " + want
          + " per row (feature shape " + Arrays.toString(shape) + ")");
    }
    if (s.getLong(4) > 0) {
      throw new SparkInputException(lc, "SparkTrainer: label column '" + lc + "' is null in " + s.getLong(4) + " of " + n
          + " rows");
    }
    if (s.getLong(5) > 0) {
      throw new SparkInputException(lc, "SparkTrainer: label column '" + lc + "' holds " + s.getLong(5) + " values that are"
          + " not class indices (negative, fractional or NaN), e.g. " + s.get(6));
    }
    int classes = probe(model, shape, fc);
    double top = s.getDouble(7);
    if (top >= classes) {
      throw new SparkInputException(lc, "SparkTrainer: label column '" + lc + "' holds class " + (long) top
          + " but the model has " + classes + " outputs (classes 0.." + (classes - 1) + ")");
    }
    return new Checked(n, shape);
  }

  /** The number of classes the model predicts: the width of its output for one zero sample of {@code shape}. */
  private static int probe(ModelFactory factory, int[] shape, String column) {
    int[] batch = new int[shape.length + 1];
    batch[0] = 1;
    System.arraycopy(shape, 0, batch, 1, shape.length);
    Module m;
    long[] saved = Generator.global().state();      // the driver's own generator is left as it was
    try {
      m = factory.create();
    } finally {
      Generator.global().setState(saved);
    }
    if (m == null) throw new IllegalStateException("SparkTrainer: the model factory returned null");
    Tensor out;
    try (var ignored = Grad.off()) {
      out = m.forward(Tensor.zeros(batch));
    } catch (RuntimeException e) {
      throw new SparkInputException(column, "SparkTrainer: the model rejects a sample of shape " + Arrays.toString(shape)
          + " from column '" + column + "' (input " + Arrays.toString(batch) + "): " + e.getMessage());
    }
    if (out.dim() != 2 || out.size(0) != 1) {
      throw new SparkInputException(column, "SparkTrainer: the model maps input " + Arrays.toString(batch) + " (column '"
          + column + "') to " + Arrays.toString(out.shape()) + ", expected class scores [1, classes]");
    }
    return out.size(1);
  }

  /** A column name as Spark's parser reads it: in backticks, a backtick doubled. */
  private static String quote(String name) {
    return "`" + name.replace("`", "``") + "`";
  }

  /**
   * The rows as {@link TrainTask.Example}s (partition, position, float32 features, label), in the Dataset's
   * partitions.
   */
  private static JavaRDD<TrainTask.Example> examples(SparkData.Rows rows) {
    DataType floats = new ArrayType(org.apache.spark.sql.types.DataTypes.FloatType, true);
    String fc = rows.featuresColumn();
    Dataset<Row> selected = rows.dataset().select(col(quote(fc)).cast(floats), col(quote(rows.labelColumn())).cast("double"));
    return selected.javaRDD().mapPartitionsWithIndex((p, it) -> {
      List<TrainTask.Example> out = new ArrayList<>();
      for (int pos = 0; it.hasNext(); pos++) out.add(example(p, pos, it.next(), fc));
      return out.iterator();
    }, true);
  }

  /** The examples in {@code world} partitions: one shuffle spreads each partition's rows round-robin over them. */
  private static JavaRDD<TrainTask.Example> spread(JavaRDD<TrainTask.Example> ex, int world) {
    return ex.mapToPair(e -> new Tuple2<>((long) e.partition() + e.position(), e)).partitionBy(new Modulo(world)).values();
  }

  private static TrainTask.Example example(int partition, int position, Row r, String column) {
    List<Object> values = r.getList(0);
    float[] x = new float[values.size()];
    for (int i = 0; i < x.length; i++) {
      Object v = values.get(i);
      if (v == null) {                               // found here rather than by a costly scan on the driver
        throw new SparkInputException(column, "SparkTrainer: features column '" + column + "' holds a null element (at "
            + i + ") in row " + position + " of partition " + partition);
      }
      x[i] = ((Number) v).floatValue();
    }
    return new TrainTask.Example(partition, position, x, r.getDouble(1));
  }

  /** Sends key {@code k} to partition {@code k % n}. */
  private static final class Modulo extends Partitioner {
    private static final long serialVersionUID = 1L;
    private final int n;

    Modulo(int n) {
      this.n = n;
    }

    @Override
    public int numPartitions() {
      return n;
    }

    @Override
    public int getPartition(Object key) {
      return (int) Math.floorMod((Long) key, (long) n);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Modulo m && m.n == n;
    }

    @Override
    public int hashCode() {
      return n;
    }
  }
}
