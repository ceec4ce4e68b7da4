package dev.ember.cuda;

import dev.ember.backend.AttentionKernels;
import dev.ember.backend.Backend;
import dev.ember.backend.ConvolutionKernels;
import dev.ember.backend.NormalizationKernels;
import dev.ember.backend.OptimizerKernels;
import dev.ember.backend.PoolingKernels;
import dev.ember.backend.RandomKernels;
import dev.ember.backend.RecurrentKernels;
import dev.ember.backend.ResamplingKernels;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.tensor.Storage;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * The correctness path for the kernel families a device backend has no native kernels for yet: each family
 * method runs on the CPU backend's implementation, on host copies of the device views it is given.
 *
 * <p>A call copies, for every device storage any {@link View} argument lies in, its elements from the first up
 * to the last those views reach to one host buffer (so views that alias stay aliased on the host, as an
 * in-place update needs, and storage indices such as an attention mask's stay valid), runs the CPU family
 * method on host views of the same geometry, then copies every buffer back: the SPI writes
 * into preallocated views and does not say which, so every device view is treated as written (copying back
 * an input writes the values it already holds). Scalars, arrays, host views and callbacks pass through as
 * they are; an attention {@link AttentionKernels.Problem} whose mask lies on the device gets a host mask.
 * Return values (statistics, sums) come back as the CPU computed them.
 *
 * <p>On CUDA every family has native kernels now (the random fills and resampling were the last); what still comes
 * here is {@link dev.ember.cuda.kernels.CudaResampling}'s padding gradients of dtypes other than F32 and F64.
 * The other families it builds serve tests and backends without kernels of their own.
 *
 * <p>Every call is counted per family method ({@link #calls()}), so a benchmark can report how much of a run
 * fell back to the host. The copies cost two transfers per call, so this path is for correctness, not
 * speed.
 */
public final class HostFallback {
  private static final Map<String, LongAdder> CALLS = new ConcurrentHashMap<>();

  private final Backend self;
  private final NormalizationKernels normalization;
  private final AttentionKernels attention;
  private final RecurrentKernels recurrent;
  private final RandomKernels random;
  private final ConvolutionKernels convolution;
  private final PoolingKernels pooling;
  private final ResamplingKernels resampling;
  private final OptimizerKernels optimizer;

  private HostFallback(Backend self, Backend cpu) {
    this.self = self;
    this.normalization = proxy(NormalizationKernels.class, "normalization", cpu.normalization());
    this.attention = proxy(AttentionKernels.class, "attention", cpu.attention());
    this.recurrent = proxy(RecurrentKernels.class, "recurrent", cpu.recurrent());
    this.random = proxy(RandomKernels.class, "random", cpu.random());
    this.convolution = proxy(ConvolutionKernels.class, "convolution", cpu.convolution());
    this.pooling = proxy(PoolingKernels.class, "pooling", cpu.pooling());
    this.resampling = proxy(ResamplingKernels.class, "resampling", cpu.resampling());
    this.optimizer = proxy(OptimizerKernels.class, "optimizer", cpu.optimizer());
  }

  /**
   * The fallback families of {@code self} (the device backend, whose {@link Backend#copy} moves views between
   * its device and the host) running on {@code cpu}'s.
   */
  public static HostFallback of(Backend self, Backend cpu) {
    if (self == null || cpu == null) throw new IllegalArgumentException("HostFallback.of: self and cpu must not be null");
    if (!cpu.device().isCpu()) {
      throw new IllegalArgumentException("HostFallback.of: cpu must be a CPU backend, got " + cpu.name() + " on "
          + cpu.device());
    }
    return new HostFallback(self, cpu);
  }

  public NormalizationKernels normalization() {
    return normalization;
  }

  public AttentionKernels attention() {
    return attention;
  }

  public RecurrentKernels recurrent() {
    return recurrent;
  }

  public RandomKernels random() {
    return random;
  }

  public ConvolutionKernels convolution() {
    return convolution;
  }

  public PoolingKernels pooling() {
    return pooling;
  }

  public ResamplingKernels resampling() {
    return resampling;
  }

  public OptimizerKernels optimizer() {
    return optimizer;
  }

  /** Calls that fell back so far, per family method ({@code "normalization.rowStats"}), sorted by name. */
  public static Map<String, Long> calls() {
    Map<String, Long> out = new TreeMap<>();
    CALLS.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  /** Calls of one family method ({@code "optimizer.adam"}) that fell back so far. */
  public static long calls(String familyMethod) {
    LongAdder a = CALLS.get(familyMethod);
    return a == null ? 0 : a.sum();
  }

  /** Sets every count back to zero (e.g. between the warm-up and the measured part of a benchmark). */
  public static void resetCalls() {
    CALLS.clear();
  }

  private <F> F proxy(Class<F> family, String familyName, F cpuFamily) {
    InvocationHandler h = (p, method, args) -> {
      if (method.getDeclaringClass() == Object.class) return objectMethod(p, method, args, familyName);
      CALLS.computeIfAbsent(familyName + "." + method.getName(), k -> new LongAdder()).increment();
      return onHost(method, cpuFamily, args);
    };
    return family.cast(Proxy.newProxyInstance(family.getClassLoader(), new Class<?>[] {family}, h));
  }

  private static Object objectMethod(Object p, Method m, Object[] args, String familyName) {
    return switch (m.getName()) {
      case "equals" -> p == args[0];
      case "hashCode" -> System.identityHashCode(p);
      default -> "HostFallback[" + familyName + "]";
    };
  }

  /** One device storage's elements [0, hi], up to the last one the call's views reach, and its host copy. */
  private static final class Span {
    long hi = -1;
    Storage host;

    void cover(View v) {
      if (v.numel() == 0) return;
      long last = v.offset();
      for (int d = 0; d < v.rank(); d++) last += Math.max(0L, (long) (v.shapeRef()[d] - 1) * v.stridesRef()[d]);
      hi = Math.max(hi, last);
    }

    boolean empty() {
      return hi < 0;
    }

    StridedView deviceSpan(Storage device) {
      return new StridedView(device, new int[] {(int) (hi + 1)}, new int[] {1}, 0);
    }

    StridedView hostSpan() {
      return new StridedView(host, new int[] {host.size()}, new int[] {1}, 0);
    }
  }

  private Object onHost(Method method, Object cpuFamily, Object[] args) throws Throwable {
    Object[] hostArgs = args == null ? null : args.clone();
    Map<Storage, Span> spans = new IdentityHashMap<>();
    if (hostArgs != null) {
      for (Object a : hostArgs) forEachView(a, v -> {
        if (v.storage().onDevice()) spans.computeIfAbsent(v.storage(), s -> new Span()).cover(v);
        return v;
      });
      for (Map.Entry<Storage, Span> e : spans.entrySet()) {
        Span s = e.getValue();
        if (s.empty()) {
          s.host = Storage.allocateUninitialized(e.getKey().dtype(), 0);
        } else {
          s.host = Storage.allocateUninitialized(e.getKey().dtype(), s.hi + 1);
          self.copy(s.deviceSpan(e.getKey()), s.hostSpan());
        }
      }
      for (int i = 0; i < hostArgs.length; i++) {
        hostArgs[i] = forEachView(hostArgs[i], v -> {
          if (!v.storage().onDevice()) return v;
          Span s = spans.get(v.storage());
          int off = s.empty() ? 0 : v.offset();
          return new StridedView(s.host, v.shapeRef().clone(), v.stridesRef().clone(), off);
        });
      }
    }
    Object result;
    try {
      result = method.invoke(cpuFamily, hostArgs);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
    for (Map.Entry<Storage, Span> e : spans.entrySet()) {
      Span s = e.getValue();
      if (!s.empty()) self.copy(s.hostSpan(), s.deviceSpan(e.getKey()));
    }
    return result;
  }

  /**
   * Applies {@code f} to every view an argument is or holds (a View, or an attention Problem's mask), returning
   * the argument rebuilt around the views f returns.
   */
  private static Object forEachView(Object arg, Function<View, View> f) {
    if (arg instanceof View v) return f.apply(v);
    if (arg instanceof AttentionKernels.Problem p && p.mask() != null) {
      AttentionKernels.Mask m = p.mask();
      View data = f.apply(m.data());
      if (data == m.data()) return p;
      return new AttentionKernels.Problem(p.batch(), p.l(), p.s(), p.e(), p.ev(), p.scale(), p.causal(), p.window(),
          p.bq(), p.bk(), new AttentionKernels.Mask(data, m.base(), m.si(), m.sj()), p.dropoutP(), p.dropSeed());
    }
    return arg;
  }
}
