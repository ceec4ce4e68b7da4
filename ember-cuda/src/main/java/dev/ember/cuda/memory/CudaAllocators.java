package dev.ember.cuda.memory;

import dev.ember.cuda.runtime.CudaContext;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The process's {@link CachingAllocator} of each CUDA device, as PyTorch keeps one caching allocator per device:
 * every user of a device shares its cache, so memory one frees another reuses.
 *
 * <p>Configured as PyTorch's {@code PYTORCH_CUDA_ALLOC_CONF}, from the system property {@code ember.cuda.allocConf}
 * or else the environment variable {@code EMBER_CUDA_ALLOC_CONF}: comma-separated {@code option:value} pairs, of
 * which {@code max_split_size_mb:N} (N over 20) keeps blocks of N MiB or more whole (see
 * {@link CachingAllocator#CachingAllocator(int, RawMemory, StreamEvents, long)}).
 *
 * <pre>{@code
 * CachingAllocator alloc = CudaAllocators.of(CudaContext.of(0));
 * Block b = alloc.allocate(bytes, ctx.stream());
 * }</pre>
 */
public final class CudaAllocators {
  private static final ConcurrentHashMap<Integer, CachingAllocator> ALLOCATORS = new ConcurrentHashMap<>();

  private CudaAllocators() {}

  /** The allocator of {@code ctx}'s device, made on first use over {@link CudaRawMemory} and {@link CudaStreamEvents}. */
  public static CachingAllocator of(CudaContext ctx) {
    return ALLOCATORS.computeIfAbsent(ctx.ordinal(), ordinal -> new CachingAllocator(ordinal, new CudaRawMemory(ctx),
        new CudaStreamEvents(ctx), configuredMaxSplitSize()));
  }

  private static long configuredMaxSplitSize() {
    String property = System.getProperty("ember.cuda.allocConf");
    if (property != null) {
      return maxSplitSize(property, "-Dember.cuda.allocConf");
    }
    String env = System.getenv("EMBER_CUDA_ALLOC_CONF");
    return env == null ? CachingAllocator.NO_SPLIT_LIMIT : maxSplitSize(env, "EMBER_CUDA_ALLOC_CONF");
  }

  /**
   * The split limit in bytes that {@code conf} sets, or {@link CachingAllocator#NO_SPLIT_LIMIT}.
   *
   * @param source where {@code conf} came from, for error messages
   * @throws IllegalArgumentException naming {@code source} for an unknown option or a bad value
   */
  static long maxSplitSize(String conf, String source) {
    long limit = CachingAllocator.NO_SPLIT_LIMIT;
    for (String part : conf.split(",")) {
      String option = part.strip();
      if (option.isEmpty()) {
        continue;
      }
      int colon = option.indexOf(':');
      String key = colon < 0 ? option : option.substring(0, colon).strip();
      if (!key.equals("max_split_size_mb")) {
        throw new IllegalArgumentException(source + ": unknown option '" + key + "' in '" + conf
            + "' (known: max_split_size_mb)");
      }
      String value = colon < 0 ? "" : option.substring(colon + 1).strip();
      long mb;
      try {
        mb = Long.parseLong(value);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(source + ": max_split_size_mb must be a whole number of MiB, got '"
            + value + "'", e);
      }
      if (mb <= CachingAllocator.LARGE_BUFFER >> 20 || mb > Long.MAX_VALUE >> 21) {
        throw new IllegalArgumentException(source + ": max_split_size_mb must be over 20, got " + mb);
      }
      limit = mb << 20;
    }
    return limit;
  }
}
