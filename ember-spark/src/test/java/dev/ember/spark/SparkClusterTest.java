package dev.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SparkTrainer} on Fashion-MNIST rows, first in local mode ({@code local[2]}), then on a real multi-JVM cluster
 * that the test starts: Spark's {@code local-cluster[2,1,1536]} (a master and a worker in this JVM, two executor JVMs
 * of one core each), where rank 1's executor is killed with SIGKILL in the middle of epoch 1. Spark reruns the barrier
 * stage on a new executor, the ranks resume from epoch 0's checkpoint, and the final weights are the local run's, bit
 * for bit (same world size, seed and sample order; the rows reach the ranks in 2 partitions locally and through a
 * shuffle from 8 on the cluster). Both reach 88% test accuracy.
 */
class SparkClusterTest {
  @Test
  void trainsLocallyAndOnAClusterWhoseKilledExecutorChangesNoBit(@TempDir Path tmp) throws IOException {
    SparkTrainingResult local;
    SparkSession spark = SparkTests.session("local[2]");
    try {
      Dataset<Row> rows = FashionRows.trainRows(spark);
      long t0 = System.nanoTime();
      local = FashionRows.trainer().build().fit(spark, SparkData.rows(rows, "features", "label", 1, 28, 28), FashionRows::mlp);
      System.out.printf("SparkTrainer local[2] Fashion-MNIST: %s, test accuracy %.4f, fit %.1f s%n", local,
          FashionRows.testAccuracy(local), (System.nanoTime() - t0) / 1e9);
    } finally {
      spark.stop();
    }
    assertEquals(60_000, local.history().get(0).samples());
    assertTrue(FashionRows.testAccuracy(local) >= 0.88, "local test accuracy " + FashionRows.testAccuracy(local) + " < 0.88");

    SparkSession cluster = clusterSession(tmp);
    try {
      Dataset<Row> rows = FashionRows.trainRows(cluster);
      assertEquals(8, rows.rdd().getNumPartitions());
      long t0 = System.nanoTime();
      SparkTrainingResult killed = FashionRows.trainer().checkpointDir(tmp.resolve("ckpt").toString())
          .listener(SparkClusterTest::killRank1MidEpoch1OnTheFirstAttempt).build()
          .fit(cluster, SparkData.rows(rows, "features", "label", 1, 28, 28), FashionRows::mlp);
      System.out.printf("SparkTrainer local-cluster[2,1,1536] Fashion-MNIST, rank 1 killed: %s, test accuracy %.4f,"
          + " fit %.1f s%n", killed, FashionRows.testAccuracy(killed), (System.nanoTime() - t0) / 1e9);
      assertEquals(2, killed.stageAttempts(), "the stage ran again after the kill");
      assertEquals(0, killed.resumedFromEpoch());
      SparkTrainerTest.assertSameWeights(local.stateDict(), killed.stateDict());
      assertEquals(local.history(), killed.history());
    } finally {
      cluster.stop();
    }
  }

  /** On the barrier stage's first attempt, rank 1's executor JVM is killed (SIGKILL) 300 ms into epoch 1. */
  static void killRank1MidEpoch1OnTheFirstAttempt(SparkTrainer.TaskEpoch e) {
    if (e.rank() != 1 || e.epoch() != 1 || e.stageAttempt() != 0) return;
    if ("driver".equals(SparkEnv.get().executorId())) throw new IllegalStateException("not in an executor JVM");
    Thread killer = new Thread(() -> {
      try {
        Thread.sleep(300);
        new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid())).start().waitFor();
      } catch (IOException | InterruptedException ignored) {
        // fall through to halt
      }
      Runtime.getRuntime().halt(137);
    });
    killer.setDaemon(true);
    killer.start();
  }

  /**
   * A {@code local-cluster} session: Spark's standalone master and one worker run in this JVM and the worker starts two
   * executor JVMs of one core and 1536 MiB, with this JVM's class path and the JVM options Spark and Ember need.
   * The worker wants a Spark home with a {@code jars} folder (the surefire configuration points SPARK_HOME at one).
   */
  static SparkSession clusterSession(Path tmp) throws IOException {
    String home = System.getenv("SPARK_HOME");
    if (home == null) home = tmp.resolve("spark-home").toString();
    Files.createDirectories(Path.of(home, "jars"));
    String opens = System.getProperty("ember.spark.opens", "");
    return SparkSession.builder().master("local-cluster[2,1,1536]").appName("ember-spark-cluster-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.default.parallelism", "8")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.executor.extraClassPath", System.getProperty("java.class.path"))
        .config("spark.executor.extraJavaOptions", opens + " --add-modules=jdk.incubator.vector"
            + " --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC")
        .getOrCreate();
  }
}
