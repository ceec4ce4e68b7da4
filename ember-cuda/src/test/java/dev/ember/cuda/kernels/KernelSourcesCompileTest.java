package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.testing.DeviceCompiler;
import dev.ember.tensor.DType;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Compiles the reduction, indexing, random and resampling sources for sm_90 with NVRTC or nvcc (no GPU needed;
 * skipped where neither is present) and checks that every kernel name the Java side launches is in the cubin.
 */
class KernelSourcesCompileTest {
  private static void compileAndFind(String name, String source, List<String> kernels) {
    String text = DeviceCompiler.assertKernels(name, source, kernels);
    assertTrue(!text.contains("\0" + kernels.get(0) + "_nonexistent\0"), "the lookup tells names apart");
  }

  @Test
  void reduceSourceCompilesWithEveryKernelForEveryDtype() {
    DeviceCompiler.assume();
    int total = 0;
    for (DType t : Elementwise.dtypes()) {
      List<String> names = CudaReduce.kernelNames(t);
      total += names.size();
      compileAndFind("ember_reduce_" + t, Sources.reduce(t), names);
    }
    assertTrue(total > 100, "reduce, arg, softmax, cumsum and allFinite kernels: " + total);
  }

  @Test
  void indexingSourceCompilesWithEveryKernelForEveryDtype() {
    DeviceCompiler.assume();
    for (DType t : Elementwise.storageDtypes()) {
      compileAndFind("ember_indexing_" + t, Sources.indexing(t), CudaIndexing.kernelNames(t));
    }
  }

  @Test
  void randomAndResamplingSourcesCompileWithEveryKernel() {
    DeviceCompiler.assume();
    compileAndFind("random", CudaRandom.SOURCE, CudaRandom.kernelNames());
    compileAndFind("resampling", CudaResampling.SOURCE, CudaResampling.kernelNames());
  }

  @Test
  void eachDtypeCompilesOnlyItsOwnKernels() {
    DeviceCompiler.assume();
    String f64 = new String(DeviceCompiler.cubin("ember_reduce_f64", Sources.reduce(DType.F64)),
        StandardCharsets.ISO_8859_1);
    assertTrue(f64.contains("\0reduce_block_sum_f64_f64\0"));
    assertTrue(!f64.contains("\0reduce_block_sum_f32_f32\0"), "float32 kernels are not in the float64 cubin");
  }
}
