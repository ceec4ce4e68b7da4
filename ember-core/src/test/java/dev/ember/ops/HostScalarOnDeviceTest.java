package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.FakeDevice;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A host scalar meeting a device tensor (x.mul(2.5), x.add(1), where(c, x, 0)) is filled on the device rather than
 * copied up (a GPU's copy from the host waits for every queued kernel), with the CPU's results; a scalar whose value
 * a double cannot carry (a large int64), or that needs a gradient, still moves by copy.
 */
class HostScalarOnDeviceTest {
  private static List<String> calls(Runnable body) throws Exception {
    List<String> seen = new ArrayList<>();
    try (AutoCloseable w = FakeDevice.watch((name, args) -> {
      if (name.equals("copy")) seen.add(((View) args[0]).storage().onDevice() ? "copy" : "upload");
      if (name.equals("fill")) seen.add("fill");
    })) {
      body.run();
    }
    return seen;
  }

  @Test
  void scalarsAreFilledOnTheDevice() throws Exception {
    Tensor x = Tensor.randn(new Generator(1), 4, 5);
    Tensor xd = x.to(FakeDevice.DEVICE);
    Tensor[] got = new Tensor[4];
    List<String> seen = calls(() -> {
      got[0] = xd.mul(2.5);
      got[1] = xd.add(-0.0);
      got[2] = xd.to(DType.F64).sub(1e-300);
      got[3] = xd.to(DType.I64).mul(3);
    });
    assertTrue(!seen.contains("upload"), seen.toString());
    assertEquals(4, seen.stream().filter("fill"::equals).count(), seen.toString());
    assertArrayEquals(x.mul(2.5).toFloatArray(), got[0].to(Device.CPU).toFloatArray());
    assertArrayEquals(x.add(-0.0).toFloatArray(), got[1].to(Device.CPU).toFloatArray());
    assertArrayEquals(x.to(DType.F64).sub(1e-300).toDoubleArray(), got[2].to(Device.CPU).toDoubleArray());
    assertArrayEquals(x.to(DType.I64).mul(3).toLongArray(), got[3].to(Device.CPU).toLongArray());
    long big = (1L << 60) + 1;
    Tensor[] g = new Tensor[1];
    List<String> bigSeen = calls(() -> g[0] = xd.to(DType.I64).add(Tensor.of(new long[] {big}, 1).reshape()));
    assertTrue(bigSeen.contains("upload"), "an int64 beyond 2^53 is copied: " + bigSeen);
    assertArrayEquals(x.to(DType.I64).add(Tensor.of(new long[] {big}, 1).reshape()).toLongArray(), g[0].to(Device.CPU).toLongArray());
  }
}
