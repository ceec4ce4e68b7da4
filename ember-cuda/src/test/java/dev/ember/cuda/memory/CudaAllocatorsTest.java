package dev.ember.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The allocator configuration string, read as PyTorch reads PYTORCH_CUDA_ALLOC_CONF. */
class CudaAllocatorsTest {
  static final String SOURCE = "EMBER_CUDA_ALLOC_CONF";

  @Test
  void maxSplitSizeIsReadInMebibytes() {
    assertEquals(128L << 20, CudaAllocators.maxSplitSize("max_split_size_mb:128", SOURCE));
    assertEquals(21L << 20, CudaAllocators.maxSplitSize(" max_split_size_mb : 21 ,", SOURCE));
    assertEquals(CachingAllocator.NO_SPLIT_LIMIT, CudaAllocators.maxSplitSize("", SOURCE));
  }

  @Test
  void badOptionsNameTheirSource() {
    assertEquals("EMBER_CUDA_ALLOC_CONF: unknown option 'expandable_segments' in 'expandable_segments:True'"
        + " (known: max_split_size_mb)", assertThrows(IllegalArgumentException.class,
            () -> CudaAllocators.maxSplitSize("expandable_segments:True", SOURCE)).getMessage());
    assertEquals("EMBER_CUDA_ALLOC_CONF: max_split_size_mb must be over 20, got 20",
        assertThrows(IllegalArgumentException.class,
            () -> CudaAllocators.maxSplitSize("max_split_size_mb:20", SOURCE)).getMessage());
    assertEquals("EMBER_CUDA_ALLOC_CONF: max_split_size_mb must be a whole number of MiB, got '1.5'",
        assertThrows(IllegalArgumentException.class,
            () -> CudaAllocators.maxSplitSize("max_split_size_mb:1.5", SOURCE)).getMessage());
  }
}
