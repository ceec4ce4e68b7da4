package dev.ember.tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

/**
 * The one door through which code outside ember-core moves a tensor's elements in bulk: weight files,
 * checkpoints, dataset readers and the data pipeline's copies. Everything else goes through tensor ops.
 *
 * <p>Elements are addressed by their row-major index in a contiguous tensor (0 is the first element, whatever
 * the tensor's offset in its storage), in the tensor's own dtype; a BOOL element is one byte, 0 or 1, an I8 element one signed byte, and a BF16 or
 * F16 element is its 16-bit pattern (see {@link HalfFloats}). Byte
 * buffers are read and written from their position, in their byte order, and their position is left as it was.
 * Nothing is converted and nothing is checked beyond what the JDK's bulk copies check: a caller validates what it
 * reads (a BOOL byte other than 0 or 1, say) before or after the copy.
 */
public final class TensorData {
  private TensorData() {}

  /** A contiguous tensor of {@code shape} over {@code data} itself, not a copy: the caller hands the array over. */
  public static Tensor wrap(float[] data, int... shape) {
    return wrap(Storage.wrap(data), data.length, shape);
  }

  /** A contiguous tensor of {@code shape} over {@code data} itself, not a copy: the caller hands the array over. */
  public static Tensor wrap(double[] data, int... shape) {
    return wrap(Storage.wrap(data), data.length, shape);
  }

  /** A contiguous tensor of {@code shape} over {@code data} itself, not a copy: the caller hands the array over. */
  public static Tensor wrap(long[] data, int... shape) {
    return wrap(Storage.wrap(data), data.length, shape);
  }

  /** A contiguous I8 tensor of {@code shape} over the signed bytes {@code data} itself, not a copy. */
  public static Tensor wrapInt8(byte[] data, int... shape) {
    return wrap(Storage.wrapInt8(data), data.length, shape);
  }

  /**
   * A contiguous BF16 ({@code dtype} {@link DType#BF16}) or F16 tensor of {@code shape} over the bit patterns
   * {@code bits} itself, not a copy.
   */
  public static Tensor wrapHalf(short[] bits, DType dtype, int... shape) {
    return switch (dtype) {
      case BF16 -> wrap(Storage.wrapBf16(bits), bits.length, shape);
      case F16 -> wrap(Storage.wrapF16(bits), bits.length, shape);
      default -> throw new IllegalArgumentException("TensorData.wrapHalf: dtype must be bfloat16 or float16, got "
          + dtype.torchName());
    };
  }

  private static Tensor wrap(Storage s, int length, int[] shape) {
    int[] sh = shape.clone();
    Tensor.checkShape("TensorData.wrap", sh);
    if (Shapes.numel(sh) != length) {
      throw Check.fail("TensorData.wrap", "shape " + Shapes.str(sh) + " needs " + Shapes.numel(sh) + " elements, got "
          + length, "shape", sh);
    }
    return new Tensor(s, sh, Shapes.contiguousStrides(sh), 0);
  }

  /**
   * {@code t} as a contiguous tensor in host memory: itself when it already is one, else a copy (from its device
   * and/or into one block), without the tape. Writers of files call it first: a model on a GPU saves like one on
   * the CPU.
   */
  public static Tensor hostContiguous(Tensor t) {
    Tensor h = t.storage().onDevice() ? t.detach().cpu() : t;
    return h.isContiguous() ? h : h.detach().cloneContiguous();
  }

  /** Writes elements {@code [from, from + count)} of contiguous {@code t} into {@code dst}. */
  public static void read(Tensor t, long from, int count, ByteBuffer dst) {
    Storage s = t.storage();
    int i = index(t, from);
    switch (t.dtype()) {
      case F32 -> dst.asFloatBuffer().put(s.floats(), i, count);
      case F64 -> dst.asDoubleBuffer().put(s.doubles(), i, count);
      case I64 -> dst.asLongBuffer().put(s.longs(), i, count);
      case I32 -> dst.asIntBuffer().put(s.ints(), i, count);
      case BOOL, I8 -> dst.put(dst.position(), (byte[]) s.array(), i, count);
      case BF16, F16 -> dst.asShortBuffer().put(s.halves(), i, count);
    }
  }

  /**
   * Reads {@code count} elements of {@code t}'s dtype from {@code src} into elements {@code [at, at + count)} of
   * contiguous {@code t}.
   */
  public static void write(ByteBuffer src, Tensor t, long at, int count) {
    Storage s = t.storage();
    int i = index(t, at);
    switch (t.dtype()) {
      case F32 -> src.asFloatBuffer().get(s.floats(), i, count);
      case F64 -> src.asDoubleBuffer().get(s.doubles(), i, count);
      case I64 -> src.asLongBuffer().get(s.longs(), i, count);
      case I32 -> src.asIntBuffer().get(s.ints(), i, count);
      case BOOL, I8 -> src.get(src.position(), (byte[]) s.array(), i, count);
      case BF16, F16 -> src.asShortBuffer().get(s.halves(), i, count);
    }
  }

  /**
   * Copies {@code count} elements laid out as {@code layout} (its carrier must be the dtype's: float for F32,
   * double for F64, long for I64, int for I32, byte for BOOL and I8, short for BF16 and F16; its byte order is the source's) from byte
   * {@code offset} of {@code src} into elements {@code [at, at + count)} of contiguous {@code t}.
   */
  public static void write(MemorySegment src, ValueLayout layout, long offset, Tensor t, long at, int count) {
    Storage s = t.storage();
    int i = index(t, at);
    switch (t.dtype()) {
      case F32 -> MemorySegment.copy(src, (ValueLayout.OfFloat) layout, offset, s.floats(), i, count);
      case F64 -> MemorySegment.copy(src, (ValueLayout.OfDouble) layout, offset, s.doubles(), i, count);
      case I64 -> MemorySegment.copy(src, (ValueLayout.OfLong) layout, offset, s.longs(), i, count);
      case I32 -> MemorySegment.copy(src, (ValueLayout.OfInt) layout, offset, s.ints(), i, count);
      case BOOL, I8 -> MemorySegment.copy(src, (ValueLayout.OfByte) layout, offset, (byte[]) s.array(), i, count);
      case BF16, F16 -> MemorySegment.copy(src, (ValueLayout.OfShort) layout, offset, s.halves(), i, count);
    }
  }

  /**
   * Copies elements {@code [from, from + count)} of contiguous {@code src} to elements {@code [at, at + count)} of
   * contiguous {@code dst}, of the same dtype (one {@link System#arraycopy}: a batch's samples, a crop's rows).
   */
  public static void copy(Tensor src, long from, Tensor dst, long at, int count) {
    if (src.dtype() != dst.dtype()) {
      throw new IllegalArgumentException("TensorData.copy: dtypes differ: " + src.dtype() + " and " + dst.dtype());
    }
    System.arraycopy(src.storage().array(), index(src, from), dst.storage().array(), index(dst, at), count);
  }

  /**
   * Copies row {@code rows[k]} (index along the first dimension) of contiguous {@code src} to row k of contiguous
   * {@code dst}, for every k: one {@link System#arraycopy} per row (a dataset's batch of samples). Both have the
   * same dtype and the same row length.
   */
  public static void gatherRows(Tensor src, int[] rows, Tensor dst) {
    if (src.dtype() != dst.dtype()) {
      throw new IllegalArgumentException("TensorData.gatherRows: dtypes differ: " + src.dtype() + " and "
          + dst.dtype());
    }
    int row = src.shapeRef().length == 0 || src.shapeRef()[0] == 0 ? 0 : (int) (src.numel() / src.shapeRef()[0]);
    Object from = src.storage().array();
    Object to = dst.storage().array();
    int off = index(src, 0);
    int at = index(dst, 0);
    for (int k = 0; k < rows.length; k++) System.arraycopy(from, off + rows[k] * row, to, at + k * row, row);
  }

  /** The storage index of element {@code i} of contiguous {@code t}. */
  private static int index(Tensor t, long i) {
    if (!t.isContiguous()) {
      throw new IllegalArgumentException("TensorData: the tensor must be contiguous, got shape "
          + Shapes.str(t.shapeRef()) + " strides " + Shapes.str(t.stridesRef()));
    }
    return Math.toIntExact(t.offset() + i);
  }
}
