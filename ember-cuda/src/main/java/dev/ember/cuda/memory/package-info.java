/**
 * Device memory management for the CUDA backend: {@link dev.ember.cuda.memory.CachingAllocator}, a caching,
 * stream-aware allocator with PyTorch's {@code CUDACachingAllocator} semantics, over a
 * {@link dev.ember.cuda.memory.RawMemory} and {@link dev.ember.cuda.memory.StreamEvents}. The allocator itself is
 * pure Java and is tested over fakes; {@link dev.ember.cuda.memory.CudaRawMemory} and
 * {@link dev.ember.cuda.memory.CudaStreamEvents} put it on the driver, and
 * {@link dev.ember.cuda.memory.CudaAllocators} keeps the process's one allocator per device.
 *
 * <p>A backend's device memory takes a block and gives it back when the storage is released:
 * <pre>{@code
 * CachingAllocator alloc = CudaAllocators.of(ctx);
 * Block block = alloc.allocate(bytes, ctx.stream());   // block.ptr() is the device address
 * ...
 * alloc.free(block);                                   // once; from any thread (a Cleaner's too)
 * }</pre>
 */
package dev.ember.cuda.memory;
