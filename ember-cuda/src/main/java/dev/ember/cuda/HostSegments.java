package dev.ember.cuda;

import dev.ember.tensor.Storage;
import java.lang.foreign.MemorySegment;

/** Heap memory segments over host storages' arrays, which the driver's copies read and write in place. */
public final class HostSegments {
  private HostSegments() {}

  /** A heap segment over host storage {@code s}'s whole backing array. */
  public static MemorySegment of(Storage s) {
    return of(s.array());
  }

  /** A heap segment over a storage's backing array (float[], double[], long[], int[], byte[] or short[]). */
  public static MemorySegment of(Object array) {
    return switch (array) {
      case float[] a -> MemorySegment.ofArray(a);
      case double[] a -> MemorySegment.ofArray(a);
      case long[] a -> MemorySegment.ofArray(a);
      case int[] a -> MemorySegment.ofArray(a);
      case byte[] a -> MemorySegment.ofArray(a);
      case short[] a -> MemorySegment.ofArray(a);
      default -> throw new IllegalStateException("copy: unexpected host array " + array.getClass());
    };
  }
}
