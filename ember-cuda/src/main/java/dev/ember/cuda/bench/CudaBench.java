package dev.ember.cuda.bench;

import dev.ember.cuda.lib.CublasLt;
import dev.ember.cuda.lib.Cudnn;
import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.lib.Nvrtc;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code java --enable-native-access=ALL-UNNAMED -cp ... dev.ember.cuda.bench.CudaBench}: Ember's side of
 * {@code bench/cuda/torch_peer.py}, one JSON object per line in the same form, so the two can be joined on
 * {@code (workload, case)}:
 * <ul>
 *   <li>{@code _env}: device, driver, CUDA, NVRTC, cuBLASLt and cuDNN (null: none found) versions, Java;
 *   <li>{@code gemm}: cuBLASLt on raw device buffers holding random data copied from the host, bf16 8192^3
 *       (fp32 accumulation), f32 4096^3 and TF32 4096^3: 3 warm-ups, then 10 calls each timed with a pair of CUDA
 *       events, mean (and min/max) TFLOP/s; each record also says how far sampled elements of the product are
 *       from a double-precision product on the host ({@code max_rel_err}, {@code check});
 *   <li>{@code h2d}: 256 MiB host-to-device copies, GB/s (1e9 bytes/s): pinned memory ({@code cuMemHostAlloc},
 *       asynchronous copy) and pageable memory (a Java array read in place by a synchronous copy); and
 *       {@code Tensor.to(cuda, true)} of a float32 host tensor (a Java array): staged into a cached pinned buffer,
 *       copied on the copy stream, wall clock until the device has it;
 * </ul>
 * Without a CUDA device it prints the {@code _env} line and {@code {"skipped": "no CUDA device: ..."}} and exits
 * 0. A benchmark that fails prints a record with {@code error} and the others still run; the exit status is then 1.
 */
public final class CudaBench {
  static final long H2D_BYTES = 256L << 20;
  /** cuBLASLt workspace, as PyTorch gives it on Hopper. */
  static final long WORKSPACE_BYTES = 32L << 20;
  static final int WARMUPS = 3;
  static final int TIMED = 10;

  private CudaBench() {}

  public static void main(String[] args) {
    System.exit(run(System.out));
  }

  /** Prints every record to {@code out}; returns the exit status (0, or 1 when a benchmark failed). */
  static int run(PrintStream out) {
    Optional<String> why = CudaDriver.unavailableReason();
    int devices = why.isEmpty() ? CudaDriver.get().deviceCount() : 0;
    // the context first: cuBLASLt, asked its version below, is created in the current context
    CudaContext ctx = devices > 0 ? CudaContext.of(0) : null;
    out.println(json(environment(devices)));
    if (ctx == null) {
      out.println(json(Map.of("skipped", "no CUDA device: " + why.orElse("the driver sees none"))));
      return 0;
    }
    boolean ok = measure(out, ctx, "gemm", "bf16 8192^3", () -> gemm(ctx, Precision.BF16, 8192));
    ok &= measure(out, ctx, "gemm", "f32 4096^3", () -> gemm(ctx, Precision.F32, 4096));
    ok &= measure(out, ctx, "gemm", "tf32 4096^3", () -> gemm(ctx, Precision.TF32, 4096));
    ok &= measure(out, ctx, "h2d", "pinned", () -> h2d(ctx, true, H2D_BYTES));
    ok &= measure(out, ctx, "h2d", "pageable", () -> h2d(ctx, false, H2D_BYTES));
    ok &= measure(out, ctx, "h2d", "tensor non_blocking", () -> h2dTensor(ctx, H2D_BYTES));
    return ok ? 0 : 1;
  }

  /** Runs one benchmark and prints its record, or a record with its error; false when it failed. */
  private static boolean measure(PrintStream out, CudaContext ctx, String workload, String kase,
      Supplier<Map<String, Object>> bench) {
    try {
      ctx.makeCurrent();
      Map<String, Object> rec = record(workload, kase);
      rec.putAll(bench.get());
      out.println(json(rec));
      return !"FAILED".equals(rec.get("check"));
    } catch (RuntimeException e) {
      Map<String, Object> rec = record(workload, kase);
      rec.put("error", e.toString());
      out.println(json(rec));
      e.printStackTrace();
      return false;
    }
  }

  static Map<String, Object> environment(int devices) {
    Map<String, Object> env = record("_env", null);
    env.put("side", "ember");
    env.put("java", Runtime.version().toString());
    env.put("device", null);
    env.put("driver", nvidiaDriverVersion().orElse(null));
    if (devices > 0) {
      CudaDriver d = CudaDriver.get();
      int[] cc = d.computeCapability(0);
      env.put("device", d.deviceName(0));
      env.put("capability", cc[0] + "." + cc[1]);
      env.put("memory_gib", Math.round(d.totalMemory(0) / (double) (1L << 30) * 10) / 10.0);
      env.put("sms", d.multiprocessorCount(0));
      env.put("devices", devices);
      env.put("cuda_driver", cudaVersion(d.driverVersion()));
      env.put("nvrtc", Nvrtc.tryGet().map(Nvrtc::version).orElse(null));
      env.put("cublasLt", CublasLt.tryGet().map(CublasLt::version).orElse(null));
      env.put("cudnn", Cudnn.tryGet().map(Cudnn::version).orElse(null));
    }
    return env;
  }

  /** 13000 -> "13.0", 12040 -> "12.4". */
  static String cudaVersion(int v) {
    return v / 1000 + "." + v % 1000 / 10;
  }

  private static final Pattern KERNEL_MODULE = Pattern.compile("Kernel Module.*?\\s([0-9]+\\.[0-9]+(?:\\.[0-9]+)?)\\s");

  /** The kernel driver's version, e.g. 580.159, from {@code /proc/driver/nvidia/version} (what nvidia-smi shows). */
  static Optional<String> nvidiaDriverVersion() {
    try {
      return driverVersionOf(Files.readString(Path.of("/proc/driver/nvidia/version")));
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }

  static Optional<String> driverVersionOf(String procText) {
    Matcher m = KERNEL_MODULE.matcher(procText);
    return m.find() ? Optional.of(m.group(1)) : Optional.empty();
  }

  // ---- GEMM ----

  /** The three products measured: element type, cuBLASLt compute type, and the error a correct one stays under. */
  enum Precision {
    BF16("bf16", CublasLt.R_16BF, CublasLt.COMPUTE_32F, 2, 1e-2),
    F32("f32", CublasLt.R_32F, CublasLt.COMPUTE_32F, 4, 1e-4),
    TF32("tf32", CublasLt.R_32F, CublasLt.COMPUTE_32F_FAST_TF32, 4, 1e-2);

    final String label;
    final int type;
    final int compute;
    final int bytes;
    /** Bound on |c - exact| / sum |a b| over the sampled elements. */
    final double tolerance;

    Precision(String label, int type, int compute, int bytes, double tolerance) {
      this.label = label;
      this.type = type;
      this.compute = compute;
      this.bytes = bytes;
      this.tolerance = tolerance;
    }
  }

  /** Row-major C = A B of n x n matrices through cuBLASLt, timed; A and B random in [-1, 1). */
  static Map<String, Object> gemm(CudaContext ctx, Precision p, int n) {
    CudaDriver d = ctx.driver();
    long count = (long) n * n;
    long bytes = count * p.bytes;
    float[] a = randomMatrix(count, 1, p == Precision.BF16);
    float[] b = randomMatrix(count, 2, p == Precision.BF16);
    List<Long> buffers = new ArrayList<>();
    try {
      long da = alloc(d, buffers, bytes);
      long db = alloc(d, buffers, bytes);
      long dc = alloc(d, buffers, bytes);
      long ws = alloc(d, buffers, WORKSPACE_BYTES);
      upload(d, da, a, p);
      upload(d, db, b, p);
      // Row-major C = A B is column-major C^T = B^T A^T: cuBLASLt's first operand is our B.
      var spec = new CublasLt.MatmulSpec(p.compute, p.type, p.type, false, false, n, n, n, n, n, n, 0, 0, 0, 1,
          WORKSPACE_BYTES);
      CublasLt lt = CublasLt.get();
      Runnable call = () -> lt.matmul(spec, 1, db, da, 0, dc, ws, ctx.stream());
      for (int i = 0; i < WARMUPS; i++) call.run();
      double[] ms = timeEach(d, ctx.stream(), call);
      double flops = 2.0 * n * n * n;
      double[] tflops = new double[ms.length];
      for (int i = 0; i < ms.length; i++) tflops[i] = flops / (ms[i] * 1e-3) / 1e12;
      double err = maxRelativeError(d, dc, a, b, n, p);
      Map<String, Object> rec = new LinkedHashMap<>();
      rec.put("dtype", p.label);
      rec.put("m", n);
      rec.put("n", n);
      rec.put("k", n);
      rec.put("metric", "TFLOP/s");
      putStats(rec, tflops);
      rec.put("ms_mean", mean(ms));
      rec.put("calls", ms.length);
      rec.put("call", "cublasLtMatmul (compute " + (p == Precision.TF32 ? "32F_FAST_TF32" : "32F") + ")");
      rec.put("tf32", p == Precision.TF32);
      rec.put("max_rel_err", err);
      rec.put("check", err <= p.tolerance ? "ok" : "FAILED");
      return rec;
    } finally {
      for (long buf : buffers) d.memFree(buf);
    }
  }

  private static long alloc(CudaDriver d, List<Long> owned, long bytes) {
    long p = d.memAlloc(bytes);
    owned.add(p);
    return p;
  }

  /**
   * {@code count} values uniform in [-1, 1) from a fixed seed; {@code bf16Exact}: each rounded down to a bfloat16
   * (its float bits' upper half), so the host reference multiplies exactly what the GPU does.
   */
  static float[] randomMatrix(long count, long seed, boolean bf16Exact) {
    SplittableRandom r = new SplittableRandom(seed);
    float[] v = new float[Math.toIntExact(count)];
    for (int i = 0; i < v.length; i++) {
      float x = (float) (2 * r.nextDouble() - 1);
      v[i] = bf16Exact ? Float.intBitsToFloat(Float.floatToRawIntBits(x) & 0xFFFF0000) : x;
    }
    return v;
  }

  /** The bfloat16 bits of a float that is one already (see {@link #randomMatrix}). */
  static short bf16Bits(float bf16Exact) {
    return (short) (Float.floatToRawIntBits(bf16Exact) >>> 16);
  }

  static float fromBf16Bits(short bits) {
    return Float.intBitsToFloat((bits & 0xFFFF) << 16);
  }

  private static void upload(CudaDriver d, long dst, float[] v, Precision p) {
    if (p == Precision.BF16) {
      short[] s = new short[v.length];
      for (int i = 0; i < v.length; i++) s[i] = bf16Bits(v[i]);
      d.memcpyHtoDSync(dst, MemorySegment.ofArray(s), 2L * s.length);
    } else {
      d.memcpyHtoDSync(dst, MemorySegment.ofArray(v), 4L * v.length);
    }
  }

  /**
   * The largest |c - exact| / sum_p |a_ip b_pj| over 16 sampled elements of the n x n product at {@code dc}, the
   * exact product taken in double on the host; a wrong layout or operand order gives errors near 1.
   */
  static double maxRelativeError(CudaDriver d, long dc, float[] a, float[] b, int n, Precision p) {
    SplittableRandom r = new SplittableRandom(3);
    double worst = 0;
    float[] rowF = new float[n];
    short[] rowS = new short[n];
    for (int s = 0; s < 16; s++) {
      int i = s == 0 ? 0 : r.nextInt(n);
      int j = s == 0 ? n - 1 : r.nextInt(n);
      long rowOffset = (long) i * n * p.bytes;
      if (p == Precision.BF16) {
        d.memcpyDtoHSync(MemorySegment.ofArray(rowS), dc + rowOffset, 2L * n);
      } else {
        d.memcpyDtoHSync(MemorySegment.ofArray(rowF), dc + rowOffset, 4L * n);
      }
      double got = p == Precision.BF16 ? fromBf16Bits(rowS[j]) : rowF[j];
      worst = Math.max(worst, relativeError(got, a, b, n, i, j));
    }
    return worst;
  }

  /** |got - sum_p a[i,p] b[p,j]| / sum_p |a[i,p] b[p,j]| for row-major n x n a and b. */
  static double relativeError(double got, float[] a, float[] b, int n, int i, int j) {
    double exact = 0;
    double scale = 0;
    for (int q = 0; q < n; q++) {
      double t = (double) a[i * n + q] * b[q * n + j];
      exact += t;
      scale += Math.abs(t);
    }
    return Math.abs(got - exact) / Math.max(scale, Double.MIN_NORMAL);
  }

  // ---- host to device ----

  /** {@code bytes} (a multiple of 8) copied from host to device, timed. */
  static Map<String, Object> h2d(CudaContext ctx, boolean pinned, long bytes) {
    CudaDriver d = ctx.driver();
    long dst = d.memAlloc(bytes);
    MemorySegment host = null;
    try {
      Runnable copy;
      if (pinned) {
        MemorySegment src = d.hostAlloc(bytes);
        host = src;
        for (long i = 0; i < bytes; i += 8) src.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
        copy = () -> d.memcpyHtoD(dst, src, bytes, ctx.stream());
      } else {
        byte[] array = new byte[Math.toIntExact(bytes)];
        new SplittableRandom(4).nextBytes(array);
        MemorySegment src = MemorySegment.ofArray(array);
        copy = () -> d.memcpyHtoDSync(dst, src, bytes);
      }
      for (int i = 0; i < 2; i++) copy.run();
      double[] ms = timeEach(d, ctx.stream(), copy);
      Map<String, Object> rec = bandwidth(bytes, ms);
      rec.put("copies", ms.length);
      rec.put("call", pinned ? "cuMemcpyHtoDAsync from cuMemHostAlloc memory"
          : "cuMemcpyHtoD from a Java byte[] read in place");
      return rec;
    } finally {
      d.memFree(dst);
      if (host != null) d.hostFree(host);
    }
  }

  /** A copy row's record: its bytes, GB/s over the copies timed {@code ms} (statistics) and their mean time. */
  private static Map<String, Object> bandwidth(long bytes, double[] ms) {
    double[] gbs = new double[ms.length];
    for (int i = 0; i < ms.length; i++) gbs[i] = bytes / (ms[i] * 1e-3) / 1e9;
    Map<String, Object> rec = new LinkedHashMap<>();
    rec.put("bytes", bytes);
    rec.put("metric", "GB/s");
    putStats(rec, gbs);
    rec.put("ms_mean", mean(ms));
    return rec;
  }

  /**
   * {@code host.to(cuda, true)} of a float32 tensor of {@code bytes} (a multiple of 4) on the host, timed on the
   * wall clock from the call to the end of a synchronize: the memcpy into a cached pinned buffer, the asynchronous
   * copy and the device allocation. {@code return_ms_mean}: how long the call itself took (it returns before the
   * transfer ends).
   */
  static Map<String, Object> h2dTensor(CudaContext ctx, long bytes) {
    Device device = Device.cuda(ctx.ordinal());
    float[] data = new float[Math.toIntExact(bytes / 4)];
    SplittableRandom rnd = new SplittableRandom(5);
    for (int i = 0; i < data.length; i++) data[i] = (float) rnd.nextDouble();
    Tensor host = Tensor.of(data, data.length);
    for (int i = 0; i < 2; i++) {
      host.to(device, true).storage().memory().release(); // queued after the copy: safe to free now
      device.synchronize();
    }
    double[] ms = new double[TIMED];
    double[] returned = new double[TIMED];
    for (int i = 0; i < TIMED; i++) {
      long t0 = System.nanoTime();
      Tensor d = host.to(device, true);
      long t1 = System.nanoTime();
      device.synchronize();
      long t2 = System.nanoTime();
      ms[i] = (t2 - t0) / 1e6;
      returned[i] = (t1 - t0) / 1e6;
      d.storage().memory().release();
    }
    Map<String, Object> rec = bandwidth(bytes, ms);
    rec.put("return_ms_mean", mean(returned));
    rec.put("copies", ms.length);
    rec.put("call", "Tensor.to(cuda, true) from a float[]-backed tensor: memcpy into a cached cuMemHostAlloc buffer,"
        + " cuMemcpyHtoDAsync on a copy stream; wall clock to synchronize()");
    return rec;
  }

  // ---- timing and output ----

  /** Milliseconds of each of {@link #TIMED} calls, each between two timing events recorded on {@code stream}. */
  static double[] timeEach(CudaDriver d, long stream, Runnable call) {
    long[] start = new long[TIMED];
    long[] end = new long[TIMED];
    try {
      for (int i = 0; i < TIMED; i++) {
        start[i] = d.eventCreate(true);
        end[i] = d.eventCreate(true);
      }
      for (int i = 0; i < TIMED; i++) {
        d.eventRecord(start[i], stream);
        call.run();
        d.eventRecord(end[i], stream);
      }
      d.eventSynchronize(end[TIMED - 1]);
      double[] ms = new double[TIMED];
      for (int i = 0; i < TIMED; i++) ms[i] = d.eventElapsedMs(start[i], end[i]);
      return ms;
    } finally {
      for (int i = 0; i < TIMED; i++) {
        if (start[i] != 0) d.eventDestroy(start[i]);
        if (end[i] != 0) d.eventDestroy(end[i]);
      }
    }
  }

  static Map<String, Object> record(String workload, String kase) {
    Map<String, Object> rec = new LinkedHashMap<>();
    rec.put("workload", workload);
    if (kase != null) rec.put("case", kase);
    return rec;
  }

  static double mean(double[] v) {
    double s = 0;
    for (double x : v) s += x;
    return s / v.length;
  }

  /** value (the mean, as torch_peer.py reports), min and max. */
  static void putStats(Map<String, Object> rec, double[] v) {
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    for (double x : v) {
      min = Math.min(min, x);
      max = Math.max(max, x);
    }
    rec.put("value", mean(v));
    rec.put("min", min);
    rec.put("max", max);
  }

  /** One JSON object on one line: strings escaped, numbers as numbers (non-finite ones as null), booleans. */
  static String json(Map<String, ?> fields) {
    StringBuilder sb = new StringBuilder("{");
    for (Map.Entry<String, ?> e : fields.entrySet()) {
      if (sb.length() > 1) sb.append(", ");
      quote(sb, e.getKey());
      sb.append(": ");
      Object v = e.getValue();
      if (v == null || (v instanceof Double x && !Double.isFinite(x)) || (v instanceof Float f && !Float.isFinite(f))) {
        sb.append("null");
      } else if (v instanceof Number || v instanceof Boolean) {
        sb.append(v);
      } else {
        quote(sb, v.toString());
      }
    }
    return sb.append('}').toString();
  }

  private static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
          else sb.append(c);
        }
      }
    }
    sb.append('"');
  }
}
