package dev.ember.nn.io;

import java.util.Locale;

/**
 * How much a reader may allocate. The readers compute what a file's tensors (and, for safetensors,
 * its header) will take from the header alone, and refuse a file that cannot fit with the size it
 * needs, before allocating anything: a small crafted file must not end in an OutOfMemoryError.
 *
 * <p>A limit of {@link #HEAP} means "what this JVM's heap can still give": the max heap less what
 * is in use, measured again after one collection when the first measure falls short (garbage counts
 * as in use until it is collected).
 */
final class HeapBudget {
  private HeapBudget() {}

  /** The limit that means "what the heap has free". */
  static final long HEAP = -1;

  /** Heap one tensor takes besides its data (the Tensor, its Storage and map entry), rounded up. */
  static final long PER_TENSOR_BYTES = 512;

  /** Whether {@code need} bytes fit in {@code limit} ({@link #HEAP}: in the heap's free space). */
  static boolean allows(long need, long limit) {
    if (limit >= 0) return need <= limit;
    Runtime rt = Runtime.getRuntime();
    if (need > rt.maxMemory()) return false;
    if (need <= free()) return true;
    System.gc(); // only on this rare path: the file may well fit once garbage is collected
    return need <= free();
  }

  /** What a refused need exceeds, for messages: {@code the 180.0 MiB free in this JVM's heap (-Xmx 256.0 MiB)}. */
  static String shortfall(long limit) {
    if (limit >= 0) return "the limit of " + limit + " bytes";
    return "the " + human(free()) + " free in this JVM's heap (-Xmx " + human(Runtime.getRuntime().maxMemory()) + ")";
  }

  /** {@code 250000000 bytes (238.4 MiB)}. */
  static String bytes(long n) {
    return n + " bytes (" + human(n) + ")";
  }

  /** {@code 238.4 MiB}, {@code 3.2 GiB}, {@code 27.6 KiB}: one decimal in the largest unit that keeps it at least 1. */
  static String human(long n) {
    if (n >= 1L << 30) return String.format(Locale.ROOT, "%.1f GiB", n / (double) (1L << 30));
    if (n >= 1L << 20) return String.format(Locale.ROOT, "%.1f MiB", n / (double) (1L << 20));
    return String.format(Locale.ROOT, "%.1f KiB", n / 1024.0);
  }

  private static long free() {
    Runtime rt = Runtime.getRuntime();
    return rt.maxMemory() - (rt.totalMemory() - rt.freeMemory());
  }
}
