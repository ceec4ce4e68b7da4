package dev.ember.cuda.lib;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ember.backend.DeviceMemory;
import dev.ember.backend.View;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The arguments of one kernel launch, in the order the kernel declares its parameters: {@code cuLaunchKernel}
 * takes an array of pointers, one to each argument's value, and copies the values when it is called, so the
 * buffers may be reused right after the launch. {@link #begin()} hands out the calling thread's reusable buffers
 * (no allocation per launch); {@code new KernelArgs()} makes private ones.
 *
 * <p>{@link #view} passes a tensor view as two parameters, the device address of its first element and a
 * {@code Geo} (the struct every kernel source gets from {@link dev.ember.cuda.runtime.KernelCache#PRELUDE}):
 * {@code struct Geo { int rank; long long numel; long long shape[8]; long long stride[8]; }}, strides in elements.
 */
public final class KernelArgs {
  /** The largest rank a {@code Geo} holds. */
  public static final int MAX_RANK = 8;
  /** The bytes of a {@code Geo}: rank (padded to 8), numel, shape[8], stride[8]. */
  public static final int GEO_BYTES = 16 + 16 * MAX_RANK;
  private static final int VALUE_BYTES = 8192;
  private static final int MAX_ARGS = 64;
  private static final ThreadLocal<KernelArgs> SCRATCH = ThreadLocal.withInitial(KernelArgs::new);

  private final MemorySegment values;
  private final MemorySegment pointers;
  private long used;
  private int count;

  public KernelArgs() {
    Arena arena = Arena.ofAuto();
    values = arena.allocate(VALUE_BYTES, 16);
    pointers = arena.allocate(ADDRESS.byteSize() * MAX_ARGS, 16);
  }

  /** The calling thread's argument buffers, emptied: valid until its next {@code begin()}. */
  public static KernelArgs begin() {
    KernelArgs a = SCRATCH.get();
    a.used = 0;
    a.count = 0;
    return a;
  }

  private MemorySegment slot(long bytes, long align) {
    long at = (used + align - 1) / align * align;
    if (at + bytes > VALUE_BYTES || count == MAX_ARGS) {
      throw new IllegalArgumentException("KernelArgs: more than " + MAX_ARGS + " arguments or " + VALUE_BYTES
          + " bytes of argument values");
    }
    used = at + bytes;
    MemorySegment s = values.asSlice(at, bytes);
    pointers.setAtIndex(ADDRESS, count++, s);
    return s;
  }

  /** A device pointer ({@code float*}, {@code const void*}, ...). */
  public KernelArgs ptr(long devicePointer) {
    slot(8, 8).set(JAVA_LONG, 0, devicePointer);
    return this;
  }

  public KernelArgs i32(int v) {
    slot(4, 4).set(JAVA_INT, 0, v);
    return this;
  }

  public KernelArgs i64(long v) {
    slot(8, 8).set(JAVA_LONG, 0, v);
    return this;
  }

  public KernelArgs f32(float v) {
    slot(4, 4).set(JAVA_FLOAT, 0, v);
    return this;
  }

  public KernelArgs f64(double v) {
    slot(8, 8).set(JAVA_DOUBLE, 0, v);
    return this;
  }

  /** A struct passed by value: its bytes, aligned to {@code align}. */
  public KernelArgs bytes(MemorySegment struct, long align) {
    MemorySegment s = slot(struct.byteSize(), align);
    MemorySegment.copy(struct, 0, s, 0, struct.byteSize());
    return this;
  }

  /**
   * A view as two parameters: {@code T* data} (its first element) and {@code Geo g} (its shape and strides).
   *
   * @throws IllegalArgumentException if the view is not on a device or has more than {@link #MAX_RANK} axes
   */
  public KernelArgs view(View v) {
    ptr(address(v));
    return geo(v.shapeRef(), v.stridesRef());
  }

  /** A {@code Geo} for the given shape and strides (in elements). */
  public KernelArgs geo(int[] shape, int[] strides) {
    if (shape.length > MAX_RANK) {
      throw new IllegalArgumentException("CUDA kernels take tensors of rank at most " + MAX_RANK + ": got shape "
          + Arrays.toString(shape));
    }
    MemorySegment s = slot(GEO_BYTES, 8);
    s.set(JAVA_INT, 0, shape.length);
    long numel = 1;
    for (int i = 0; i < shape.length; i++) {
      numel *= shape[i];
      s.set(JAVA_LONG, 16 + 8L * i, shape[i]);
      s.set(JAVA_LONG, 16 + 8L * (MAX_RANK + i), strides[i]);
    }
    s.set(JAVA_LONG, 8, numel);
    return this;
  }

  /**
   * The device address of a view's first element: its storage's device memory plus its offset.
   *
   * @throws IllegalArgumentException if the view's storage is not in device memory
   */
  public static long address(View v) {
    DeviceMemory m = v.storage().memory();
    if (m == null) {
      throw new IllegalArgumentException("CUDA kernel argument is a CPU tensor of shape "
          + Arrays.toString(v.shapeRef()) + "; move it to the GPU first (tensor.to(device))");
    }
    return m.address() + (long) v.offset() * v.dtype().itemSize();
  }

  /** The number of arguments added so far. */
  public int count() {
    return count;
  }

  MemorySegment pointers() {
    return pointers;
  }
}
