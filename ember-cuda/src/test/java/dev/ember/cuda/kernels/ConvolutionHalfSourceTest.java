package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.testing.DeviceCompiler;
import dev.ember.tensor.DType;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * CudaConvolution's source without a GPU: nvcc (or NVRTC) compiles it for sm_90 with every kernel the Java side
 * launches, for F32, F64, BF16 and F16; src/test/cuda-emu/convolution.cpp runs the 16-bit kernels under emu.h (g++)
 * against the float32 kernels on the widened values rounded once. Each skips, saying why, where its compiler is absent.
 */
class ConvolutionHalfSourceTest {
  @TempDir Path tmp;

  private static final DType[] DTYPES = {DType.F32, DType.F64, DType.BF16, DType.F16};

  @Test
  void kernelNamesMoveHalvesWhereTheyOnlyMoveBits() {
    assertEquals("im2col_u16", CudaConvolution.kernelName("im2col", DType.BF16));
    assertEquals("bias_fill_u16", CudaConvolution.kernelName("bias_fill", DType.F16));
    assertEquals("col2im_bf16", CudaConvolution.kernelName("col2im", DType.BF16));
    assertEquals("sum_batches_f16", CudaConvolution.kernelName("sum_batches", DType.F16));
    assertEquals("channel_sums_f32", CudaConvolution.kernelName("channel_sums", DType.F32));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CudaConvolution.kernelName("im2col", DType.I64));
    assertTrue(e.getMessage().contains("int64"), e.getMessage());
  }

  /** A half GEMM's operand goes through an aligned copy unless every batch starts on 256 bytes. */
  @Test
  void alignedCopiesHaveStridesOfWhole256ByteBlocks() {
    assertTrue(CudaConvolution.aligned(1024, 128, 4, 2));
    assertTrue(CudaConvolution.aligned(1024, 36, 1, 2), "one batch: only the address");
    assertTrue(!CudaConvolution.aligned(1024, 36, 2, 2), "36 halves per image");
    assertTrue(!CudaConvolution.aligned(1024 + 72, 128, 4, 2), "a group offset of 36 halves");
    assertEquals(128, CudaConvolution.alignedStride(36, 2));
    assertEquals(256, CudaConvolution.alignedStride(129, 2));
    assertEquals(64, CudaConvolution.alignedStride(64, 4));
    assertEquals(128, CudaConvolution.alignedStride(65, 4));
  }

  @Test
  void theSourceCompilesForTheDeviceWithEveryKernelLaunched() {
    DeviceCompiler.assume();
    List<String> names = new ArrayList<>();
    for (DType t : DTYPES) {
      for (String base : CudaConvolution.KERNELS) names.add(CudaConvolution.kernelName(base, t));
    }
    assertEquals(20, names.size());
    names.addAll(CudaConvolution.RESTRIDE);
    DeviceCompiler.assertKernels("convolution", CudaConvolution.SOURCE, names);
    DeviceCompiler.assertKernels("convolution_bias", CudaConvolution.BIAS_ADD, List.of("bias_add_f32", "bias_add_f64"));
  }

  @Test
  void halfKernelsGiveTheFloat32KernelsRoundedOnceUnderTheEmulator() throws Exception {
    CudaEmulator.buildAndRun(tmp, "convolution.cpp", Map.of("convolution.cu", CudaConvolution.SOURCE));
  }
}
