package dev.ember.tensor;

import dev.ember.backend.Backend;
import dev.ember.backend.BackendProvider;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where a tensor's storage lives and which backend computes on it: {@link #CPU}, or {@code cuda:0}, {@code cuda:1},
 * ... ({@link #cuda(int)}), as PyTorch's {@code torch.device}. Backends are found, not named: each device type's
 * backend comes from the {@link BackendProvider} of highest priority that {@link ServiceLoader} finds for that type
 * (ember-core's CPU provider is the default; ember-cuda's serves {@code "cuda"}), looked up once per process.
 */
public final class Device {
  /** The host: heap arrays, the Vector API kernels. */
  public static final Device CPU = new Device("cpu", 0);

  private static final Map<String, Device> INTERNED = new ConcurrentHashMap<>();

  static {
    INTERNED.put("cpu:0", CPU);
  }

  private final String type;
  private final int index;
  private volatile Backend backend;

  private Device(String type, int index) {
    this.type = type;
    this.index = index;
  }

  /** The device {@code type:index}; one instance per device, so devices compare with {@code ==} too. */
  public static Device of(String type, int index) {
    if (type == null || !type.matches("[a-z][a-z0-9_]*")) {
      throw new IllegalArgumentException("Device: bad device type '" + type + "' (expected e.g. cpu or cuda)");
    }
    if (index < 0) throw new IllegalArgumentException("Device: index must be >= 0, got " + type + ":" + index);
    if (type.equals("cpu") && index != 0) throw new IllegalArgumentException("Device: there is one cpu device, got cpu:" + index);
    return INTERNED.computeIfAbsent(type + ":" + index, k -> new Device(type, index));
  }

  /**
   * Parses {@code "cpu"}, {@code "cuda"} (= {@code cuda:0}) or {@code "cuda:1"}, as {@code torch.device(str)}.
   *
   * @throws IllegalArgumentException for anything else
   */
  public static Device parse(String spec) {
    String s = spec == null ? "" : spec.trim().toLowerCase(java.util.Locale.ROOT);
    int colon = s.indexOf(':');
    if (colon < 0) return of(s, 0);
    try {
      return of(s.substring(0, colon), Integer.parseInt(s.substring(colon + 1)));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("Device: bad device '" + spec + "' (expected cpu, cuda or cuda:N)");
    }
  }

  /** The first CUDA device, {@code cuda:0}. */
  public static Device cuda() {
    return of("cuda", 0);
  }

  /** The CUDA device of that ordinal. */
  public static Device cuda(int index) {
    return of("cuda", index);
  }

  /** {@code "cpu"} or {@code "cuda"}. */
  public String type() {
    return type;
  }

  /** The device's ordinal among devices of its type (0 for the CPU). */
  public int index() {
    return index;
  }

  /** Whether this is the host. */
  public boolean isCpu() {
    return this == CPU;
  }

  /**
   * Whether a provider on the class path serves this device's type and the device exists (for CUDA: the driver
   * loads and reports more than {@link #index()} devices), as {@code torch.cuda.is_available()}.
   */
  public boolean isAvailable() {
    BackendProvider p = Providers.provider(type);
    return p != null && index < p.deviceCount();
  }

  /**
   * The device types that providers on the class path serve, {@code "cpu"} first, e.g. {@code [cpu, cuda]} with
   * ember-cuda present (whether or not a GPU is).
   */
  public static List<String> types() {
    List<String> out = new ArrayList<>(List.of("cpu"));
    for (String t : Providers.BY_TYPE.keySet()) if (!t.equals("cpu")) out.add(t);
    out.subList(1, out.size()).sort(null); // by name, whatever order the class path lists the providers in
    return out;
  }

  /** The number of devices of {@code type} ({@code "cuda"}) present; 0 when none or no provider serves it. */
  public static int count(String type) {
    BackendProvider p = Providers.provider(type);
    return p == null ? 0 : p.deviceCount();
  }

  /**
   * Waits for every operation queued on this device (as {@code torch.cuda.synchronize()}); immediate on the CPU.
   * Timings of work on a GPU need it: kernels run after the calls that queue them return.
   */
  public void synchronize() {
    backend().synchronize();
  }

  /**
   * This device's memory statistics by PyTorch's names ({@code "allocated_bytes.all.peak"}, ...; as
   * {@code torch.cuda.memory_stats()}), empty for the CPU.
   */
  public java.util.Map<String, Long> memoryStats() {
    return backend().memoryStats();
  }

  /**
   * The backend that runs kernels for tensors on this device.
   *
   * @throws IllegalStateException if no provider serves this device's type, or the device is absent (the message
   *     says why, e.g. that no CUDA driver was found)
   */
  public Backend backend() {
    Backend b = backend;
    if (b == null) {
      synchronized (this) {
        b = backend;
        if (b == null) {
          BackendProvider p = Providers.provider(type);
          if (p == null) throw Providers.none(this);
          backend = b = p.backend(this);
        }
      }
    }
    return b;
  }

  /**
   * A named variant of this device's backend, e.g. {@code Device.CPU.backend("scalar")} for the plain-Java
   * reference kernels.
   *
   * @throws IllegalArgumentException if this device's provider has no variant of that name
   */
  public Backend backend(String variant) {
    BackendProvider p = Providers.provider(type);
    if (p == null) throw Providers.none(this);
    return p.variant(this, variant).orElseThrow(() -> new IllegalArgumentException("Device " + this
        + ": backend provider " + p.getClass().getName() + " has no variant '" + variant + "'"));
  }

  /** {@code cpu}, or {@code type:index} ({@code cuda:0}), as PyTorch prints devices. */
  @Override
  public String toString() {
    return isCpu() ? "cpu" : type + ":" + index;
  }

  /** The providers by device type, loaded when a backend is first asked for. */
  private static final class Providers {
    static final Map<String, BackendProvider> BY_TYPE = load();

    private static Map<String, BackendProvider> load() {
      Map<String, BackendProvider> best = new LinkedHashMap<>();
      for (BackendProvider p : ServiceLoader.load(BackendProvider.class, Device.class.getClassLoader())) {
        best.merge(p.deviceType(), p, (a, b) -> b.priority() > a.priority() ? b : a);
      }
      return best;
    }

    static BackendProvider provider(String type) {
      return BY_TYPE.get(type);
    }

    static IllegalStateException none(Device d) {
      List<String> found = new ArrayList<>();
      for (BackendProvider p : BY_TYPE.values()) found.add(p.deviceType() + " (" + p.getClass().getName() + ")");
      String hint = d.type.equals("cuda") ? "; put ember-cuda (dev.ember:ember-cuda) on the class path" : "";
      return new IllegalStateException("Device " + d + ": no BackendProvider serves device type '" + d.type
          + "' (found: " + found + ")" + hint);
    }
  }
}
