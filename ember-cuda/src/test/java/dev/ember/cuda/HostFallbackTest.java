package dev.ember.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.Backend;
import dev.ember.backend.DeviceMemory;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Storage;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * HostFallback without a GPU: a fake device whose memory is a host buffer the test can read, and a fake
 * backend whose copy moves views between it and the host, counting the copies.
 */
class HostFallbackTest {
  private static final Backend CPU = Device.CPU.backend();

  /** Device memory that is really a host storage (the "device" the fake backend reads). */
  private record FakeMemory(Storage host) implements DeviceMemory {
    @Override
    public Device device() {
      return Device.cuda(0);
    }

    @Override
    public long address() {
      return 0;
    }

    @Override
    public long byteSize() {
      return (long) host.size() * host.dtype().itemSize();
    }

    @Override
    public void release() {}
  }

  private final AtomicInteger copies = new AtomicInteger();

  /** A Backend whose only working method is copy, between fake device views and host views. */
  private Backend fakeDevice() {
    return (Backend) Proxy.newProxyInstance(Backend.class.getClassLoader(), new Class<?>[] {Backend.class},
        (p, m, args) -> switch (m.getName()) {
          case "copy" -> {
            copies.incrementAndGet();
            CPU.copy(hostSide((View) args[0]), hostSide((View) args[1]));
            yield null;
          }
          case "name" -> "fake";
          case "device" -> Device.cuda(0);
          case "hashCode" -> System.identityHashCode(p);
          case "equals" -> p == args[0];
          case "toString" -> "fake";
          default -> throw new AssertionError("the fallback called " + m.getName() + " on the device backend");
        });
  }

  private static View hostSide(View v) {
    if (!v.storage().onDevice()) return v;
    Storage host = ((FakeMemory) v.storage().memory()).host();
    return new StridedView(host, v.shapeRef(), v.stridesRef(), v.offset());
  }

  private static Storage deviceStorage(float... values) {
    return Storage.onDevice(DType.F32, values.length, new FakeMemory(Storage.wrap(values.clone())));
  }

  private static float[] deviceValues(Storage s) {
    return ((FakeMemory) s.memory()).host().floats();
  }

  private HostFallback fallback;

  @BeforeEach
  void setUp() {
    fallback = HostFallback.of(fakeDevice(), CPU);
    HostFallback.resetCalls();
    copies.set(0);
  }

  @Test
  void sgdUpdatesTheDeviceParameterAsTheCpuDoes() {
    float[] p = {1, 2, 3, 4};
    float[] g = {0.5f, -1, 2, 0};
    Storage dp = deviceStorage(p);
    Storage dg = deviceStorage(g);
    fallback.optimizer().sgd(new StridedView(dp, new int[] {4}, new int[] {1}, 0),
        new StridedView(dg, new int[] {4}, new int[] {1}, 0), 0.1, 0.01, 1);
    float[] hp = p.clone();
    CPU.optimizer().sgd(StridedView.of(Storage.wrap(hp), new int[] {4}, new int[] {1}, 0),
        StridedView.of(Storage.wrap(g.clone()), new int[] {4}, new int[] {1}, 0), 0.1, 0.01, 1);
    assertArrayEquals(hp, deviceValues(dp));
    assertArrayEquals(g, deviceValues(dg), "an input comes back unchanged");
    assertEquals(1, HostFallback.calls("optimizer.sgd"));
    assertEquals(4, copies.get(), "two storages, each copied to the host and back");
  }

  @Test
  void aliasedViewsStayAliasedOnTheHost() {
    // grad is param itself: p = p - lr * (p + wd * p). A copy per view would copy the unchanged grad back over
    // the updated param.
    Storage dp = deviceStorage(1, 2, 3, 4);
    View v = new StridedView(dp, new int[] {4}, new int[] {1}, 0);
    fallback.optimizer().sgd(v, v, 0.5, 0, 1);
    float[] expect = {1, 2, 3, 4};
    View h = StridedView.of(Storage.wrap(expect), new int[] {4}, new int[] {1}, 0);
    CPU.optimizer().sgd(h, h, 0.5, 0, 1);
    assertArrayEquals(expect, deviceValues(dp));
    assertEquals(2, copies.get(), "one storage: one copy each way");
  }

  @Test
  void stridedViewsWithOffsetsKeepTheirGeometry() {
    // param is a transposed [2, 3] view at offset 2 of a 10-element storage; the elements around it must
    // survive the round trip
    float[] all = {9, 9, 1, 2, 3, 4, 5, 6, 9, 9};
    Storage dp = deviceStorage(all);
    View param = new StridedView(dp, new int[] {3, 2}, new int[] {1, 3}, 2);
    Storage dg = deviceStorage(1, 1, 1, 1, 1, 1);
    View grad = new StridedView(dg, new int[] {3, 2}, new int[] {2, 1}, 0);
    fallback.optimizer().sgd(param, grad, 1, 0, 1);
    assertArrayEquals(new float[] {9, 9, 0, 1, 2, 3, 4, 5, 9, 9}, deviceValues(dp));
  }

  @Test
  void returnValuesAndScalarsPassThrough() {
    float[] x = {1, 2, 3, 4, 5, 6};
    Storage dx = deviceStorage(x);
    double[][] viaFallback = fallback.normalization().rowStats(new StridedView(dx, new int[] {2, 3}, new int[] {3, 1}, 0),
        2, 3, 1e-5, false);
    double[][] direct = CPU.normalization().rowStats(StridedView.of(Storage.wrap(x.clone()), new int[] {2, 3},
        new int[] {3, 1}, 0), 2, 3, 1e-5, false);
    assertArrayEquals(direct[0], viaFallback[0]);
    assertArrayEquals(direct[1], viaFallback[1]);
    assertEquals(1, HostFallback.calls("normalization.rowStats"));
  }

  @Test
  void randomFillsDrawTheCpuStream() {
    Storage d = deviceStorage(new float[16]);
    fallback.random().normal(new StridedView(d, new int[] {16}, new int[] {1}, 0), 0, 1, new Generator(7));
    float[] expect = new float[16];
    CPU.random().normal(StridedView.of(Storage.wrap(expect), new int[] {16}, new int[] {1}, 0), 0, 1, new Generator(7));
    assertArrayEquals(expect, deviceValues(d));
  }

  @Test
  void hostViewsPassThroughWithoutCopies() {
    float[] p = {1, 2};
    View hp = StridedView.of(Storage.wrap(p), new int[] {2}, new int[] {1}, 0);
    View hg = StridedView.of(Storage.wrap(new float[] {1, 1}), new int[] {2}, new int[] {1}, 0);
    fallback.optimizer().sgd(hp, hg, 1, 0, 1);
    assertArrayEquals(new float[] {0, 1}, p);
    assertEquals(0, copies.get());
  }

  @Test
  void countsAccumulateAndReset() {
    Storage d = deviceStorage(new float[4]);
    View v = new StridedView(d, new int[] {4}, new int[] {1}, 0);
    for (int i = 0; i < 3; i++) fallback.random().uniform(v, 0, 1, new Generator(1));
    assertEquals(3, HostFallback.calls("random.uniform"));
    assertTrue(HostFallback.calls().containsKey("random.uniform"));
    HostFallback.resetCalls();
    assertEquals(0, HostFallback.calls("random.uniform"));
  }

  @Test
  void exceptionsOfTheCpuKernelReachTheCaller() {
    Storage d = deviceStorage(new float[4]);
    View v = new StridedView(d, new int[] {4}, new int[] {1}, 0);
    // the CPU's random fills take contiguous F32/F64 outputs; an I64 output is refused there
    Storage di = Storage.onDevice(DType.I64, 4, new FakeMemory(Storage.wrap(new long[4])));
    View vi = new StridedView(di, new int[] {4}, new int[] {1}, 0);
    RuntimeException direct = assertThrows(RuntimeException.class, () -> CPU.random().uniform(
        StridedView.of(Storage.wrap(new long[4]), new int[] {4}, new int[] {1}, 0), 0, 1, new Generator(1)));
    RuntimeException e = assertThrows(RuntimeException.class, () -> fallback.random().uniform(vi, 0, 1, new Generator(1)));
    assertEquals(direct.getClass(), e.getClass(), "the CPU's exception itself, not a reflection wrapper");
    fallback.random().uniform(v, 0, 1, new Generator(1));
    assertTrue(Arrays.stream(new int[] {0, 1, 2, 3}).allMatch(i -> deviceValues(d)[i] >= 0 && deviceValues(d)[i] < 1));
  }

  @Test
  void ofRefusesANonCpuBackend() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HostFallback.of(CPU, fakeDevice()));
    assertTrue(e.getMessage().contains("cpu must be a CPU backend"), e.getMessage());
  }
}
