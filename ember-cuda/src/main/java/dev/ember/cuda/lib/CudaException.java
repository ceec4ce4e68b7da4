package dev.ember.cuda.lib;

/**
 * A CUDA call that failed: names the call and CUDA's own error name and description, e.g.
 * {@code cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory}.
 */
public class CudaException extends RuntimeException {
  private final String call;
  private final int code;

  public CudaException(String call, int code, String detail) {
    super(call + " failed: " + detail);
    this.call = call;
    this.code = code;
  }

  protected CudaException(String message) {
    super(message);
    this.call = "";
    this.code = -1;
  }

  /** The library function that failed, e.g. {@code cuLaunchKernel}. */
  public String call() {
    return call;
  }

  /** The status code it returned (CUresult, nvrtcResult or cublasStatus_t), or -1 when none applies. */
  public int code() {
    return code;
  }
}
