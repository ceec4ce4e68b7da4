package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.backend.Backend;
import dev.ember.backend.DeviceMemory;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.cuda.HostSegments;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.testing.Gpu;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * GPU test support without the CUDA backend: device views made by copying host storages whole with the driver
 * (geometry kept), copies back, random host data in plain, gapped and transposed layouts, and comparisons with
 * the CPU backend's results. Skips the test (Gpu.assumeDevice) where there is no GPU.
 */
final class OnDevice implements AutoCloseable {
  static final Backend CPU = Device.CPU.backend();

  /** Fails unless no call of the kernel family {@code family} ("attention", "normalization") fell back to the host. */
  static void assertNoHostFallback(String family) {
    assertEquals(0, dev.ember.cuda.HostFallback.calls().keySet().stream().filter(k -> k.startsWith(family + "."))
        .count(), family + " calls fell back to the host: " + dev.ember.cuda.HostFallback.calls());
  }
  final CudaContext ctx;
  private final List<Long> allocations = new ArrayList<>();

  /** Device memory the test frees itself at close. */
  private record Mem(long address, long byteSize) implements DeviceMemory {
    @Override
    public Device device() {
      return Device.cuda(0);
    }

    @Override
    public void release() {}
  }

  OnDevice() {
    Gpu.assumeDevice();
    ctx = CudaContext.of(0);
    ctx.makeCurrent();
  }

  /** A device view of {@code host}'s geometry over a device copy of its whole storage. */
  View upload(View host) {
    Storage s = host.storage();
    long bytes = (long) s.size() * s.dtype().itemSize();
    long p = ctx.driver().memAlloc(Math.max(bytes, 256));
    allocations.add(p);
    if (bytes > 0) ctx.driver().memcpyHtoDSync(p, HostSegments.of(s), bytes);
    Storage d = Storage.onDevice(s.dtype(), s.size(), new Mem(p, bytes));
    return new StridedView(d, host.shapeRef().clone(), host.stridesRef().clone(), host.offset());
  }

  /** A host view of {@code dev}'s geometry over a host copy of its whole storage (waits for queued work). */
  StridedView download(View dev) {
    Storage s = dev.storage();
    Storage h = Storage.allocate(s.dtype(), s.size());
    long bytes = (long) s.size() * s.dtype().itemSize();
    ctx.synchronize();
    if (bytes > 0) ctx.driver().memcpyDtoHSync(HostSegments.of(h), s.memory().address(), bytes);
    return new StridedView(h, dev.shapeRef().clone(), dev.stridesRef().clone(), dev.offset());
  }

  @Override
  public void close() {
    ctx.synchronize();
    for (long p : allocations) ctx.driver().memFree(p);
    allocations.clear();
  }

  // ------------------------------------------------------------------ host data

  enum Layout { CONTIGUOUS, GAPPED, TRANSPOSED }

  /** Random values: floats in [-1, 1), integers in [-lim, lim], bools 0/1. */
  static StridedView random(Random r, DType t, int lim, int... shape) {
    StridedView v = StridedView.allocate(t, shape);
    Storage s = v.storage();
    for (int i = 0; i < s.size(); i++) {
      switch (t) {
        case F32, F64 -> s.setDouble(i, r.nextDouble() * 2 - 1);
        case I64, I32 -> s.setLong(i, r.nextInt(2 * lim + 1) - lim);
        case BOOL -> s.setLong(i, r.nextInt(2));
      }
    }
    return v;
  }

  /**
   * {@code src}'s values in a view of the given layout: gapped (every stride doubled, offset 3), transposed (the
   * last two axes stored swapped) or contiguous (src itself).
   */
  static StridedView layout(StridedView src, Layout layout) {
    int[] shape = src.shapeRef();
    int r = shape.length;
    StridedView v = switch (layout) {
      case CONTIGUOUS -> src;
      case GAPPED -> {
        int[] st = Shapes.contiguousStrides(shape);
        for (int d = 0; d < r; d++) st[d] *= 2;
        yield new StridedView(Storage.allocate(src.dtype(), 2 * Math.max(1, src.numel()) + 3), shape.clone(), st, 3);
      }
      case TRANSPOSED -> {
        if (r < 2) yield src;
        int[] swapped = shape.clone();
        swapped[r - 1] = shape[r - 2];
        swapped[r - 2] = shape[r - 1];
        yield StridedView.transpose(StridedView.allocate(src.dtype(), swapped), -1, -2);
      }
    };
    if (v != src) CPU.copy(src, v);
    return v;
  }

  /** Element i (row-major) of v as a double, or its long for integer dtypes (widened). */
  private static long offsetOf(View v, long i) {
    long off = v.offset();
    int[] sh = v.shapeRef();
    for (int d = sh.length - 1; d >= 0; d--) {
      off += (i % sh[d]) * v.stridesRef()[d];
      i /= sh[d];
    }
    return off;
  }

  /**
   * Asserts actual matches expected elementwise: integers and bools exactly, floats within atol + rtol * |e|
   * (NaN matches NaN; rtol and atol 0 ask for the same bits, -0 and 0 apart).
   */
  static void assertClose(View expected, View actual, double rtol, double atol, String what) {
    assertEquals(expected.dtype(), actual.dtype(), what);
    if (!Arrays.equals(expected.shapeRef(), actual.shapeRef())) {
      fail(what + ": shape " + Arrays.toString(actual.shapeRef()) + " != " + Arrays.toString(expected.shapeRef()));
    }
    long n = expected.numel();
    for (long i = 0; i < n; i++) {
      int eo = (int) offsetOf(expected, i);
      int ao = (int) offsetOf(actual, i);
      if (!expected.dtype().isFloatingPoint()) {
        long e = expected.storage().getLong(eo);
        long a = actual.storage().getLong(ao);
        if (e != a) fail(what + ": element " + i + " is " + a + ", expected " + e);
        continue;
      }
      double e = expected.storage().getDouble(eo);
      double a = actual.storage().getDouble(ao);
      boolean ok = Double.isNaN(e) ? Double.isNaN(a)
          : rtol == 0 && atol == 0 ? Double.doubleToRawLongBits(e) == Double.doubleToRawLongBits(a)
          : e == a || Math.abs(e - a) <= atol + rtol * Math.abs(e);
      if (!ok) fail(what + ": element " + i + " is " + a + ", expected " + e + " (|diff| " + Math.abs(e - a) + ")");
    }
  }
}
