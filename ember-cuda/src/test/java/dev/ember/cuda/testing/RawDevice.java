package dev.ember.cuda.testing;

import dev.ember.backend.DeviceMemory;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.tensor.Device;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;

/**
 * Device tensors made straight from the driver, for testing one kernel family without the rest of the backend:
 * {@link #upload} copies a contiguous host tensor into fresh device memory, {@link #download} copies it back.
 */
public final class RawDevice {
  private RawDevice() {}

  record Memory(CudaContext ctx, long address, long byteSize) implements DeviceMemory {
    @Override
    public Device device() {
      return Device.of("cuda", ctx.ordinal());
    }

    @Override
    public void release() {
      ctx.driver().memFree(address);
    }
  }

  /** A device copy of {@code t} (contiguous F32, F64, I64, I32 or BOOL), with t's shape. */
  public static Tensor upload(CudaContext ctx, Tensor t) {
    Tensor c = t.contiguous();
    long bytes = Math.max(1, c.numel() * c.dtype().itemSize());
    long ptr = ctx.driver().memAlloc(bytes);
    if (c.numel() > 0) {
      ctx.driver().memcpyHtoDSync(ptr, dev.ember.cuda.HostSegments.of(c.storage()).asSlice((long) c.offset() * c.dtype().itemSize(),
          c.numel() * c.dtype().itemSize()), c.numel() * c.dtype().itemSize());
    }
    Storage s = Storage.onDevice(c.dtype(), (int) c.numel(), new Memory(ctx, ptr, bytes));
    return new Tensor(s, c.shape(), contiguousStrides(c.shape()), 0);
  }

  /** A host copy of the contiguous device tensor {@code d}. */
  public static Tensor download(CudaContext ctx, Tensor d) {
    Tensor h = Tensor.zeros(d.dtype(), d.shape());
    if (d.numel() > 0) {
      long src = d.storage().memory().address() + (long) d.offset() * d.dtype().itemSize();
      ctx.driver().memcpyDtoHSync(dev.ember.cuda.HostSegments.of(h.storage()), src, d.numel() * d.dtype().itemSize());
    }
    return h;
  }

  private static int[] contiguousStrides(int[] shape) {
    int[] st = new int[shape.length];
    int s = 1;
    for (int i = shape.length - 1; i >= 0; i--) {
      st[i] = s;
      s *= shape[i];
    }
    return st;
  }
}
