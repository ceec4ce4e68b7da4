package dev.ember.cuda.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.lib.CudaException;
import dev.ember.cuda.testing.Gpu;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** NVRTC needs no GPU: these run wherever libnvrtc is found (EMBER_CUDA_LIBRARY_PATH), and skip elsewhere. */
class KernelCacheTest {
  @TempDir Path tmp;

  static final String SRC = """
      extern "C" __global__ void copy_geo(const float* x, Geo gx, float* y) {
        for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < gx.numel;
             i += (long long) blockDim.x * gridDim.x) y[i] = x[geo_offset(gx, i)];
      }
      """;

  @Test
  void compilesAPreludeUsingKernelToACubinAndCachesItOnDisk() throws IOException {
    Gpu.assumeNvrtc();
    String before = System.getProperty("ember.cuda.cache");
    System.setProperty("ember.cuda.cache", tmp.toString());
    try {
      byte[] bin = KernelCache.cubin("test_copy", SRC, "sm_90");
      assertEquals(0x7f, bin[0] & 0xff, "a cubin is an ELF file");
      assertEquals('E', bin[1]);
      List<Path> files;
      try (Stream<Path> s = Files.list(tmp)) {
        files = s.toList();
      }
      assertEquals(1, files.size(), files.toString());
      assertTrue(files.get(0).getFileName().toString().startsWith("test_copy-sm_90-"));
      Files.write(files.get(0), new byte[] {1, 2, 3});
      assertArrayEquals(new byte[] {1, 2, 3}, KernelCache.cubin("test_copy", SRC, "sm_90"),
          "the second compile is served from the disk cache");
    } finally {
      if (before == null) System.clearProperty("ember.cuda.cache");
      else System.setProperty("ember.cuda.cache", before);
    }
  }

  @Test
  void aCompileErrorCarriesNvrtcsLog() {
    Gpu.assumeNvrtc();
    String before = System.getProperty("ember.cuda.cache");
    System.setProperty("ember.cuda.cache", tmp.toString());
    try {
      CudaException e = assertThrows(CudaException.class,
          () -> KernelCache.cubin("broken", "extern \"C\" __global__ void k() { undeclared_thing = 1; }", "sm_90"));
      assertTrue(e.getMessage().contains("nvrtcCompileProgram(broken"), e.getMessage());
      assertTrue(e.getMessage().contains("undeclared_thing"), e.getMessage());
    } finally {
      if (before == null) System.clearProperty("ember.cuda.cache");
      else System.setProperty("ember.cuda.cache", before);
    }
  }
}
