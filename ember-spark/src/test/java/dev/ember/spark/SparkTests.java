package dev.ember.spark;

import org.apache.spark.sql.SparkSession;

/** The Spark sessions of the tests: quiet, on loopback, no UI. */
final class SparkTests {
  private SparkTests() {}

  static SparkSession session(String master) {
    return SparkSession.builder().master(master).appName("ember-spark-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate();
  }
}
