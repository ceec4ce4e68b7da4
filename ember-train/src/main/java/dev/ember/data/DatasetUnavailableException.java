package dev.ember.data;

import java.io.IOException;

/**
 * A data set is neither on disk where Ember looks nor downloadable. The message lists the
 * folders searched, why the download failed, and what to install or where to put which files.
 */
public class DatasetUnavailableException extends IOException {
  public DatasetUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
