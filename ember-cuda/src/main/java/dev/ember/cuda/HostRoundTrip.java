package dev.ember.cuda;

import dev.ember.backend.Backend;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Runs a primitive that has no kernel on the device yet on the host: device views are copied to host buffers,
 * the CPU backend computes, and the outputs are copied back. Correct for every primitive, and as slow as two
 * transfers; the CUDA backend uses it for the families its kernels do not cover.
 */
final class HostRoundTrip {
  private final Backend device;
  private final Backend cpu;

  HostRoundTrip(Backend device, Backend cpu) {
    this.device = device;
    this.cpu = cpu;
  }

  /**
   * Calls {@code body} with host stand-ins for {@code inputs} then {@code outputs} (in that order), and copies the
   * outputs back to where they live. Outputs are copied to the host first too: a primitive may accumulate into them.
   */
  void run(View[] inputs, View[] outputs, Consumer<View[]> body) {
    View[] all = new View[inputs.length + outputs.length];
    for (int i = 0; i < inputs.length; i++) all[i] = toHost(inputs[i]);
    for (int i = 0; i < outputs.length; i++) all[inputs.length + i] = toHost(outputs[i]);
    body.accept(all);
    for (int i = 0; i < outputs.length; i++) {
      View h = all[inputs.length + i];
      if (h != outputs[i]) device.copy(h, outputs[i]);
    }
  }

  /**
   * The family {@code type} of the CPU backend behind a proxy that hands it host copies of every device view
   * argument and copies back each one whose contents the call changed (so an input aliasing an output is never
   * written back over the result).
   */
  @SuppressWarnings("unchecked")
  <T> T family(Class<T> type, T cpuFamily) {
    return (T) Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (proxy, m, args) -> {
      if (m.getDeclaringClass() == Object.class) return objectMethod(proxy, m, args, type);
      Object[] hostArgs = args == null ? new Object[0] : args.clone();
      Object[] before = new Object[hostArgs.length];
      for (int i = 0; i < hostArgs.length; i++) {
        if (hostArgs[i] instanceof View v && v.storage().onDevice()) {
          View h = toHost(v);
          hostArgs[i] = h;
          before[i] = snapshot(h);
        }
      }
      Object result;
      try {
        result = m.invoke(cpuFamily, hostArgs);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
      for (int i = 0; i < hostArgs.length; i++) {
        if (before[i] != null && !sameContents(before[i], snapshot((View) hostArgs[i]))) {
          device.copy((View) hostArgs[i], (View) args[i]);
        }
      }
      return result;
    });
  }

  private static Object objectMethod(Object proxy, Method m, Object[] args, Class<?> type) {
    return switch (m.getName()) {
      case "equals" -> proxy == args[0];
      case "hashCode" -> System.identityHashCode(proxy);
      default -> "HostRoundTrip[" + type.getSimpleName() + "]";
    };
  }

  /** v itself when on the host, else a contiguous host copy. */
  private View toHost(View v) {
    if (!v.storage().onDevice()) return v;
    StridedView h = StridedView.uninitialized(v.dtype(), v.shapeRef());
    device.copy(v, h);
    return h;
  }

  private static Object snapshot(View h) {
    Object a = h.storage().array();
    return switch (a) {
      case float[] f -> f.clone();
      case double[] d -> d.clone();
      case long[] l -> l.clone();
      case int[] i -> i.clone();
      case byte[] b -> b.clone();
      default -> throw new IllegalStateException("HostRoundTrip: unexpected array " + a.getClass());
    };
  }

  private static boolean sameContents(Object a, Object b) {
    return switch (a) {
      case float[] f -> Arrays.equals(f, (float[]) b);
      case double[] d -> Arrays.equals(d, (double[]) b);
      case long[] l -> Arrays.equals(l, (long[]) b);
      case int[] i -> Arrays.equals(i, (int[]) b);
      case byte[] x -> Arrays.equals(x, (byte[]) b);
      default -> false;
    };
  }
}
