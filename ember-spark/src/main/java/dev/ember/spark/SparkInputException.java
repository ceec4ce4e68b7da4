package dev.ember.spark;

/**
 * The training data of a {@link SparkTrainer} run does not fit: a column that is missing or has the wrong type,
 * arrays of the wrong length, nulls, labels that are not class indices of the model. Raised on the driver before
 * any training task starts; {@link #column()} names the offending column.
 */
public final class SparkInputException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  private final String column;

  /** A problem with {@code column}; {@code message} is the whole sentence, naming it and the shapes or values. */
  public SparkInputException(String column, String message) {
    super(message);
    this.column = column;
  }

  /** The column at fault. */
  public String column() {
    return column;
  }
}
