package dev.ember.cuda.runtime;

/**
 * Process-wide CUDA switches, as PyTorch's {@code torch.backends.cuda.matmul.allow_tf32}: float32 products on
 * tensor cores in TF32 (10-bit mantissa inputs, float32 accumulation) are several times faster and less precise.
 * Off by default; {@code -Dember.cuda.allowTf32=true} turns it on at start.
 */
public final class CudaSettings {
  private static volatile boolean allowTf32 = Boolean.getBoolean("ember.cuda.allowTf32");

  private CudaSettings() {}

  public static boolean allowTf32() {
    return allowTf32;
  }

  public static void allowTf32(boolean on) {
    allowTf32 = on;
  }
}
