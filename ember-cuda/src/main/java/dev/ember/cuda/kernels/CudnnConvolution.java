package dev.ember.cuda.kernels;

import dev.ember.backend.ConvGeometry;
import dev.ember.cuda.lib.CudaException;
import dev.ember.cuda.lib.Cudnn;
import dev.ember.cuda.lib.Cudnn.Direction;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.CudaSettings;
import dev.ember.cuda.runtime.Workspace;
import dev.ember.tensor.DType;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The convolutions of {@link CudaConvolution} through cuDNN, where it is installed: one cuDNN handle on the
 * context's stream, descriptors made once per shape, and for each direction the first algorithm of cuDNN's heuristic
 * ranking that is deterministic (the same bits every run, as the im2col path) and whose math is allowed (float32 data
 * on tensor cores only with {@link CudaSettings#allowTf32()}; bfloat16 and float16 on tensor cores, accumulated in
 * float32 and rounded once as stored). A shape, dtype or direction cuDNN has no such algorithm for (or rejects while
 * planning) returns false, and the caller runs its own kernels; a failure while running is an exception.
 * Convolution in the image's layout: x [n, c, h, w], filter [k, c/groups, kh, kw], grid [n, k, oh, ow], all
 * contiguous; the transposed convolution is the same three buffers with the roles swapped.
 */
final class CudnnConvolution {
  private final CudaContext ctx;
  private final Cudnn lib;
  private final long handle;
  private final Workspace workspace;
  private final Map<Key, Plan> plans = new ConcurrentHashMap<>();
  private long stream;

  /**
   * The most workspace an algorithm may ask for (cuDNN's ranking can put a fast algorithm needing gigabytes first):
   * 1 GiB, as a convolution's column matrices on the im2col path rarely need more.
   */
  static final long MAX_WORKSPACE = 1L << 30;

  /** The alignment cuDNN's algorithms may assume of every buffer. */
  static final int ALIGN = 16;

  private record Key(DType dtype, boolean tf32, int n, int c, int k, int groups, ConvGeometry g) {}

  /** One shape's descriptors and, per direction, the algorithm chosen (null until asked; NONE when there is none). */
  private static final class Plan {
    final Cudnn.Descriptors d;
    final Algo[] algos = new Algo[Direction.values().length];

    Plan(Cudnn.Descriptors d) {
      this.d = d;
    }
  }

  private record Algo(int algo, int mathType, long workspace) {}

  private static final Algo NONE = new Algo(-1, 0, 0);

  private CudnnConvolution(CudaContext ctx, Cudnn lib, long handle) {
    this.ctx = ctx;
    this.lib = lib;
    this.handle = handle;
    this.stream = ctx.stream();
    this.workspace = new Workspace(ctx);
  }

  /**
   * cuDNN on {@code ctx}.
   *
   * @throws dev.ember.cuda.lib.CudaUnavailableException when no cuDNN library is found
   * @throws dev.ember.cuda.lib.CudaException when cuDNN cannot start on this context
   */
  static CudnnConvolution open(CudaContext ctx) {
    Cudnn lib = Cudnn.get();
    ctx.makeCurrent();
    return new CudnnConvolution(ctx, lib, lib.createHandle(ctx.stream()));
  }

  /** "cuDNN 9.5.1". */
  String name() {
    return "cuDNN " + Cudnn.versionText(lib.version());
  }

  /**
   * Whether cuDNN can take this convolution: float32, bfloat16 or float16 data (float64 stays on the im2col kernels,
   * whose products are exact enough for gradient checks), int-sized tensors, and symmetric padding: cuDNN derives the
   * grid from the image as {@code (h + 2 ph - dh (kh - 1) - 1) / sh + 1}, which must be the grid Ember asks for
   * (Ember's geometry states only the top and left padding).
   */
  static boolean supports(DType t, int n, int c, int k, ConvGeometry g) {
    if (t != DType.F32 && t != DType.BF16 && t != DType.F16) return false;
    long image = (long) n * c * g.hw();
    long grid = (long) n * k * g.cols();
    if (image > Integer.MAX_VALUE || grid > Integer.MAX_VALUE || image == 0 || grid == 0) return false;
    return g.oh() == gridSize(g.h(), g.kh(), g.sh(), g.ph(), g.dh()) && g.ow() == gridSize(g.w(), g.kw(), g.sw(),
        g.pw(), g.dw());
  }

  /** cuDNN's output size along one dimension, or -1 where the kernel does not fit. */
  static int gridSize(int size, int kernel, int stride, int pad, int dilation) {
    long span = (long) size + 2L * pad - (long) dilation * (kernel - 1) - 1;
    return span < 0 ? -1 : (int) (span / stride + 1);
  }

  private static int dataType(DType t) {
    if (t == DType.BF16) return Cudnn.DATA_BFLOAT16;
    if (t == DType.F16) return Cudnn.DATA_HALF;
    return Cudnn.DATA_FLOAT;
  }

  private Plan plan(Key key) {
    return plans.computeIfAbsent(key, k -> {
      ConvGeometry g = k.g();
      int math = k.dtype() == DType.F32 && !k.tf32() ? Cudnn.FMA_MATH : Cudnn.TENSOR_OP_MATH;
      Plan p;
      try {
        Cudnn.Descriptors d = lib.descriptors(dataType(k.dtype()), Cudnn.DATA_FLOAT, math, k.n(), k.c(), g.h(), g.w(),
            k.k(), k.groups(), g.kh(), g.kw(), g.sh(), g.sw(), g.ph(), g.pw(), g.dh(), g.dw());
        p = new Plan(d);
        if (!Arrays.equals(lib.outputDims(d.conv(), d.x(), d.w()), new int[] {k.n(), k.k(), g.oh(), g.ow()})) {
          Arrays.fill(p.algos, NONE);
        }
      } catch (CudaException e) { // a shape this cuDNN rejects: the im2col kernels take it
        p = new Plan(null);
        Arrays.fill(p.algos, NONE);
      }
      return p;
    });
  }

  private Algo algo(Plan p, Key key, Direction dir) {
    synchronized (p) {
      Algo a = p.algos[dir.ordinal()];
      if (a == null) {
        try {
          Optional<Cudnn.AlgoPerf> best = Cudnn.choose(lib.algorithms(dir, handle, p.d), key.dtype() == DType.F32,
              key.tf32(), MAX_WORKSPACE);
          a = best.map(b -> new Algo(b.algo(), b.mathType(), lib.workspaceSize(dir, handle, p.d, b.algo())))
              .orElse(NONE);
        } catch (CudaException e) { // no ranking for this direction (CUDNN_STATUS_NOT_SUPPORTED): im2col takes it
          a = NONE;
        }
        p.algos[dir.ordinal()] = a;
      }
      return a;
    }
  }

  /**
   * Runs {@code dir} for the convolution of an image [n, c, h, w] with a filter [k, c/groups, kh, kw] into a grid [n,
   * k, oh, ow] on device buffers (see {@link Cudnn#run}; the written one plus its old contents when {@code
   * accumulate}). False, having enqueued nothing, when cuDNN has no deterministic algorithm for it or a buffer is
   * not {@link #ALIGN}-aligned.
   */
  boolean run(Direction dir, DType t, int n, int c, int k, int groups, ConvGeometry g, long image, long filter,
      long grid, boolean accumulate) {
    // cuDNN's tensor-core kernels assume 16-byte aligned buffers (the caching allocator's blocks are 512-byte
    // aligned; a view at an odd offset is not): such a buffer stays on the im2col path, which copies it aligned
    if (((image | filter | grid) & (ALIGN - 1)) != 0) return false;
    Key key = new Key(t, CudaSettings.allowTf32(), n, c, k, groups, g);
    ctx.makeCurrent();
    Plan p = plan(key);
    Algo a = algo(p, key, dir);
    if (a == NONE) return false;
    long ws = a.workspace() == 0 ? 0 : workspace.get(a.workspace());
    synchronized (this) {
      if (stream != ctx.stream()) {
        stream = ctx.stream();
        lib.setStream(handle, stream);
      }
      lib.mathType(p.d.conv(), a.mathType());
      lib.run(dir, handle, p.d, a.algo(), ws, a.workspace(), image, filter, grid, accumulate,
          t.torchName() + " image [" + n + ", " + c + ", " + g.h() + ", " + g.w() + "], filter [" + k + ", "
              + c / groups + ", " + g.kh() + ", " + g.kw() + "], grid [" + n + ", " + k + ", " + g.oh() + ", " + g.ow()
              + "], groups " + groups);
    }
    return true;
  }
}
