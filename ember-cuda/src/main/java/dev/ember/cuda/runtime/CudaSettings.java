package dev.ember.cuda.runtime;

/**
 * Process-wide CUDA switches, as PyTorch's {@code torch.backends.cuda.matmul.allow_tf32}: float32 products on
 * tensor cores in TF32 (10-bit mantissa inputs, float32 accumulation) are several times faster and less precise.
 * Off by default; {@code -Dember.cuda.allowTf32=true} turns it on at start. And as
 * {@code torch.backends.cudnn.enabled}: convolutions run through cuDNN where it is installed (on by default;
 * {@code -Dember.cuda.cudnn=false} or {@code EMBER_CUDNN=0} keeps them on Ember's own im2col kernels and cuBLASLt).
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

  private static volatile boolean cudnn =
      !"false".equalsIgnoreCase(System.getProperty("ember.cuda.cudnn", "true").strip())
          && !"0".equals(System.getenv("EMBER_CUDNN"));

  /** Whether convolutions may run through cuDNN (when it is found). */
  public static boolean cudnn() {
    return cudnn;
  }

  public static void cudnn(boolean on) {
    cudnn = on;
  }
}
