package dev.ember.cuda.memory;

/**
 * One counter of a {@link CachingAllocator}, as PyTorch's allocator keeps it.
 *
 * @param current the value now
 * @param peak the highest value since the allocator was made or {@link CachingAllocator#resetPeakStats} ran
 * @param allocated the total ever added (since {@link CachingAllocator#resetAccumulatedStats})
 * @param freed the total ever removed (since {@link CachingAllocator#resetAccumulatedStats})
 */
public record Stat(long current, long peak, long allocated, long freed) {}
