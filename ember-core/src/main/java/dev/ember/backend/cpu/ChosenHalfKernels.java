package dev.ember.backend.cpu;

/** Holds the half-float kernel set {@link HalfKernels#instance()} returns, chosen once on first use. */
final class ChosenHalfKernels {
  static final HalfKernels KERNELS = choose();

  private ChosenHalfKernels() {}

  private static HalfKernels choose() {
    if ("scalar".equals(System.getProperty("ember.kernels"))) return HalfKernels.scalar();
    HalfKernels v = HalfKernels.vectorOrNull();
    return v == null ? HalfKernels.scalar() : v;
  }
}
