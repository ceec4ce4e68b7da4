package dev.ember.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.testing.Gpu;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** CudaBench's host-side pieces everywhere; its products and copies on a GPU (skipped where there is none). */
class CudaBenchTest {
  @Test
  void writesOneJsonObjectPerLineWithEscapedStringsAndNullForNonFiniteNumbers() {
    Map<String, Object> rec = new LinkedHashMap<>();
    rec.put("workload", "gemm");
    rec.put("case", "a \"quoted\"\\ line\n\t\u0001");
    rec.put("value", 1.5);
    rec.put("calls", 10);
    rec.put("tf32", false);
    rec.put("nan", Double.NaN);
    rec.put("none", null);
    assertEquals("{\"workload\": \"gemm\", \"case\": \"a \\\"quoted\\\"\\\\ line\\n\\t\\u0001\", \"value\": 1.5, "
        + "\"calls\": 10, \"tf32\": false, \"nan\": null, \"none\": null}", CudaBench.json(rec));
  }

  @Test
  void readsTheKernelDriverVersionAndNamesCudaVersions() {
    String proc = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.03  Release Build  "
        + "(dvs-builder@U22-I3-AE18-23-3)  Wed Oct  1 19:04:21 UTC 2025\nGCC version:  gcc version 12.3.0\n";
    assertEquals(Optional.of("580.159.03"), CudaBench.driverVersionOf(proc));
    assertEquals(Optional.of("535.104.05"),
        CudaBench.driverVersionOf("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 2023"));
    assertEquals(Optional.empty(), CudaBench.driverVersionOf("no driver here"));
    assertEquals("13.0", CudaBench.cudaVersion(13000));
    assertEquals("12.4", CudaBench.cudaVersion(12040));
  }

  @Test
  void randomMatricesAreDeterministicNonZeroAndBf16ExactWhenAsked() {
    float[] a = CudaBench.randomMatrix(1000, 1, true);
    float[] again = CudaBench.randomMatrix(1000, 1, true);
    float[] other = CudaBench.randomMatrix(1000, 2, true);
    assertEquals(java.util.Arrays.toString(a), java.util.Arrays.toString(again));
    int zeros = 0;
    int differ = 0;
    for (int i = 0; i < a.length; i++) {
      assertTrue(a[i] >= -1 && a[i] < 1, "in [-1, 1): " + a[i]);
      assertEquals(a[i], CudaBench.fromBf16Bits(CudaBench.bf16Bits(a[i])), "bf16 round trip of " + a[i]);
      if (a[i] == 0) zeros++;
      if (a[i] != other[i]) differ++;
    }
    assertTrue(zeros < 5, zeros + " zeros");
    assertTrue(differ > 990, "seeds 1 and 2 differ in " + differ + " places");
    assertEquals((short) 0x3F80, CudaBench.bf16Bits(1f));
    assertEquals(-2f, CudaBench.fromBf16Bits((short) 0xC000));
  }

  @Test
  void relativeErrorIsZeroForTheExactProductAndNearOneForTheTransposedOne() {
    int n = 5;
    float[] a = CudaBench.randomMatrix(n * n, 1, false);
    float[] b = CudaBench.randomMatrix(n * n, 2, false);
    double exact = 0;
    double transposed = 0; // (A B)^T[1, 3] = (A B)[3, 1]
    for (int q = 0; q < n; q++) {
      exact += (double) a[n + q] * b[q * n + 3];
      transposed += (double) a[3 * n + q] * b[q * n + 1];
    }
    assertEquals(0, CudaBench.relativeError(exact, a, b, n, 1, 3), 1e-15);
    assertTrue(CudaBench.relativeError(transposed, a, b, n, 1, 3) > 0.05);
  }

  @Test
  void withoutADeviceItPrintsTheEnvironmentAndSaysWhyItSkipped() {
    Assumptions.assumeTrue(CudaDriver.unavailableReason().isPresent(), "this machine has a CUDA driver");
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    int status = CudaBench.run(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    String[] lines = bytes.toString(StandardCharsets.UTF_8).split("\n");
    assertEquals(0, status);
    assertEquals(2, lines.length);
    assertTrue(lines[0].startsWith("{\"workload\": \"_env\", \"side\": \"ember\""), lines[0]);
    assertTrue(lines[1].startsWith("{\"skipped\": \"no CUDA device: "), lines[1]);
  }

  @ParameterizedTest
  @EnumSource(CudaBench.Precision.class)
  void cublasLtProductsMatchTheHostProduct(CudaBench.Precision p) {
    Gpu.assumeDevice();
    CudaContext ctx = CudaContext.of(0);
    ctx.makeCurrent();
    Map<String, Object> rec = CudaBench.gemm(ctx, p, 384);
    assertEquals("ok", rec.get("check"), rec.toString());
    assertTrue((double) rec.get("value") > 0, rec.toString());
    assertEquals(CudaBench.TIMED, rec.get("calls"));
  }

  @Test
  void copiesToTheDeviceFromPinnedAndPageableMemoryAreTimed() {
    Gpu.assumeDevice();
    CudaContext ctx = CudaContext.of(0);
    ctx.makeCurrent();
    for (boolean pinned : new boolean[] {true, false}) {
      Map<String, Object> rec = CudaBench.h2d(ctx, pinned, 8L << 20);
      double gbs = (double) rec.get("value");
      assertTrue(gbs > 0.1 && gbs < 10_000, rec.toString());
      assertTrue((double) rec.get("min") <= gbs && gbs <= (double) rec.get("max"), rec.toString());
    }
    Map<String, Object> rec = CudaBench.h2dTensor(ctx, 8L << 20);
    double gbs = (double) rec.get("value");
    assertTrue(gbs > 0.1 && gbs < 10_000, rec.toString());
    assertTrue((double) rec.get("return_ms_mean") <= (double) rec.get("ms_mean"), rec.toString());
    System.out.println("CudaBenchTest: tensor non_blocking 8 MiB: " + rec);
  }
}
