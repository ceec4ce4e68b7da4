package dev.ember.cuda.kernels;

import dev.ember.tensor.DType;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The CUDA C sources of this package, read from its resources (KernelCache prepends its prelude). Each is
 * compiled once per dtype, with only that dtype's kernels instantiated.
 */
final class Sources {
  private static final String REDUCE = load("eg_common.cuh") + load("reduce.cu");
  private static final String INDEXING = load("eg_common.cuh") + load("indexing.cu");

  private Sources() {}

  /** The reduction source for inputs of {@code t}: reductions, arg-reductions, softmax, cumsum, allFinite. */
  static String reduce(DType t) {
    if (t.isHalf()) throw Geometry.halfUnsupported(t); // the op layer reduces them in float32
    return "#define EG_TYPE_" + Geometry.tag(t) + " 1\n" + REDUCE;
  }

  /**
   * The indexing source for elements of {@code t}: gather, scatter, index_select, index_add, copy, scale (BF16 and
   * F16: the moves and the copy only).
   */
  static String indexing(DType t) {
    return "#define EG_TYPE_" + Geometry.tag(t) + " 1\n" + INDEXING;
  }

  static String load(String name) {
    try (InputStream in = Sources.class.getResourceAsStream(name)) {
      if (in == null) throw new IllegalStateException("CUDA source " + name + " is missing from ember-cuda's resources");
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("reading CUDA source " + name, e);
    }
  }
}
