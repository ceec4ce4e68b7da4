package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.testing.Gpu;
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
  void reduceSourceCompilesWithEveryKernel() {
    Gpu.assumeNvrtc();
    List<String> names = CudaReduce.kernelNames();
    assertTrue(names.size() > 100, "reduce, arg, softmax, cumsum and allFinite kernels: " + names.size());
    compileAndFind("ember_reduce", Sources.REDUCE, names, tmp);
  }

  @Test
  void indexingSourceCompilesWithEveryKernel() {
    Gpu.assumeNvrtc();
    compileAndFind("ember_indexing", Sources.INDEXING, CudaIndexing.kernelNames(), tmp);
  }
}
