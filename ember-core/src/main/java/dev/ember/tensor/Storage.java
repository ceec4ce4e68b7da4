package dev.ember.tensor;

import dev.ember.backend.DeviceMemory;
import java.util.Arrays;

/**
 * A flat typed buffer shared by a tensor and all its views.
 *
 * <p>Heap arrays rather than {@code MemorySegment}s: the measured probe (DESIGN.md section 9) saw
 * Vector API kernels over {@code MemorySegment}s stay in tier-2 code for whole runs in 5 of 22
 * launches while {@code float[]} kernels reached C2 every time, and the JIT eliminates bounds
 * checks on arrays in the kernels' counted loops. Memory-mapped datasets copy batches into
 * arrays, and a native/GPU backend will own its own storage kind.
 *
 * <p>The version counter is bumped by every in-place write; autograd compares it against the
 * value seen at forward time to reject gradients computed from modified tensors.
 *
 * <p>A buffer may start {@linkplain #deferred(int, Deferred) deferred}: its values are computed by the
 * first access to its array (every accessor goes through that check), so a weight gradient that an
 * optimizer consumes block by block is never written out; see {@link Deferred}.
 */
public final class Storage {
  private final DType dtype;
  private final int size;
  private float[] f32;
  private double[] f64;
  private long[] i64;
  private int[] i32;
  /** BOOL (0/1) or I8 bytes. */
  private byte[] bool;
  /** BF16 or F16 bit patterns (see {@link HalfFloats}). */
  private short[] half;
  private int version;
  private String lastWriter;
  /** The {@link MemoryScope} that recycles this buffer when it closes, or null (GC-managed). */
  MemoryScope scope;
  /** Set when the buffer went back to its scope's pool: every access throws from then on. */
  private boolean released;
  private boolean fromPool;
  /** Set for a buffer of a {@link AllocationPlan} (for the message of a use after its release). */
  private boolean planned;
  /** Computes the F32 array on first access, then is null (see {@link Deferred}). */
  private volatile Deferred deferred;
  /** The device memory of a storage on a device other than the CPU (then every array is null), else null. */
  private final DeviceMemory memory;

  private Storage(DType dtype, int size, float[] f32, double[] f64, long[] i64, int[] i32, byte[] bool) {
    this.dtype = dtype;
    this.size = size;
    this.f32 = f32;
    this.f64 = f64;
    this.i64 = i64;
    this.i32 = i32;
    this.bool = bool;
    this.memory = null;
  }

  private Storage(DType dtype, int size, DeviceMemory memory) {
    this.dtype = dtype;
    this.size = size;
    this.memory = memory;
  }

  /**
   * A storage of {@code size} elements in {@code memory}, a device's allocation (for a backend's
   * {@link dev.ember.backend.Backend#allocate}). It belongs to the current {@link MemoryScope} like any buffer
   * allocated here, which releases the memory when it closes.
   */
  public static Storage onDevice(DType dtype, int size, DeviceMemory memory) {
    if (memory == null) throw new IllegalArgumentException("Storage.onDevice: memory is null");
    Storage st = new Storage(dtype, size, memory);
    MemoryScope scope = MemoryScope.current();
    if (scope != null) scope.own(st);
    return st;
  }

  /** The device this buffer lives on: {@link Device#CPU} for heap arrays. */
  public Device device() {
    return memory == null ? Device.CPU : memory.device();
  }

  /** The device memory behind this buffer (for its device's backend), or null for a CPU buffer. */
  public DeviceMemory memory() {
    if (released) throw releasedError();
    return memory;
  }

  /** Whether this buffer lives on a device other than the CPU. */
  public boolean onDevice() {
    return memory != null;
  }

  /** Releases a device buffer's memory (its scope closed); every later access throws. */
  void releaseDeviceMemory() {
    released = true;
    scope = null;
    memory.release();
  }

  private IllegalStateException onDeviceError() {
    return new IllegalStateException("storage of " + size + " " + dtype.torchName() + " elements is on "
        + memory.device() + ", not in host memory: copy the tensor to the host first (tensor.cpu() or "
        + "tensor.to(Device.CPU))");
  }

  /**
   * A zero-filled buffer of {@code size} elements: from the thread's buffer pool, and owned by its
   * innermost {@link MemoryScope}, when one is open on this thread; a fresh array otherwise.
   */
  public static Storage allocate(DType dtype, long size) {
    return allocate(dtype, size, true);
  }

  /**
   * A buffer of {@code size} elements whose contents are unspecified, for a caller that writes every
   * element before anything reads it: inside a {@link MemoryScope} a pooled array as it was released
   * (the zero-fill skipped), outside one a fresh (zeroed) array.
   */
  public static Storage allocateUninitialized(DType dtype, long size) {
    return allocate(dtype, size, false);
  }

  private static Storage allocate(DType dtype, long size, boolean zero) {
    if (size < 0 || size > Integer.MAX_VALUE - 64) {
      throw new IllegalArgumentException("allocate: " + size + " elements of " + dtype.torchName()
          + " do not fit in one CPU buffer (max " + (Integer.MAX_VALUE - 64) + ")");
    }
    int n = (int) size;
    if (AllocationPlan.installed != 0) { // a compiled run's planned buffers (one static read when none anywhere)
      Storage st = AllocationPlan.allocate(dtype, n, zero);
      if (st != null) return st;
    }
    MemoryScope scope = MemoryScope.current();
    if (scope != null) return scope.allocate(dtype, n, zero);
    return fresh(dtype, n);
  }

  /** A fresh zero-filled Java array of n elements of dtype. */
  static Object newArray(DType dtype, int n) {
    return switch (dtype) {
      case F32 -> new float[n];
      case F64 -> new double[n];
      case I64 -> new long[n];
      case I32 -> new int[n];
      case BOOL, I8 -> new byte[n];
      case BF16, F16 -> new short[n];
    };
  }

  /**
   * Fills an array made by {@link #newArray} with zeros again (a reused buffer handed out as a fresh one). A
   * float32 array of at least {@link #PARALLEL_ZERO} elements is filled by the CPU backend's
   * {@code fill}, spread over its threads when it has more than one: one thread writes 65 MB (an embedding table's
   * gradient) in several milliseconds, about what the rest of that backward costs. Zeros are zeros whoever writes
   * them.
   */
  static void zero(Object array) {
    switch (array) {
      case float[] f when f.length >= PARALLEL_ZERO && Device.CPU.backend().threads() > 1 ->
          Device.CPU.backend().fill(new Tensor(wrap(f), new int[] {f.length}, new int[] {1}, 0), 0.0);
      case float[] f -> Arrays.fill(f, 0f);
      case double[] d -> Arrays.fill(d, 0.0);
      case long[] l -> Arrays.fill(l, 0L);
      case int[] i -> Arrays.fill(i, 0);
      case byte[] b -> Arrays.fill(b, (byte) 0);
      case short[] h -> Arrays.fill(h, (short) 0);
      default -> throw new AssertionError(array.getClass());
    }
  }

  /** Elements from which {@link #zero} fills a float array on the CPU backend's threads (1 MB of float32). */
  static final int PARALLEL_ZERO = 1 << 18;

  /** A fresh zero-filled array of n elements of dtype, unowned. */
  static Storage fresh(DType dtype, int n) {
    return of(dtype, n, newArray(dtype, n));
  }

  /** A storage around an array of a {@link AllocationPlan}: no scope owns it, the plan reuses the array. */
  static Storage planned(DType dtype, int n, Object array) {
    Storage st = of(dtype, n, array);
    st.planned = true;
    return st;
  }

  /** Releases a planned buffer whose array the plan hands out again: every later access throws. */
  void releasePlanned() {
    release();
  }

  /** A storage around a pooled array (zero-filled by the pool) owned by {@code scope}. */
  static Storage pooled(DType dtype, int n, Object array, MemoryScope scope) {
    Storage st = of(dtype, n, array);
    st.scope = scope;
    st.fromPool = true;
    return st;
  }

  private static Storage of(DType dtype, int n, Object array) {
    return switch (dtype) {
      case F32 -> new Storage(dtype, n, (float[]) array, null, null, null, null);
      case F64 -> new Storage(dtype, n, null, (double[]) array, null, null, null);
      case I64 -> new Storage(dtype, n, null, null, (long[]) array, null, null);
      case I32 -> new Storage(dtype, n, null, null, null, (int[]) array, null);
      case BOOL, I8 -> new Storage(dtype, n, null, null, null, null, (byte[]) array);
      case BF16, F16 -> {
        Storage st = new Storage(dtype, n, null, null, null, null, null);
        st.half = (short[]) array;
        yield st;
      }
    };
  }

  /**
   * An F32 buffer of {@code size} elements whose values {@code value} computes on first access. It belongs
   * to the current {@link MemoryScope} like any buffer allocated here.
   */
  public static Storage deferred(int size, Deferred value) {
    Storage st = new Storage(DType.F32, size, null, null, null, null, null);
    st.deferred = value;
    MemoryScope scope = MemoryScope.current();
    if (scope != null) scope.own(st);
    return st;
  }

  /** The pending computation of this buffer's values, or null once they exist (or for other buffers). */
  public Deferred deferred() {
    return released ? null : deferred;
  }

  /** Computes a deferred buffer's values (see {@link #resolveDeferred}). */
  private void materialize() {
    resolveDeferred(true);
  }

  /**
   * For a caller about to overwrite every element of this buffer (a fill over all of it, as
   * {@code zeroGrad(false)} does to a gradient): a deferred buffer gets an array of unspecified contents
   * without its value being computed, and its inputs go back. Returns whether it was deferred.
   */
  public boolean discardDeferred() {
    return resolveDeferred(false);
  }

  /**
   * Gives a deferred buffer its array, with the value computed into it when {@code compute}: a pooled array
   * when a scope is open on this thread (the buffer keeps its owner, so the array goes back to the pool with
   * it), else a fresh one. The inputs go back. Returns whether the buffer was deferred.
   */
  private synchronized boolean resolveDeferred(boolean compute) {
    Deferred d = deferred;
    if (d == null) return false;
    MemoryScope current = MemoryScope.current();
    float[] a = current != null ? (float[]) current.takeArray(DType.F32, size) : new float[size];
    if (compute) d.computeInto(a, 0);
    f32 = a;
    fromPool = current != null;
    deferred = null;
    d.release();
    return true;
  }

  /** Drops a deferred buffer that was never read: its inputs go back, and it counts as released. */
  void dropDeferred() {
    Deferred d = deferred;
    deferred = null;
    released = true;
    scope = null;
    if (d != null) d.release();
  }

  /** Whether this buffer's values are still to be computed. */
  boolean isDeferred() {
    return deferred != null;
  }

  /** Whether the array came from a {@link MemoryScope}'s pool. */
  boolean fromPool() {
    return fromPool;
  }

  /**
   * The backing array of any dtype ({@code float[]}, {@code double[]}, {@code long[]}, {@code int[]},
   * {@code byte[]} for BOOL and I8, or {@code short[]} bit patterns for BF16 and F16), for dtype-agnostic bulk copies in kernels and {@link TensorData} (kernels only, like
   * {@link #floats()}).
   */
  public Object array() {
    if (released) throw releasedError();
    if (memory != null) throw onDeviceError();
    return backing();
  }

  private Object backing() {
    if (deferred != null) materialize();
    return switch (dtype) {
      case F32 -> f32;
      case F64 -> f64;
      case I64 -> i64;
      case I32 -> i32;
      case BOOL, I8 -> bool;
      case BF16, F16 -> half;
    };
  }

  /** Hands the array back (for the pool) and makes every later access throw. */
  Object release() {
    Object a = backing();
    released = true;
    scope = null;
    f32 = null;
    f64 = null;
    i64 = null;
    i32 = null;
    bool = null;
    half = null;
    return a;
  }

  /** Whether this buffer went back to a {@link MemoryScope}'s pool (any access throws). */
  public boolean isReleased() {
    return released;
  }

  private IllegalStateException releasedError() {
    if (planned) {
      return new IllegalStateException("storage of " + size + " " + dtype.torchName() + " elements was the result of"
          + " a compiled call whose buffer the next call writes again (the module reuses its output buffer); copy"
          + " the result (clone()) to keep it past the next call");
    }
    return new IllegalStateException("storage of " + size + " " + dtype.torchName() + " elements was released when "
        + "the MemoryScope that created it closed; a tensor used after its scope must be kept (MemoryScope.keep) "
        + "or created outside the scope");
  }

  public static Storage wrap(float[] a) {
    return new Storage(DType.F32, a.length, a, null, null, null, null);
  }

  public static Storage wrap(double[] a) {
    return new Storage(DType.F64, a.length, null, a, null, null, null);
  }

  public static Storage wrap(long[] a) {
    return new Storage(DType.I64, a.length, null, null, a, null, null);
  }

  public static Storage wrap(int[] a) {
    return new Storage(DType.I32, a.length, null, null, null, a, null);
  }

  public static Storage wrapBool(byte[] a) {
    return new Storage(DType.BOOL, a.length, null, null, null, null, a);
  }

  /** An I8 storage over {@code a} (signed int8 values), not a copy. */
  public static Storage wrapInt8(byte[] a) {
    return of(DType.I8, a.length, a);
  }

  /** A BF16 storage over {@code bits} (bit patterns, see {@link HalfFloats}), not a copy. */
  public static Storage wrapBf16(short[] bits) {
    return of(DType.BF16, bits.length, bits);
  }

  /** An F16 storage over {@code bits} (bit patterns, see {@link HalfFloats}), not a copy. */
  public static Storage wrapF16(short[] bits) {
    return of(DType.F16, bits.length, bits);
  }

  public DType dtype() {
    return dtype;
  }

  public int size() {
    return size;
  }

  /** The backing array of an F32 storage (kernels only). */
  public float[] floats() {
    if (released) throw releasedError();
    if (deferred != null) materialize();
    if (memory != null) throw onDeviceError();
    return f32;
  }

  public double[] doubles() {
    if (released) throw releasedError();
    if (deferred != null) materialize();
    if (memory != null) throw onDeviceError();
    return f64;
  }

  public long[] longs() {
    if (released) throw releasedError();
    if (deferred != null) materialize();
    if (memory != null) throw onDeviceError();
    return i64;
  }

  public int[] ints() {
    if (released) throw releasedError();
    if (deferred != null) materialize();
    if (memory != null) throw onDeviceError();
    return i32;
  }

  public byte[] bools() {
    if (released) throw releasedError();
    if (deferred != null) materialize();
    if (memory != null) throw onDeviceError();
    return bool;
  }

  /** The backing signed bytes of an I8 storage (kernels only). */
  public byte[] int8s() {
    if (released) throw releasedError();
    if (deferred != null) materialize();
    if (memory != null) throw onDeviceError();
    return dtype == DType.I8 ? bool : null;
  }

  /** The backing bit patterns of a BF16 or F16 storage (kernels only; see {@link HalfFloats}). */
  public short[] halves() {
    if (released) throw releasedError();
    if (deferred != null) materialize();
    if (memory != null) throw onDeviceError();
    return half;
  }

  public double getDouble(int i) {
    if (released) throw releasedError();
    if (deferred != null) materialize();
    if (memory != null) throw onDeviceError();
    return switch (dtype) {
      case F32 -> f32[i];
      case F64 -> f64[i];
      case I64 -> i64[i];
      case I32 -> i32[i];
      case BOOL, I8 -> bool[i];
      case BF16 -> HalfFloats.bf16ToFloat(half[i]);
      case F16 -> HalfFloats.f16ToFloat(half[i]);
    };
  }

  public long getLong(int i) {
    if (released) throw releasedError();
    if (deferred != null) materialize();
    if (memory != null) throw onDeviceError();
    return switch (dtype) {
      case F32 -> (long) f32[i];
      case F64 -> (long) f64[i];
      case I64 -> i64[i];
      case I32 -> i32[i];
      case BOOL, I8 -> bool[i];
      case BF16 -> (long) HalfFloats.bf16ToFloat(half[i]);
      case F16 -> (long) HalfFloats.f16ToFloat(half[i]);
    };
  }

  /**
   * Stores {@code v} converted to this storage's type (floats truncate toward zero for integers, I8 keeps the low
   * 8 bits of that integer as PyTorch's casts do, bool is v != 0,
   * BF16 and F16 round the float32 value to nearest even as PyTorch).
   */
  public void setDouble(int i, double v) {
    if (released) throw releasedError();
    if (deferred != null) materialize();
    if (memory != null) throw onDeviceError();
    switch (dtype) {
      case F32 -> f32[i] = (float) v;
      case F64 -> f64[i] = v;
      case I64 -> i64[i] = (long) v;
      case I32 -> i32[i] = (int) v;
      case BOOL -> bool[i] = (byte) (v != 0 ? 1 : 0);
      case I8 -> bool[i] = (byte) (long) v;
      case BF16 -> half[i] = HalfFloats.bf16((float) v);
      case F16 -> half[i] = HalfFloats.f16((float) v);
    }
  }

  public void setLong(int i, long v) {
    if (released) throw releasedError();
    if (deferred != null) materialize();
    if (memory != null) throw onDeviceError();
    switch (dtype) {
      case F32 -> f32[i] = v;
      case F64 -> f64[i] = v;
      case I64 -> i64[i] = v;
      case I32 -> i32[i] = (int) v;
      case BOOL -> bool[i] = (byte) (v != 0 ? 1 : 0);
      case I8 -> bool[i] = (byte) v;
      case BF16 -> half[i] = HalfFloats.bf16((float) v);
      case F16 -> half[i] = HalfFloats.f16((float) v);
    }
  }

  /** Counter of in-place modifications, for autograd's saved-tensor checks. */
  public int version() {
    return version;
  }

  public void bumpVersion() {
    version++;
    lastWriter = null;
  }

  /** Bumps the version for in-place op {@code op}, remembered so that a stale saved tensor's error can name it. */
  public void bumpVersion(String op) {
    version++;
    lastWriter = op;
  }

  /** The in-place op that last bumped the version through {@link #bumpVersion(String)}, or null. */
  public String lastWriter() {
    return lastWriter;
  }
}
