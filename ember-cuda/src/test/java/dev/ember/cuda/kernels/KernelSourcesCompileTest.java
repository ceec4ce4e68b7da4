package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.testing.Gpu;
import dev.ember.tensor.DType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Compiles the reduction and indexing sources with NVRTC for sm_90 (no GPU needed; skipped where NVRTC is
 * absent, as in CI) and checks that every kernel name the Java side launches is in the cubin.
 */
class KernelSourcesCompileTest {
  @TempDir Path tmp;

  private static void compileAndFind(String name, String source, List<String> kernels, Path cache) {
    String before = System.getProperty("ember.cuda.cache");
    System.setProperty("ember.cuda.cache", cache.toString());
    try {
      byte[] cubin = KernelCache.cubin(name, source, "sm_90");
      assertEquals(0x7f, cubin[0] & 0xff, "a cubin is an ELF file");
      String text = new String(cubin, StandardCharsets.ISO_8859_1);
      for (String k : kernels) assertTrue(text.contains("\0" + k + "\0"), name + " has no kernel " + k);
      assertTrue(!text.contains("\0" + kernels.get(0) + "_nonexistent\0"), "the lookup tells names apart");
    } finally {
      if (before == null) System.clearProperty("ember.cuda.cache");
      else System.setProperty("ember.cuda.cache", before);
    }
  }

  @Test
  void reduceSourceCompilesWithEveryKernelForEveryDtype() {
    Gpu.assumeNvrtc();
    int total = 0;
    for (DType t : Elementwise.dtypes()) {
      List<String> names = CudaReduce.kernelNames(t);
      total += names.size();
      compileAndFind("ember_reduce_" + t, Sources.reduce(t), names, tmp);
    }
    assertTrue(total > 100, "reduce, arg, softmax, cumsum and allFinite kernels: " + total);
  }

  @Test
  void indexingSourceCompilesWithEveryKernelForEveryDtype() {
    Gpu.assumeNvrtc();
    for (DType t : Elementwise.dtypes()) compileAndFind("ember_indexing_" + t, Sources.indexing(t), CudaIndexing.kernelNames(t), tmp);
  }

  @Test
  void eachDtypeCompilesOnlyItsOwnKernels() {
    Gpu.assumeNvrtc();
    String before = System.getProperty("ember.cuda.cache");
    System.setProperty("ember.cuda.cache", tmp.toString());
    try {
      String f64 = new String(KernelCache.cubin("ember_reduce_f64", Sources.reduce(DType.F64), "sm_90"),
          StandardCharsets.ISO_8859_1);
      assertTrue(f64.contains("\0reduce_block_sum_f64_f64\0"));
      assertTrue(!f64.contains("\0reduce_block_sum_f32_f32\0"), "float32 kernels are not in the float64 cubin");
    } finally {
      if (before == null) System.clearProperty("ember.cuda.cache");
      else System.setProperty("ember.cuda.cache", before);
    }
  }
}
