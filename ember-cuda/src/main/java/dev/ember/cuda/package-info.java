/**
 * Ember's CUDA backend: tensors on NVIDIA GPUs, reached through the JDK's foreign-function API
 * ({@code java.lang.foreign}) and the CUDA libraries of the user's installation (the driver, cuBLASLt and NVRTC);
 * no JNI code and no native build. Kernels are CUDA C compiled at run time with NVRTC and cached on disk.
 */
package dev.ember.cuda;
