package dev.ember.spark;

/**
 * A {@link SparkTrainer} run failed on the cluster: its barrier stage failed more often than Spark retries it
 * ({@code spark.task.maxFailures}, {@code spark.stage.maxConsecutiveAttempts}), or a rank's training raised an
 * error. The message gives Spark's reason (the failing task's exception); the cause is Spark's exception.
 */
public final class SparkTrainingException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** A failed run; {@code message} says which and why. */
  public SparkTrainingException(String message, Throwable cause) {
    super(message, cause);
  }
}
