package dev.ember.tensor;

import java.util.Arrays;
import java.util.stream.IntStream;

/**
 * Whether an in-place write would read elements it has already written, as PyTorch's {@code MemoryOverlap}: the
 * result of {@code y[1:].mul_(y[:3])} depends on the order the kernel visits the elements (and in Ember it also
 * depended on whether grad was recorded, which took a copy of the operand), so such a write is refused, as PyTorch
 * refuses it: the written tensor must not have several elements at one location, and an operand in its storage must
 * be the very same elements in the same order ({@code x.add_(x)}) or none of them.
 *
 * <p>Computed from offset, strides and shape only: the two views' element ranges in their storage. For two dense
 * views (every location in the range is one element) intersecting ranges mean shared elements, so the answer is
 * exact; when either has gaps the ranges can intersect with no element shared ({@code x[0::2]} and {@code x[1::2]})
 * or with some ({@code x[:, 1:]} and {@code x[:, :3]} of a [4, 4]): PyTorch calls that "too hard" and lets the write
 * run, and so does Ember, on a copy of the operand so that the result is the out-of-place one either way.
 */
public final class MemoryOverlap {
  private MemoryOverlap() {}

  /** How two tensors share memory, as PyTorch's {@code MemOverlapStatus}. */
  public enum Status {
    /** Different storage, no element, or disjoint element ranges. */
    NO,
    /** The same elements in the same order: an elementwise write reads each before writing it. */
    FULL,
    /** Dense views with intersecting ranges: some elements shared, or all in another order. */
    PARTIAL,
    /** Intersecting ranges where a view has gaps: maybe no element shared, maybe some. */
    TOO_HARD
  }

  /**
   * Whether several elements of {@code t} lie at one location: a dim of size > 1 with stride 0 (an expanded view).
   * As PyTorch's {@code has_internal_overlap}, other overlapping strides are not looked for (no Ember view op makes them).
   */
  public static boolean internal(Tensor t) {
    int[] shape = t.shapeRef();
    int[] strides = t.stridesRef();
    for (int d = 0; d < shape.length; d++) if (strides[d] == 0 && shape[d] > 1) return true;
    return false;
  }

  /** How {@code a} and {@code b} share memory. */
  public static Status of(Tensor a, Tensor b) {
    if (a.storage() != b.storage() || a.numel() == 0 || b.numel() == 0) return Status.NO;
    long[] ra = range(a);
    long[] rb = range(b);
    if (ra[1] < rb[0] || rb[1] < ra[0]) return Status.NO;
    if (sameElements(a, b)) return Status.FULL;
    return dense(a) && dense(b) ? Status.PARTIAL : Status.TOO_HARD;
  }

  /**
   * Fails when {@code input} (named {@code inputName}) partly overlaps {@code self}, which {@code op} writes while
   * reading it. Returns the status, so that the caller copies a {@link Status#TOO_HARD} operand before writing.
   */
  public static Status checkOperand(String op, Tensor self, String inputName, Tensor input) {
    Status s = of(self, input);
    if (s == Status.PARTIAL) {
      long[] rs = range(self);
      long[] ri = range(input);
      throw Check.fail(op, "some elements of " + inputName + " and of the written-to tensor refer to a single memory"
          + " location (storage elements " + ri[0] + ".." + ri[1] + " and " + rs[0] + ".." + rs[1] + ")", "self", self,
          inputName, input, "hint", "clone() " + inputName + " before the in-place operation");
    }
    return s;
  }

  /**
   * Fails when {@code op} would write {@code self} with several of its elements at one location; {@code operands}
   * (names and tensors, as {@link Check#fail}) are named in the message.
   */
  public static void checkWritable(String op, Tensor self, Object... operands) {
    if (!internal(self)) return;
    Object[] named = new Object[operands.length + 4];
    named[0] = "self";
    named[1] = self;
    System.arraycopy(operands, 0, named, 2, operands.length);
    named[named.length - 2] = "hint";
    named[named.length - 1] = "clone() it before the in-place operation";
    throw Check.fail(op, "more than one element of the written-to tensor refers to a single memory location (strides "
        + Arrays.toString(self.stridesRef()) + ")", named);
  }

  /** The lowest and highest storage element of a tensor with elements. */
  private static long[] range(Tensor t) {
    int[] shape = t.shapeRef();
    int[] strides = t.stridesRef();
    long lo = t.offset();
    long hi = t.offset();
    for (int d = 0; d < shape.length; d++) {
      long span = (long) (shape[d] - 1) * strides[d];
      if (span < 0) lo += span;
      else hi += span;
    }
    return new long[] {lo, hi};
  }

  /** Same offset, shape and strides, dims of size 1 aside (their stride moves nothing). */
  private static boolean sameElements(Tensor a, Tensor b) {
    return a.offset() == b.offset() && Arrays.equals(squeezed(a, true), squeezed(b, true))
        && Arrays.equals(squeezed(a, false), squeezed(b, false));
  }

  private static int[] squeezed(Tensor t, boolean shape) {
    int[] sh = t.shapeRef();
    int[] values = shape ? sh : t.stridesRef();
    return IntStream.range(0, sh.length).filter(d -> sh[d] != 1).map(d -> values[d]).toArray();
  }

  /** Every location from the lowest to the highest element holds one element (PyTorch's non-overlapping and dense). */
  private static boolean dense(Tensor t) {
    int[] shape = t.shapeRef();
    int[] strides = t.stridesRef();
    Integer[] dims = IntStream.range(0, shape.length).filter(d -> shape[d] != 1).boxed()
        .toArray(Integer[]::new);
    Arrays.sort(dims, (x, y) -> Long.compare(Math.abs((long) strides[x]), Math.abs((long) strides[y])));
    long expected = 1;
    for (int d : dims) {
      if (Math.abs((long) strides[d]) != expected) return false;
      expected *= shape[d];
    }
    return true;
  }
}
