package dev.ember.testing;

import dev.ember.backend.AttentionKernels;
import dev.ember.backend.Backend;
import dev.ember.backend.ConvolutionKernels;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Storage;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * The backend of a fake device ({@link FakeDevice}): it keeps its buffers in {@link FakeMemory} and computes every
 * primitive by mirroring the fake buffers its arguments view into host buffers, running the CPU backend's kernel on
 * views of the same geometry over the mirrors, and copying the mirrors back. It is built as a
 * {@link Proxy} over {@link Backend} and each kernel family ({@code normalization()}, {@code attention()}, ...), so
 * every primitive the SPI has, now or later, goes through the same path.
 *
 * <p>Because the memory is not in any {@link Storage} array, every op that reads a fake tensor's data through a
 * host accessor ({@code floats()}, {@code item()} without {@code cpu()}, ...) instead of through the backend fails:
 * this is what makes the fake device a test of device-correctness.
 */
final class FakeBackend implements InvocationHandler {
  private final Device device;
  private final Object target;
  private final Backend cpu;

  private FakeBackend(Device device, Object target, Backend cpu) {
    this.device = device;
    this.target = target;
    this.cpu = cpu;
  }

  /** The fake backend of {@code device}, computing with {@code cpu}. */
  static Backend create(Device device, Backend cpu) {
    return proxy(Backend.class, device, cpu, cpu);
  }

  private static <T> T proxy(Class<T> type, Device device, Object target, Backend cpu) {
    return type.cast(Proxy.newProxyInstance(FakeBackend.class.getClassLoader(), new Class<?>[] {type},
        new FakeBackend(device, target, cpu)));
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    String name = method.getName();
    int n = args == null ? 0 : args.length;
    if (method.getDeclaringClass() == Object.class) {
      return switch (name) {
        case "toString" -> "FakeBackend(" + device + ")";
        case "hashCode" -> System.identityHashCode(proxy);
        case "equals" -> proxy == args[0];
        default -> throw new IllegalStateException("FakeBackend: unexpected Object method " + name);
      };
    }
    if (target instanceof Backend) {
      switch (name) {
        case "name":
          return "fake";
        case "device":
          return device;
        case "allocate":
          return allocate((DType) args[0], (long) args[1], (boolean) args[2]);
        case "matmulWritesHalf":
          return FakeDevice.writesHalf();
        case "synchronize":
          FakeMemory.counters(device).syncs().incrementAndGet();
          return null;
        case "copyNonBlocking":
          FakeMemory.counters(device).nonBlockingCopies().incrementAndGet();
          break; // then copies as any primitive does
        case "memoryStats":
          FakeMemory.Counters c = FakeMemory.counters(device);
          return java.util.Map.of("allocated_bytes.all.current", c.current().get(), "allocated_bytes.all.peak",
              c.peak().get(), "reserved_bytes.all.peak", c.peak().get());
        default:
          break;
      }
    }
    if (target instanceof ConvolutionKernels && name.equals("readsHalf")) return FakeDevice.convolutionReadsHalf();
    Class<?> ret = method.getReturnType();
    if (n == 0 && ret.isInterface() && ret.getPackageName().equals("dev.ember.backend")
        && ret.getSimpleName().endsWith("Kernels")) {
      return proxy(ret, device, call(method, target, args), cpu); // a kernel family: normalization(), attention(), ...
    }
    boolean copy = target instanceof Backend && (name.equals("copy") || name.equals("copyNonBlocking"));
    for (int i = 0; i < n; i++) {
      // only copy moves data between the host and the device; a host view anywhere else is an op that forgot to
      // move an operand (a CUDA kernel would read a host address as a device pointer)
      if (args[i] instanceof View v && !v.storage().onDevice() && !copy) {
        throw new IllegalArgumentException("FakeBackend(" + device + ")." + name + ": argument " + i
            + " is a host (cpu) view " + java.util.Arrays.toString(v.shapeRef()) + "; only copy takes host views");
      }
    }
    FakeDevice.called(name, args);
    Mirrors mirrors = new Mirrors();
    Object[] host = new Object[n];
    for (int i = 0; i < n; i++) host[i] = mirrors.host(args[i]);
    Object result;
    if (target instanceof Backend cpu && name.equals("matmul") && ((View) host[2]).dtype().isHalf()) {
      matmulIntoHalf(cpu, host); // as a backend that writes half: the float32 product rounded once
      result = null;
    } else if (target instanceof ConvolutionKernels && FakeDevice.convolutionReadsHalf() && anyHalf(host)) {
      result = convolutionOnWidened(method, host);
    } else {
      result = call(method, target, host);
    }
    mirrors.copyBack();
    return result;
  }

  /** matmul(a, b, out, beta) for a half out: in a float32 buffer (out widened when beta is not 0), rounded into out. */
  private static void matmulIntoHalf(Backend cpu, Object[] host) {
    View out = (View) host[2];
    float beta = host[3] instanceof Boolean acc ? (acc ? 1f : 0f) : (float) host[3];
    View f = StridedView.uninitialized(DType.F32, out.shapeRef());
    if (beta != 0) cpu.copy(out, f);
    cpu.matmul((View) host[0], (View) host[1], f, beta);
    cpu.copy(f, out);
  }

  private static boolean anyHalf(Object[] args) {
    for (Object a : args) if (a instanceof View v && v.dtype().isHalf()) return true;
    return false;
  }

  /**
   * A convolution primitive on half operands as a backend that {@linkplain ConvolutionKernels#readsHalf reads them}
   * computes it: every half view widened to float32 (exactly), the CPU's float32 kernel, and its outputs (out, dx,
   * dw: the views from argument 5 on) rounded once into the half views.
   */
  private Object convolutionOnWidened(Method method, Object[] host) throws Throwable {
    Object[] wide = host.clone();
    for (int i = 0; i < wide.length; i++) {
      if (wide[i] instanceof View v && v.dtype().isHalf()) {
        View f = StridedView.uninitialized(DType.F32, v.shapeRef());
        cpu.copy(v, f);
        wide[i] = f;
      }
    }
    Object result = call(method, target, wide);
    for (int i = 5; i < wide.length; i++) {
      if (wide[i] != host[i] && wide[i] instanceof View f) cpu.copy(f, (View) host[i]);
    }
    return result;
  }

  private static Object call(Method method, Object target, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private Storage allocate(DType dtype, long numel, boolean zero) {
    if (numel < 0 || numel > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("allocate: " + numel + " elements of " + dtype.torchName()
          + " do not fit in one " + device + " buffer");
    }
    return Storage.onDevice(dtype, (int) numel, new FakeMemory(device, dtype, (int) numel, zero));
  }

  /** Host copies of the fake buffers one call touches, one per buffer, so aliasing views stay aliased. */
  private final class Mirrors {
    private final Map<Storage, Storage> hostOf = new IdentityHashMap<>();

    Object host(Object arg) {
      if (arg instanceof View[] vs) { // fusedElementwise's inputs
        Object[] h = new View[vs.length];
        for (int i = 0; i < vs.length; i++) h[i] = host(vs[i]);
        return h;
      }
      if (arg instanceof View v && v.storage().onDevice()) {
        return StridedView.of(mirror(v.storage()), v.shapeRef().clone(), v.stridesRef().clone(), v.offset());
      }
      if (arg instanceof AttentionKernels.Problem p && p.mask() != null) {
        AttentionKernels.Mask m = p.mask();
        AttentionKernels.Mask hm = new AttentionKernels.Mask((View) host(m.data()), m.base(), m.si(), m.sj());
        return new AttentionKernels.Problem(p.batch(), p.l(), p.s(), p.e(), p.ev(), p.scale(), p.causal(), p.window(),
            p.bq(), p.bk(), hm, p.dropoutP(), p.dropSeed());
      }
      return arg;
    }

    private Storage mirror(Storage st) {
      if (!(st.memory() instanceof FakeMemory mem)) {
        throw new IllegalArgumentException("FakeBackend(" + device + "): a view on " + st.device()
            + " reached the fake backend; an op mixed devices without checking");
      }
      if (mem.device() != device) {
        throw new IllegalArgumentException("FakeBackend(" + device + "): a view on " + mem.device()
            + " reached this device's backend; an op mixed devices without checking");
      }
      return hostOf.computeIfAbsent(st, s -> {
        Object a = mem.array();
        return switch (a) {
          case float[] f -> Storage.wrap(f.clone());
          case double[] d -> Storage.wrap(d.clone());
          case long[] l -> Storage.wrap(l.clone());
          case int[] i -> Storage.wrap(i.clone());
          case byte[] b -> Storage.wrapBool(b.clone());
          case short[] h -> mem.dtype() == DType.BF16 ? Storage.wrapBf16(h.clone()) : Storage.wrapF16(h.clone());
          default -> throw new IllegalStateException("FakeBackend: unexpected array " + a.getClass());
        };
      });
    }

    void copyBack() {
      for (Map.Entry<Storage, Storage> e : hostOf.entrySet()) {
        FakeMemory mem = (FakeMemory) e.getKey().memory();
        System.arraycopy(e.getValue().array(), 0, mem.array(), 0, mem.size());
      }
    }
  }
}
