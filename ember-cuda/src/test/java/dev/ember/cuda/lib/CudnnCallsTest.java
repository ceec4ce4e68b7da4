package dev.ember.cuda.lib;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.lib.Cudnn.AlgoPerf;
import dev.ember.cuda.lib.Cudnn.Direction;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cuDNN bindings' argument order, against src/test/cuda-emu/cudnn_mock.cpp built with g++ as a stand-in
 * libcudnn: it checks which descriptor kind each call gets where, and logs the buffers each run call receives.
 * The calls that need a GPU on the real library (algorithm rankings, workspace sizes, the three convolutions) are
 * checked here without one. Skips without g++.
 */
class CudnnCallsTest {
  @TempDir static Path tmp;

  private static SymbolLookup mock() throws IOException, InterruptedException {
    Path src = Path.of("src/test/cuda-emu/cudnn_mock.cpp").toAbsolutePath();
    Assumptions.assumeTrue(Files.isRegularFile(src), "run from the ember-cuda module");
    Path lib = tmp.resolve("libcudnn.so.9");
    if (!Files.isRegularFile(lib)) {
      String out;
      int rc;
      try {
        Process p = new ProcessBuilder("g++", "-std=c++17", "-shared", "-fPIC", "-O1", src.toString(), "-o",
            lib.toString()).redirectErrorStream(true).start();
        out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "g++ timed out");
        rc = p.exitValue();
      } catch (IOException e) {
        Assumptions.abort("needs g++ to build the cuDNN stand-in: " + e.getMessage());
        return null;
      }
      assertEquals(0, rc, "g++ failed:\n" + out);
    }
    return SymbolLookup.libraryLookup(lib, Arena.global());
  }

  private static String log(SymbolLookup lib) throws Throwable {
    MethodHandle h = Linker.nativeLinker().downcallHandle(lib.find("mock_log").orElseThrow(),
        FunctionDescriptor.of(ADDRESS));
    return ((MemorySegment) h.invokeExact()).reinterpret(1 << 16).getString(0);
  }

  private static void reset(SymbolLookup lib) throws Throwable {
    Linker.nativeLinker().downcallHandle(lib.find("mock_reset").orElseThrow(), FunctionDescriptor.ofVoid())
        .invokeExact();
  }

  @Test
  void eachCallGetsItsDescriptorsAndBuffersInCudnnsOrder() throws Throwable {
    SymbolLookup lib = mock();
    Cudnn c = new Cudnn(lib);
    reset(lib);
    long h = c.createHandle(0x77);
    assertEquals("stream=77;", log(lib));
    // image [2, 6, 9, 8], filter [4, 3, 3, 3] in 2 groups, stride 1, padding 1: grid [2, 4, 9, 8]
    Cudnn.Descriptors d = c.descriptors(Cudnn.DATA_BFLOAT16, Cudnn.DATA_FLOAT, Cudnn.TENSOR_OP_MATH, 2, 6, 9, 8, 4, 2,
        3, 3, 1, 1, 1, 1, 1, 1);
    assertEquals(List.of(2, 4, 9, 8), java.util.Arrays.stream(c.outputDims(d.conv(), d.x(), d.w())).boxed().toList());
    int code = 1;
    for (Direction dir : Direction.values()) {
      List<AlgoPerf> ranked = c.algorithms(dir, h, d);
      assertEquals(List.of(new AlgoPerf(1, 0, 0, 0, Cudnn.FMA_MATH), new AlgoPerf(2, 0, 2048, 1, Cudnn.TENSOR_OP_MATH),
          new AlgoPerf(3, 0, 4096, 1, Cudnn.FMA_MATH)), ranked, dir.name());
      long any = Long.MAX_VALUE;
      assertEquals(2, Cudnn.choose(ranked, false, false, any).orElseThrow().algo(), "bfloat16: tensor cores");
      assertEquals(3, Cudnn.choose(ranked, true, false, any).orElseThrow().algo(), "float32 without TF32");
      assertEquals(2000 + code, c.workspaceSize(dir, h, d, 2), dir.name());
      code++;
    }
    reset(lib);
    c.mathType(d.conv(), Cudnn.FMA_MATH);
    c.run(Direction.FORWARD, h, d, 3, 0x5000, 3001, 0xA000, 0xB000, 0xC000, true, "test");
    c.run(Direction.BACKWARD_DATA, h, d, 3, 0x5000, 3002, 0xA100, 0xB100, 0xC100, false, "test");
    c.run(Direction.BACKWARD_FILTER, h, d, 3, 0x5000, 3003, 0xA200, 0xB200, 0xC200, false, "test");
    // x: the image (dx for data), w: the filter (dw for filter), y: the grid (dy for both gradients)
    assertEquals("forward algo=3 math=3 x=a000 w=b000 y=c000 ws=5000/3001 beta=1;"
        + "data algo=3 math=3 x=a100 w=b100 y=c100 ws=5000/3002 beta=0;"
        + "filter algo=3 math=3 x=a200 w=b200 y=c200 ws=5000/3003 beta=0;", log(lib));
  }

  @Test
  void aFailedCallNamesItselfTheShapesAndCudnnsWords() throws Throwable {
    Cudnn c = new Cudnn(mock());
    long h = c.createHandle(0);
    Cudnn.Descriptors d = c.descriptors(Cudnn.DATA_FLOAT, Cudnn.DATA_FLOAT, Cudnn.FMA_MATH, 1, 3, 5, 5, 2, 1, 3, 3, 1,
        1, 0, 0, 1, 1);
    CudaException e = assertThrows(CudaException.class, () -> c.run(Direction.FORWARD, h, d, 3, 0, 0, 0, 0xB000,
        0xC000, false, "float32 image [1, 3, 5, 5]"));
    assertEquals("cudnnConvolutionForward(algo 3, float32 image [1, 3, 5, 5]) failed: CUDNN_STATUS_BAD_PARAM (mock: a"
        + " null buffer) (2000)", e.getMessage());
    CudaException shape = assertThrows(CudaException.class, () -> c.descriptors(Cudnn.DATA_FLOAT, Cudnn.DATA_FLOAT,
        Cudnn.FMA_MATH, 1, 3, 5, 5, 2, 1, 3, 3, 0, 1, 0, 0, 1, 1));
    assertTrue(shape.getMessage().startsWith("cudnnSetConvolution2dDescriptor(x [1, 3, 5, 5], w [2, 3, 3, 3], stride"
        + " 0x1, padding 0x0, dilation 1x1, groups 1, data type 0) failed: CUDNN_STATUS_BAD_PARAM"), shape.getMessage());
  }

  @Test
  void aLibraryIsFoundWithItsPartsAndAPartThatWillNotLoadIsNamed(@TempDir Path dir) throws IOException {
    NativeLibraries none = new NativeLibraries(List.of(dir));
    CudaUnavailableException missing = assertThrows(CudaUnavailableException.class,
        () -> none.loadWithParts("cudnn", Cudnn.SUB_LIBRARIES, "cuDNN"));
    assertTrue(missing.getMessage().startsWith("CUDA: cuDNN (libcudnn.so) was not found. Searched: [" + dir + "]"),
        missing.getMessage());
    Files.writeString(dir.resolve("libcudnn.so.9"), "not a library");
    Files.writeString(dir.resolve("libcudnn_ops.so.9"), "not a library either");
    CudaUnavailableException part = assertThrows(CudaUnavailableException.class,
        () -> none.loadWithParts("cudnn", Cudnn.SUB_LIBRARIES, "cuDNN"));
    assertTrue(part.getMessage().startsWith("CUDA: cannot load " + dir.resolve("libcudnn_ops.so.9") + " (part of cuDNN)"),
        part.getMessage());
  }
}
