/**
 * Device memory management for the CUDA backend: {@link dev.ember.cuda.memory.CachingAllocator}, a caching,
 * stream-aware allocator with PyTorch's {@code CUDACachingAllocator} semantics, over a
 * {@link dev.ember.cuda.memory.RawMemory} (the driver's allocation calls, or a fake in tests) and
 * {@link dev.ember.cuda.memory.StreamEvents}. Pure Java: nothing here calls CUDA itself.
 */
package dev.ember.cuda.memory;
