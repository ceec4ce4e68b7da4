package dev.ember.nn.io;

import dev.ember.tensor.Tensor;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The content of a safetensors file: its tensors in file order and its {@code __metadata__}
 * (empty when the file has none).
 *
 * @param tensors name to tensor, in the order of their data in the file
 * @param metadata the string-to-string metadata, in header order; unmodifiable
 */
public record SafeTensorsFile(LinkedHashMap<String, Tensor> tensors, Map<String, String> metadata) {
  public SafeTensorsFile {
    metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
  }
}
