package dev.ember.tensor;

import dev.ember.backend.Backend;
import dev.ember.backend.BackendProvider;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/**
 * Where a tensor's storage lives and which backend computes on it. Backends are found, not named: each device's
 * backend comes from the {@link BackendProvider} of highest priority that {@link ServiceLoader} finds for it
 * (ember-core's CPU provider is the default), looked up once per process.
 */
public enum Device {
  CPU;

  /** The backend that runs kernels for tensors on this device. */
  public Backend backend() {
    Backend b = Providers.BACKENDS[ordinal()];
    if (b == null) throw Providers.none(this);
    return b;
  }

  /**
   * A named variant of this device's backend, e.g. {@code Device.CPU.backend("scalar")} for the plain-Java
   * reference kernels.
   *
   * @throws IllegalArgumentException if this device's provider has no variant of that name
   */
  public Backend backend(String variant) {
    BackendProvider p = Providers.PROVIDERS[ordinal()];
    if (p == null) throw Providers.none(this);
    return p.variant(variant).orElseThrow(() -> new IllegalArgumentException("Device " + this + ": backend provider "
        + p.getClass().getName() + " has no variant '" + variant + "'"));
  }

  @Override
  public String toString() {
    return name().toLowerCase();
  }

  /** The providers, loaded when a backend is first asked for. */
  private static final class Providers {
    static final BackendProvider[] PROVIDERS = load();
    static final Backend[] BACKENDS = backends();

    private static BackendProvider[] load() {
      BackendProvider[] best = new BackendProvider[values().length];
      for (BackendProvider p : ServiceLoader.load(BackendProvider.class, Device.class.getClassLoader())) {
        int d = p.device().ordinal();
        if (best[d] == null || p.priority() > best[d].priority()) best[d] = p;
      }
      return best;
    }

    private static Backend[] backends() {
      Backend[] out = new Backend[PROVIDERS.length];
      for (int i = 0; i < out.length; i++) out[i] = PROVIDERS[i] == null ? null : PROVIDERS[i].backend();
      return out;
    }

    static IllegalStateException none(Device d) {
      List<String> found = new ArrayList<>();
      for (BackendProvider p : PROVIDERS) if (p != null) found.add(p.device() + " (" + p.getClass().getName() + ")");
      return new IllegalStateException("Device " + d + ": no BackendProvider serves this device (found: " + found
          + "); put a module that provides dev.ember.backend.BackendProvider for it on the class path");
    }
  }
}
