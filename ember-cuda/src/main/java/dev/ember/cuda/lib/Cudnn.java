package dev.ember.cuda.lib;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * cuDNN ({@code libcudnn.so.*}, version 8 or 9): the convolution calls of its descriptor API (cuDNN 9 keeps them as
 * its "legacy" API), bound with {@code java.lang.foreign}. cuDNN is optional: a CUDA installation does not bring it,
 * PyTorch's pip wheels do ({@code nvidia/cudnn/lib}); it is looked for where {@link NativeLibraries} looks for the
 * other CUDA libraries. cuDNN 9 is a small front library that opens its sub-libraries ({@code libcudnn_ops},
 * {@code libcudnn_cnn}, the engine libraries) by name when first needed; they are loaded here first from the front
 * library's folder, so that a pip wheel's folder need not be on the loader's path.
 *
 * <p>Descriptors are made once per convolution shape and kept (a training step repeats its shapes). Calls that need
 * no GPU (descriptors, output sizes) work without one; a handle ({@link #createHandle}) needs a current context.
 */
public final class Cudnn {
  /** cudnnDataType_t values. */
  public static final int DATA_FLOAT = 0, DATA_DOUBLE = 1, DATA_HALF = 2, DATA_BFLOAT16 = 9;
  /** cudnnMathType_t values. */
  public static final int DEFAULT_MATH = 0, TENSOR_OP_MATH = 1, TENSOR_OP_MATH_ALLOW_CONVERSION = 2, FMA_MATH = 3;
  /** cudnnDeterminism_t: the algorithm gives the same bits every run. */
  public static final int DETERMINISTIC = 1;
  private static final int TENSOR_NCHW = 0;
  private static final int CROSS_CORRELATION = 1;
  /**
   * Bytes of a cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: algo, status, time, (pad), memory, determinism,
   * mathType, reserved[3].
   */
  static final int PERF_BYTES = 48;
  /** More than cuDNN has algorithms of any direction (8 forward, 6 data, 7 filter in cuDNN 8 and 9). */
  private static final int MAX_ALGOS = 16;
  /**
   * The sub-libraries of cuDNN 9 (then cuDNN 8's), in an order where each one's own dependencies come first; the
   * attention and RNN ones ({@code adv}) are not needed here.
   */
  static final List<String> SUB_LIBRARIES = List.of("cudnn_graph", "cudnn_engines_runtime_compiled",
      "cudnn_engines_precompiled", "cudnn_heuristic", "cudnn_ops", "cudnn_cnn", "cudnn_ops_infer", "cudnn_ops_train",
      "cudnn_cnn_infer", "cudnn_cnn_train");

  /** The three computations of a convolution, as cuDNN names them. */
  public enum Direction {
    /** y = conv(x, w). */
    FORWARD,
    /** dx = the input gradient from w and dy. */
    BACKWARD_DATA,
    /** dw = the weight gradient from x and dy. */
    BACKWARD_FILTER
  }

  /** One entry of cuDNN's ranked algorithm list for a convolution. */
  public record AlgoPerf(int algo, int status, long memory, int determinism, int mathType) {}

  /**
   * The descriptors of one convolution: {@code x} the image tensor [N, C, h, w], {@code w} the filter [K, C/groups,
   * kh, kw], {@code y} the output grid [N, K, oh, ow] and {@code conv} the convolution (padding, stride, dilation,
   * groups, compute type).
   */
  public record Descriptors(long x, long w, long y, long conv) {}

  private static final LoadOnce<Cudnn> INSTANCE = new LoadOnce<>(
      () -> new Cudnn(NativeLibraries.fromEnvironment().loadWithParts("cudnn", SUB_LIBRARIES, "cuDNN")));

  private final MethodHandle getVersion, errorString, create, setStream, createTensor, setTensor4dEx, createFilter,
      setFilter4d, createConv, setConv2d, setGroups, setMath, outputDim, fwdAlgos, dataAlgos, filterAlgos, fwdSize,
      dataSize, filterSize, fwd, data, filter;

  Cudnn(SymbolLookup lib) {
    getVersion = CudaDriver.bind(lib, "cudnnGetVersion", FunctionDescriptor.of(JAVA_LONG));
    errorString = CudaDriver.bind(lib, "cudnnGetErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    create = CudaDriver.bind(lib, "cudnnCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    setStream = CudaDriver.bind(lib, "cudnnSetStream", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
    createTensor = CudaDriver.bind(lib, "cudnnCreateTensorDescriptor", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    setTensor4dEx = CudaDriver.bind(lib, "cudnnSetTensor4dDescriptorEx", FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
        JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    createFilter = CudaDriver.bind(lib, "cudnnCreateFilterDescriptor", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    setFilter4d = CudaDriver.bind(lib, "cudnnSetFilter4dDescriptor", FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
        JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    createConv = CudaDriver.bind(lib, "cudnnCreateConvolutionDescriptor", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    setConv2d = CudaDriver.bind(lib, "cudnnSetConvolution2dDescriptor", FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
        JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    setGroups = CudaDriver.bind(lib, "cudnnSetConvolutionGroupCount",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT));
    setMath = CudaDriver.bind(lib, "cudnnSetConvolutionMathType", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT));
    outputDim = CudaDriver.bind(lib, "cudnnGetConvolution2dForwardOutputDim", FunctionDescriptor.of(JAVA_INT,
        JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
    FunctionDescriptor algos = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG,
        JAVA_INT, ADDRESS, ADDRESS);
    fwdAlgos = CudaDriver.bind(lib, "cudnnGetConvolutionForwardAlgorithm_v7", algos);
    dataAlgos = CudaDriver.bind(lib, "cudnnGetConvolutionBackwardDataAlgorithm_v7", algos);
    filterAlgos = CudaDriver.bind(lib, "cudnnGetConvolutionBackwardFilterAlgorithm_v7", algos);
    FunctionDescriptor size = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG,
        JAVA_INT, ADDRESS);
    fwdSize = CudaDriver.bind(lib, "cudnnGetConvolutionForwardWorkspaceSize", size);
    dataSize = CudaDriver.bind(lib, "cudnnGetConvolutionBackwardDataWorkspaceSize", size);
    filterSize = CudaDriver.bind(lib, "cudnnGetConvolutionBackwardFilterWorkspaceSize", size);
    FunctionDescriptor run = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG,
        JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG);
    fwd = CudaDriver.bind(lib, "cudnnConvolutionForward", run);
    data = CudaDriver.bind(lib, "cudnnConvolutionBackwardData", run);
    filter = CudaDriver.bind(lib, "cudnnConvolutionBackwardFilter", run);
  }

  /**
   * cuDNN, loaded on first use (no GPU needed).
   *
   * @throws CudaUnavailableException naming the folders searched when no libcudnn is found or it cannot be loaded
   */
  public static Cudnn get() {
    return INSTANCE.get();
  }

  public static Optional<Cudnn> tryGet() {
    return INSTANCE.tryGet();
  }

  /** cuDNN's version number, e.g. 90501 for 9.5.1 (8xyz for cuDNN 8). */
  public long version() {
    try {
      return (long) getVersion.invokeExact();
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  /** The version as text, "9.5.1" for 90501 (and 8.9.7 for cuDNN 8's 8907). */
  public static String versionText(long v) {
    if (v >= 90000) return (v / 10000) + "." + (v / 100 % 100) + "." + (v % 100);
    return (v / 1000) + "." + (v / 100 % 10) + "." + (v % 100);
  }

  private void check(int rc, String call) {
    if (rc == 0) return;
    String text;
    try {
      text = ((MemorySegment) errorString.invokeExact(rc)).reinterpret(4096).getString(0);
    } catch (Throwable t) {
      text = "cuDNN status";
    }
    throw new CudaException(call, rc, text + " (" + rc + ")");
  }

  /**
   * A cuDNN handle on the current CUDA context, its work ordered on {@code stream}.
   *
   * @throws CudaException naming cudnnCreate when cuDNN cannot start on this context (no device, a driver or CUDA
   *     version it was not built for)
   */
  public long createHandle(long stream) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment h = a.allocate(JAVA_LONG);
      check((int) create.invokeExact(h), "cudnnCreate");
      long handle = h.get(JAVA_LONG, 0);
      setStream(handle, stream);
      return handle;
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  public void setStream(long handle, long stream) {
    try {
      check((int) setStream.invokeExact(handle, stream), "cudnnSetStream");
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  /**
   * Descriptors of the convolution of x [n, c, h, w] (contiguous) with a filter [k, c/groups, kh, kw] into a
   * contiguous [n, k, oh, ow] grid, cross-correlation (as PyTorch's convolution) with symmetric padding ph, pw, of
   * elements {@code dataType} accumulated in {@code computeType}; {@code mathType} whether tensor cores may run it.
   *
   * @throws CudaException naming the call and the shapes when cuDNN rejects them
   */
  public Descriptors descriptors(int dataType, int computeType, int mathType, int n, int c, int h, int w, int k,
      int groups, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw) {
    String what = "x [" + n + ", " + c + ", " + h + ", " + w + "], w [" + k + ", " + c / groups + ", " + kh + ", " + kw
        + "], stride " + sh + "x" + sw + ", padding " + ph + "x" + pw + ", dilation " + dh + "x" + dw + ", groups "
        + groups + ", data type " + dataType;
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_LONG);
      check((int) createTensor.invokeExact(out), "cudnnCreateTensorDescriptor");
      long xd = out.get(JAVA_LONG, 0);
      check((int) setTensor4dEx.invokeExact(xd, dataType, n, c, h, w, c * h * w, h * w, w, 1),
          "cudnnSetTensor4dDescriptorEx(" + what + ")");
      check((int) createFilter.invokeExact(out), "cudnnCreateFilterDescriptor");
      long wd = out.get(JAVA_LONG, 0);
      check((int) setFilter4d.invokeExact(wd, dataType, TENSOR_NCHW, k, c / groups, kh, kw),
          "cudnnSetFilter4dDescriptor(" + what + ")");
      check((int) createConv.invokeExact(out), "cudnnCreateConvolutionDescriptor");
      long cd = out.get(JAVA_LONG, 0);
      check((int) setConv2d.invokeExact(cd, ph, pw, sh, sw, dh, dw, CROSS_CORRELATION, computeType),
          "cudnnSetConvolution2dDescriptor(" + what + ")");
      check((int) setGroups.invokeExact(cd, groups), "cudnnSetConvolutionGroupCount(" + what + ")");
      mathType(cd, mathType);
      int[] dims = outputDims(cd, xd, wd);
      check((int) createTensor.invokeExact(out), "cudnnCreateTensorDescriptor");
      long yd = out.get(JAVA_LONG, 0);
      check((int) setTensor4dEx.invokeExact(yd, dataType, dims[0], dims[1], dims[2], dims[3],
          dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1), "cudnnSetTensor4dDescriptorEx(" + what + ")");
      return new Descriptors(xd, wd, yd, cd);
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  /** Sets whether tensor cores may run the convolution ({@link #FMA_MATH}: no; others as cuDNN defines them). */
  public void mathType(long conv, int mathType) {
    try {
      check((int) setMath.invokeExact(conv, mathType), "cudnnSetConvolutionMathType(" + mathType + ")");
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  /** [n, k, oh, ow] of the convolution of tensor {@code x} with filter {@code w}, as cuDNN computes them. */
  public int[] outputDims(long conv, long x, long w) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment d = a.allocate(JAVA_INT, 4);
      check((int) outputDim.invokeExact(conv, x, w, d, d.asSlice(4), d.asSlice(8), d.asSlice(12)),
          "cudnnGetConvolution2dForwardOutputDim");
      return d.toArray(JAVA_INT);
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  /** cuDNN's heuristic ranking of the algorithms of {@code direction} for {@code d} (best first). */
  public List<AlgoPerf> algorithms(Direction direction, long handle, Descriptors d) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment count = a.allocate(JAVA_INT);
      MemorySegment perf = a.allocate((long) PERF_BYTES * MAX_ALGOS, 8);
      int rc = switch (direction) {
        case FORWARD -> (int) fwdAlgos.invokeExact(handle, d.x(), d.w(), d.conv(), d.y(), MAX_ALGOS, count, perf);
        case BACKWARD_DATA -> (int) dataAlgos.invokeExact(handle, d.w(), d.y(), d.conv(), d.x(), MAX_ALGOS, count,
            perf);
        case BACKWARD_FILTER -> (int) filterAlgos.invokeExact(handle, d.x(), d.y(), d.conv(), d.w(), MAX_ALGOS, count,
            perf);
      };
      check(rc, "cudnnGetConvolution" + callName(direction) + "Algorithm_v7");
      return parsePerf(perf, Math.min(MAX_ALGOS, count.get(JAVA_INT, 0)));
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  private static String callName(Direction d) {
    return switch (d) {
      case FORWARD -> "Forward";
      case BACKWARD_DATA -> "BackwardData";
      case BACKWARD_FILTER -> "BackwardFilter";
    };
  }

  /** The {@code count} perf structs of {@code perf}, in order. */
  static List<AlgoPerf> parsePerf(MemorySegment perf, int count) {
    List<AlgoPerf> out = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      long o = (long) i * PERF_BYTES;
      out.add(new AlgoPerf(perf.get(JAVA_INT, o), perf.get(JAVA_INT, o + 4), perf.get(JAVA_LONG, o + 16),
          perf.get(JAVA_INT, o + 24), perf.get(JAVA_INT, o + 28)));
    }
    return out;
  }

  /**
   * The first algorithm of {@code ranked} that cuDNN can run ({@code status} 0), that gives the same bits every run
   * (Ember's results do not change from run to run: cuDNN's atomics-based backward algorithms are left out, as
   * PyTorch's {@code cudnn.deterministic} does) and whose math is allowed: float32 data leaves tensor cores out
   * unless {@code tensorCoresForFloat} (TF32), and that needs at most {@code maxWorkspace} bytes of workspace.
   * Empty when none qualifies.
   */
  public static Optional<AlgoPerf> choose(List<AlgoPerf> ranked, boolean floatData, boolean tensorCoresForFloat,
      long maxWorkspace) {
    for (AlgoPerf p : ranked) {
      if (p.status() != 0 || p.determinism() != DETERMINISTIC || p.memory() > maxWorkspace) continue;
      boolean tensorCores = p.mathType() == TENSOR_OP_MATH || p.mathType() == TENSOR_OP_MATH_ALLOW_CONVERSION;
      if (floatData && tensorCores && !tensorCoresForFloat) continue;
      if (p.mathType() == TENSOR_OP_MATH_ALLOW_CONVERSION) continue; // would round float32 operands to 16 bits
      return Optional.of(p);
    }
    return Optional.empty();
  }

  /** The workspace bytes {@code algo} of {@code direction} needs for {@code d}. */
  public long workspaceSize(Direction direction, long handle, Descriptors d, int algo) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment size = a.allocate(JAVA_LONG);
      int rc = switch (direction) {
        case FORWARD -> (int) fwdSize.invokeExact(handle, d.x(), d.w(), d.conv(), d.y(), algo, size);
        case BACKWARD_DATA -> (int) dataSize.invokeExact(handle, d.w(), d.y(), d.conv(), d.x(), algo, size);
        case BACKWARD_FILTER -> (int) filterSize.invokeExact(handle, d.x(), d.y(), d.conv(), d.w(), algo, size);
      };
      check(rc, "cudnnGetConvolution" + callName(direction) + "WorkspaceSize(algo " + algo + ")");
      return size.get(JAVA_LONG, 0);
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  private static final MemorySegment ONE = Arena.global().allocateFrom(JAVA_FLOAT, 1f);
  private static final MemorySegment ZERO = Arena.global().allocateFrom(JAVA_FLOAT, 0f);

  /**
   * Runs {@code direction} on device buffers, enqueued on the handle's stream: FORWARD writes {@code y} from x and w,
   * BACKWARD_DATA writes {@code x} (dx) from w and y (dy), BACKWARD_FILTER writes {@code w} (dw) from x and y (dy);
   * the written buffer gets the result plus {@code accumulate ? 1 : 0} times its old contents (float32, float16 and
   * bfloat16 data: the scaling factors are floats).
   */
  public void run(Direction direction, long handle, Descriptors d, int algo, long workspace, long workspaceBytes,
      long x, long w, long y, boolean accumulate, String what) {
    MemorySegment beta = accumulate ? ONE : ZERO;
    try {
      int rc = switch (direction) {
        case FORWARD -> (int) fwd.invokeExact(handle, ONE, d.x(), x, d.w(), w, d.conv(), algo, workspace,
            workspaceBytes, beta, d.y(), y);
        case BACKWARD_DATA -> (int) data.invokeExact(handle, ONE, d.w(), w, d.y(), y, d.conv(), algo, workspace,
            workspaceBytes, beta, d.x(), x);
        case BACKWARD_FILTER -> (int) filter.invokeExact(handle, ONE, d.x(), x, d.y(), y, d.conv(), algo, workspace,
            workspaceBytes, beta, d.w(), w);
      };
      check(rc, "cudnnConvolution" + callName(direction) + "(algo " + algo + ", " + what + ")");
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }
}
