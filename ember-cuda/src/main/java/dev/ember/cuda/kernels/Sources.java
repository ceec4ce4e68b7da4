package dev.ember.cuda.kernels;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** The CUDA C sources of this package, read from its resources (KernelCache prepends its prelude). */
final class Sources {
  /** reduce.cu after eg_common.cuh: reductions, arg-reductions, softmax, cumsum, allFinite. */
  static final String REDUCE = load("eg_common.cuh") + load("reduce.cu");
  /** indexing.cu after eg_common.cuh: gather, scatter, index_select, index_add, strided copy and scale. */
  static final String INDEXING = load("eg_common.cuh") + load("indexing.cu");

  private Sources() {}

  static String load(String name) {
    try (InputStream in = Sources.class.getResourceAsStream(name)) {
      if (in == null) throw new IllegalStateException("CUDA source " + name + " is missing from ember-cuda's resources");
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("reading CUDA source " + name, e);
    }
  }
}
