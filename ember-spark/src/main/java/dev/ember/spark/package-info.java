/**
 * Data-parallel training on Apache Spark: {@link dev.ember.spark.SparkTrainer} runs Ember's
 * {@code DistributedDataParallel} training as one Spark barrier stage, the gradients moving over an Ember
 * {@code ProcessGroup} between the tasks, with checkpoints from which a stage that Spark retries resumes.
 */
package dev.ember.spark;
