package dev.ember.cuda.kernels;

import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Shapes;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * The host side of the kernels' {@code EGeo} struct (eg_common.cuh) and the geometry helpers the launchers
 * share: packing a shape, strides and offset into the struct's 144 bytes, device
 * addresses of views and dtype tags of kernel names.
 */
final class Geometry {
  /** The most dimensions a kernel geometry holds (EG_MAXR). */
  static final int MAX_RANK = 8;
  /** sizeof(EGeo): int rank, pad, long long shape[8], long long stride[8], long long offset. */
  static final long BYTES = 144;
  static final long ALIGN = 8;

  private Geometry() {}

  private static final ThreadLocal<MemorySegment> SCRATCH =
      ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(BYTES, ALIGN));

  /**
   * An EGeo struct in the calling thread's scratch segment, valid until its next pack: {@link
   * dev.ember.cuda.lib.KernelArgs#bytes} copies it at once. {@code op} names the operation for the error of a
   * too-high rank.
   */
  static MemorySegment pack(String op, int[] shape, long[] strides, long offset) {
    if (shape.length > MAX_RANK) {
      throw new IllegalArgumentException(op + ": cuda kernels take at most " + MAX_RANK + " dimensions after merging"
          + " contiguous ones, got " + shape.length + ": shape=" + Arrays.toString(shape));
    }
    MemorySegment s = SCRATCH.get();
    s.fill((byte) 0);
    s.set(ValueLayout.JAVA_INT, 0, shape.length);
    for (int d = 0; d < shape.length; d++) {
      s.set(ValueLayout.JAVA_LONG, 8 + 8L * d, shape[d]);
      s.set(ValueLayout.JAVA_LONG, 72 + 8L * d, strides[d]);
    }
    s.set(ValueLayout.JAVA_LONG, 136, offset);
    return s;
  }

  static MemorySegment pack(String op, int[] shape, int[] strides, long offset) {
    return pack(op, shape, longs(strides), offset);
  }

  /** The geometry of {@code shape} walked over {@code v}'s strides from {@code v}'s offset. */
  static MemorySegment pack(String op, int[] shape, View v) {
    return pack(op, shape, v.stridesRef(), v.offset());
  }

  /** A view's own geometry. */
  static MemorySegment pack(String op, View v) {
    return pack(op, v.shapeRef(), v.stridesRef(), v.offset());
  }

  static long[] longs(int[] a) {
    long[] out = new long[a.length];
    for (int i = 0; i < a.length; i++) out[i] = a[i];
    return out;
  }

  /** The kernel-name tag of a dtype: f32, f64, i64, i32, b8. */
  static String tag(DType t) {
    return switch (t) {
      case F32 -> "f32";
      case F64 -> "f64";
      case I64 -> "i64";
      case I32 -> "i32";
      case BOOL -> "b8";
      case BF16 -> "bf16";
      case F16 -> "f16";
      case I8 -> throw halfUnsupported(t);
    };
  }

  /**
   * The error for a tensor of a storage-only dtype reaching a CUDA kernel that computes: BF16 and F16 are moved,
   * converted and multiplied (GEMM) on CUDA, but arithmetic on them runs in float32 (the op layer widens them
   * first), and I8 has no CUDA kernels.
   */
  static IllegalArgumentException halfUnsupported(DType t) {
    return new IllegalArgumentException("cuda kernels: dtype " + t.torchName() + " is not supported on CUDA devices "
        + "by this kernel (16-bit floats are moved, converted and multiplied on cuda, computed on in float32); "
        + "convert to float32 first (x.to(DType.F32))");
  }

  /** The tag of the unsigned type a plain move copies elements of this dtype's size as: u8, u16, u32, u64. */
  static String moveTag(DType t) {
    return switch (t.itemSize()) {
      case 1 -> "u8";
      case 2 -> "u16";
      case 4 -> "u32";
      default -> "u64";
    };
  }

  /** The base device address of a view's storage (offsets travel in the geometry). */
  static long base(String op, String name, View v) {
    if (!v.storage().onDevice()) {
      throw new IllegalArgumentException(op + ": " + name + " is on the cpu, expected a cuda tensor: " + name + "="
          + Shapes.str(v.shapeRef()));
    }
    return v.storage().memory().address();
  }

  /** The device address of a view's first element (for kernels that take contiguous operands). */
  static long first(String op, String name, View v) {
    return base(op, name, v) + (long) v.offset() * v.dtype().itemSize();
  }

  /** The smallest power of two at least {@code n}, clamped to [32, 256]: a block size for a reduction of n. */
  static int blockFor(long n) {
    int t = 32;
    while (t < 256 && t < n) t <<= 1;
    return t;
  }
}
