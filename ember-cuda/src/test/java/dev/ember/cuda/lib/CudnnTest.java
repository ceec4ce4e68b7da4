package dev.ember.cuda.lib;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.kernels.CudaConvPoolTest;
import dev.ember.cuda.lib.Cudnn.AlgoPerf;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * cuDNN's bindings. The algorithm choice and the perf-struct layout are checked everywhere; the calls that need no
 * GPU (version, descriptors, output sizes, error text) wherever a libcudnn is found (CI has none: point
 * EMBER_CUDA_LIBRARY_PATH at a folder holding one, e.g. PyTorch's nvidia/cudnn/lib).
 */
class CudnnTest {
  private static Cudnn cudnn() {
    Optional<Cudnn> c = Cudnn.tryGet();
    Assumptions.assumeTrue(c.isPresent(), "needs libcudnn: set EMBER_CUDA_LIBRARY_PATH to its folder");
    return c.get();
  }

  @Test
  void perfStructsAreReadAtCudnnsOffsets() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment s = a.allocate(2L * Cudnn.PERF_BYTES, 8);
      for (int i = 0; i < 2; i++) {
        long o = (long) i * Cudnn.PERF_BYTES;
        s.set(JAVA_INT, o, 6 + i); // algo
        s.set(JAVA_INT, o + 4, i == 0 ? 0 : 3000); // status
        s.set(JAVA_FLOAT, o + 8, -1f); // time, then 4 bytes of padding before the size_t
        s.set(JAVA_LONG, o + 16, 1L << 33 | i); // memory
        s.set(JAVA_INT, o + 24, 1 - i); // determinism
        s.set(JAVA_INT, o + 28, Cudnn.TENSOR_OP_MATH); // mathType
        s.set(JAVA_INT, o + 32, 77); // reserved[3]
      }
      assertEquals(List.of(new AlgoPerf(6, 0, 1L << 33, 1, Cudnn.TENSOR_OP_MATH),
          new AlgoPerf(7, 3000, (1L << 33) + 1, 0, Cudnn.TENSOR_OP_MATH)), Cudnn.parsePerf(s, 2));
    }
  }

  @Test
  void theChosenAlgorithmRunsIsDeterministicAndKeepsFloat32OffTensorCoresUnlessAllowed() {
    AlgoPerf failed = new AlgoPerf(0, 9, 0, 1, Cudnn.FMA_MATH);
    AlgoPerf atomics = new AlgoPerf(1, 0, 0, 0, Cudnn.FMA_MATH);
    AlgoPerf tf32 = new AlgoPerf(2, 0, 64, 1, Cudnn.TENSOR_OP_MATH);
    AlgoPerf narrowing = new AlgoPerf(3, 0, 0, 1, Cudnn.TENSOR_OP_MATH_ALLOW_CONVERSION);
    AlgoPerf fma = new AlgoPerf(4, 0, 128, 1, Cudnn.FMA_MATH);
    List<AlgoPerf> ranked = List.of(failed, atomics, tf32, narrowing, fma);
    assertEquals(Optional.of(fma), Cudnn.choose(ranked, true, false, Long.MAX_VALUE));
    assertEquals(Optional.of(tf32), Cudnn.choose(ranked, true, true, Long.MAX_VALUE));
    // bfloat16/float16 data: tensor cores
    assertEquals(Optional.of(tf32), Cudnn.choose(ranked, false, false, Long.MAX_VALUE));
    assertEquals(Optional.empty(), Cudnn.choose(List.of(failed, atomics, narrowing), false, true,
        Long.MAX_VALUE));
    // a workspace cap passes over the algorithms that need more
    assertEquals(Optional.of(tf32), Cudnn.choose(ranked, true, true, 100));
    assertEquals(Optional.empty(), Cudnn.choose(ranked, true, false, 100)); // fma needs 128 bytes
    assertEquals(Optional.empty(), Cudnn.choose(ranked, false, false, 50));
  }

  @Test
  void versionTextReadsBothNumberings() {
    assertEquals("9.5.1", Cudnn.versionText(90501));
    assertEquals("9.19.0", Cudnn.versionText(91900));
    assertEquals("8.9.7", Cudnn.versionText(8907));
  }

  @Test
  void loadsAndReportsItsVersion() {
    long v = cudnn().version();
    assertTrue(v >= 8000, "cuDNN version " + v);
  }

  @Test
  void descriptorsGiveTheGridOfEmbersGeometry() {
    Cudnn c = cudnn();
    for (int dt : new int[] {Cudnn.DATA_FLOAT, Cudnn.DATA_BFLOAT16, Cudnn.DATA_HALF}) {
      // CudaConvPoolTest's cases ({n, c, k, groups, h, w, kh, kw, sh, sw, ph, pw, dh, dw}), and a conv net's layer
      for (int[] s : java.util.stream.Stream.concat(java.util.Arrays.stream(CudaConvPoolTest.CASES),
          java.util.stream.Stream.of(new int[] {64, 32, 64, 1, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1})).toList()) {
        Cudnn.Descriptors d = c.descriptors(dt, Cudnn.DATA_FLOAT, Cudnn.FMA_MATH, s[0], s[1], s[4], s[5], s[2], s[3],
            s[6], s[7], s[8], s[9], s[10], s[11], s[12], s[13]);
        int oh = (s[4] + 2 * s[10] - s[12] * (s[6] - 1) - 1) / s[8] + 1;
        int ow = (s[5] + 2 * s[11] - s[13] * (s[7] - 1) - 1) / s[9] + 1;
        assertArrayEquals(new int[] {s[0], s[2], oh, ow}, c.outputDims(d.conv(), d.x(), d.w()),
            "data type " + dt + ", shape " + java.util.Arrays.toString(s));
      }
    }
  }

  @Test
  void aRejectedShapeNamesTheCallTheShapesAndCudnnsStatus() {
    Cudnn c = cudnn();
    CudaException e = assertThrows(CudaException.class, () -> c.descriptors(Cudnn.DATA_FLOAT, Cudnn.DATA_FLOAT,
        Cudnn.FMA_MATH, 2, 3, 9, 8, 4, 1, -3, 3, 1, 1, 1, 1, 1, 1));
    assertTrue(e.getMessage().contains("cudnnSetFilter4dDescriptor(x [2, 3, 9, 8], w [4, 3, -3, 3]"), e.getMessage());
    assertTrue(e.getMessage().contains("CUDNN_STATUS_BAD_PARAM"), e.getMessage());
  }

  @Test
  void withoutAGpuAHandleFailsNamingCudnnCreate() {
    Cudnn c = cudnn();
    Assumptions.assumeTrue(CudaDriver.unavailableReason().isPresent(), "this machine has a CUDA driver");
    CudaException e = assertThrows(CudaException.class, () -> c.createHandle(0));
    assertTrue(e.getMessage().startsWith("cudnnCreate failed: CUDNN_STATUS_"), e.getMessage());
  }
}
