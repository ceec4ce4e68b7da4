package dev.ember.cuda.kernels;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.DeviceMemory;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.View;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Shapes;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * The elementwise primitives on one CUDA device: unary, binary, where, fill, the strided dtype-converting copy and
 * the one-pass unary backwards. One generic kernel per family (source {@code elementwise.cu}), indexed by a Geo
 * struct per operand over the coalesced geometry ({@link Coalesced}), one thread per output element in a
 * grid-stride loop; the op is a runtime code, the dtypes are template arguments, so each (family, dtypes) pair is
 * compiled once, on first use, through the context's {@link KernelCache}. Operands are passed as Geo structs
 * (shape and strides) followed by the addresses of their first elements.
 *
 * <p>Every operand must live on this context's device; the caller (the backend, behind the op layer) has checked
 * shapes and broadcast the inputs to the output's shape. Launches go on the context's stream, asynchronously.
 */
public final class Elementwise {
  /** The kernel families of elementwise.cu: the instantiation macro and how many dtypes it takes. */
  public enum Family {
    UNARY("EW_UNARY", "ew_unary", 2),
    BINARY("EW_BINARY", "ew_binary", 3),
    WHERE("EW_WHERE", "ew_where", 4),
    CONVERT("EW_CONVERT", "ew_convert", 2),
    FILL("EW_FILL", "ew_fill", 1),
    UNARY_BACKWARD("EW_UNARY_BACKWARD", "ew_unary_backward", 1);

    final String macro;
    final String prefix;
    final int dtypes;

    Family(String macro, String prefix, int dtypes) {
      this.macro = macro;
      this.prefix = prefix;
      this.dtypes = dtypes;
    }

    /** How many dtypes name one instantiation of this family. */
    public int dtypes() {
      return dtypes;
    }
  }

  private static final String BODY = load();

  private final CudaContext ctx;
  private final KernelCache cache;
  private final Map<String, Long> functions = new ConcurrentHashMap<>();

  /** The elementwise kernels of {@code ctx}'s device, compiled through its kernel cache. */
  public Elementwise(CudaContext ctx) {
    this.ctx = ctx;
    this.cache = ctx.kernels();
  }

  /** out = op(x) elementwise (x expanded to out's shape); {@code param} as in {@link dev.ember.backend.Backend#unary}. */
  public void unary(UnaryOp op, double param, View x, View out) {
    check("unary", out, "x", x, "out", out);
    launch(Family.UNARY, types(x, out), Coalesced.of(out, x), bases(out, x),
        args -> args.i32(op.ordinal()).f64(param));
  }

  /** out = a op b (a and b expanded to out's shape); comparisons and logical ops write 1 or 0. */
  public void binary(BinaryOp op, View a, View b, View out) {
    check("binary " + op, out, "a", a, "b", b, "out", out);
    launch(Family.BINARY, types(a, b, out), Coalesced.of(out, a, b), bases(out, a, b),
        args -> args.i32(op.ordinal()));
  }

  /** out = cond != 0 ? a : b, all expanded to out's shape. */
  public void where(View cond, View a, View b, View out) {
    check("where", out, "cond", cond, "a", a, "b", b, "out", out);
    launch(Family.WHERE, types(cond, a, b, out), Coalesced.of(out, cond, a, b), bases(out, cond, a, b),
        args -> { });
  }

  /** dst = src converted to dst's dtype, both on this device (same shape, any strides). */
  public void convert(View src, View dst) {
    check("copy", dst, "src", src, "dst", dst);
    launch(Family.CONVERT, types(src, dst), Coalesced.of(dst, src), bases(dst, src), args -> { });
  }

  /**
   * Every element of dst = value converted to dst's dtype: a memset when dst is one dense block and the value's
   * bytes repeat (zero, or any 4-byte or BOOL value), else the fill kernel.
   */
  public void fill(View dst, double value) {
    check("fill", dst, "dst", dst);
    if (dst.numel() == 0) return;
    Coalesced c = Coalesced.of(dst);
    long base = KernelArgs.address(dst);
    long n = dst.numel();
    if (c.rank() == 1 && c.strides()[0][0] == 1) {
      DType t = dst.dtype();
      long zeroBits = Double.doubleToRawLongBits(value);
      if (t == DType.BOOL) {
        ctx.driver().memsetD8(base, value != 0 ? 1 : 0, n, ctx.stream());
        return;
      }
      if (t == DType.F32) {
        ctx.driver().memsetD32(base, Float.floatToRawIntBits((float) value), n, ctx.stream());
        return;
      }
      if (t == DType.I32) {
        ctx.driver().memsetD32(base, toInt(value), n, ctx.stream());
        return;
      }
      if (zeroBits == 0 || (t == DType.I64 && value == 0)) { // +0.0 (not -0.0) for F64; 0 for I64
        ctx.driver().memsetD8(base, 0, n * t.itemSize(), ctx.stream());
        return;
      }
    }
    launch(Family.FILL, new DType[] {dst.dtype()}, c, bases(dst), args -> args.f64(value));
  }

  /**
   * The backward of RELU, TANH or SIGMOID in one pass (see {@link dev.ember.backend.Backend#unaryBackward}); g, ref
   * and out share one floating dtype.
   *
   * @throws IllegalArgumentException for another op, or operands of other dtypes
   */
  public void unaryBackward(UnaryOp op, View g, View ref, View out) {
    if (op != UnaryOp.RELU && op != UnaryOp.TANH && op != UnaryOp.SIGMOID) {
      throw new IllegalArgumentException("unaryBackward: " + op + " has no one-pass backward (RELU, TANH or SIGMOID)");
    }
    DType t = out.dtype();
    if (!t.isFloatingPoint() || g.dtype() != t || ref.dtype() != t) {
      throw new IllegalArgumentException("unaryBackward " + op + ": g, ref and out must share one floating dtype, got "
          + g.dtype() + ", " + ref.dtype() + ", " + t + ": g=" + Shapes.str(g.shapeRef()) + ", ref="
          + Shapes.str(ref.shapeRef()) + ", out=" + Shapes.str(out.shapeRef()));
    }
    check("unaryBackward " + op, out, "g", g, "ref", ref, "out", out);
    launch(Family.UNARY_BACKWARD, new DType[] {t}, Coalesced.of(out, g, ref), bases(out, g, ref),
        args -> args.i32(op.ordinal()));
  }

  // ---------------------------------------------------------------------------------------------- sources

  /** The kernel name of a family's instantiation, e.g. {@code ew_unary_f32_f32}. */
  public static String kernelName(Family f, DType... types) {
    if (!takesHalves(f)) {
      for (DType t : types) if (t.isHalf()) throw Geometry.halfUnsupported(t);
    }
    StringBuilder sb = new StringBuilder(f.prefix);
    for (DType t : types) sb.append('_').append(shortName(t));
    return sb.toString();
  }

  /**
   * The complete CUDA C source of one instantiation (to which KernelCache prepends its prelude): the op codes, the
   * shared body, and the one extern "C" kernel.
   */
  public static String source(Family f, DType... types) {
    if (types.length != f.dtypes) {
      throw new IllegalArgumentException("Elementwise.source: " + f + " takes " + f.dtypes + " dtypes, got "
          + types.length);
    }
    StringBuilder sb = new StringBuilder(BODY.length() + 2048);
    for (UnaryOp op : UnaryOp.values()) define(sb, "U_" + op.name(), op.ordinal());
    for (BinaryOp op : BinaryOp.values()) define(sb, "B_" + op.name(), op.ordinal());
    sb.append(BODY).append('\n').append(f.macro).append('(').append(kernelName(f, types));
    for (DType t : types) sb.append(", ").append(cType(t));
    return sb.append(")\n").toString();
  }

  private static void define(StringBuilder sb, String name, int value) {
    sb.append("#define ").append(name).append(' ').append(value).append('\n');
  }

  /**
   * The dtypes the CUDA kernels compute in: every dtype but the 16-bit floats BF16 and F16 (storage types, which
   * the op layer widens to F32 before any arithmetic, see {@link #storageDtypes()}) and the quantized I8 (CPU
   * only).
   */
  public static DType[] dtypes() {
    return java.util.Arrays.stream(DType.values()).filter(t -> !t.isHalf() && t != DType.I8).toArray(DType[]::new);
  }

  /**
   * The dtypes the data-movement families ({@link Family#CONVERT}, {@link Family#FILL} and {@link Family#WHERE}'s
   * values) take: {@link #dtypes()} and BF16 and F16, which they widen exactly on load and round once on store, as
   * the CPU's copy does.
   */
  public static DType[] storageDtypes() {
    return java.util.Arrays.stream(DType.values()).filter(t -> t != DType.I8).toArray(DType[]::new);
  }

  /** Whether family {@code f} takes 16-bit float operands: the conversions, fills and selections. */
  public static boolean takesHalves(Family f) {
    return f == Family.CONVERT || f == Family.FILL || f == Family.WHERE;
  }

  /**
   * Every instantiation the backend can ask for (each family over all its dtypes: {@link #storageDtypes()} for
   * those that {@linkplain #takesHalves take halves}, but never a half condition, else {@link #dtypes()}), for
   * compile checks.
   */
  public static List<DType[]> instantiations(Family f) {
    List<DType[]> out = new ArrayList<>();
    DType[] all = takesHalves(f) ? storageDtypes() : dtypes();
    int total = 1;
    for (int i = 0; i < f.dtypes; i++) total *= all.length;
    for (int code = 0; code < total; code++) {
      DType[] t = new DType[f.dtypes];
      int c = code;
      for (int i = f.dtypes - 1; i >= 0; i--) {
        t[i] = all[c % all.length];
        c /= all.length;
      }
      if (f == Family.UNARY_BACKWARD && !t[0].isFloatingPoint()) continue;
      if (f == Family.WHERE && t[0].isHalf()) continue; // the op layer's conditions are BOOL or numbers
      out.add(t);
    }
    return out;
  }

  static String cType(DType t) {
    return switch (t) {
      case F32 -> "float";
      case F64 -> "double";
      case I64 -> "long long";
      case I32 -> "int";
      case BOOL -> "ebool";
      case BF16 -> "ebf16";
      case F16 -> "ef16";
      case I8 -> throw Geometry.halfUnsupported(t);
    };
  }

  private static String shortName(DType t) {
    return switch (t) {
      case F32 -> "f32";
      case F64 -> "f64";
      case I64 -> "i64";
      case I32 -> "i32";
      case BOOL -> "b8";
      case BF16 -> "bf16";
      case F16 -> "f16";
      case I8 -> throw Geometry.halfUnsupported(t);
    };
  }

  private static String load() {
    try (InputStream in = Elementwise.class.getResourceAsStream("elementwise.cu")) {
      if (in == null) throw new IllegalStateException("Elementwise: resource elementwise.cu is missing from the jar");
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ---------------------------------------------------------------------------------------------- launches

  private long function(Family f, DType[] types) {
    String name = kernelName(f, types);
    return functions.computeIfAbsent(name, n -> cache.function("elementwise/" + n, source(f, types), n));
  }

  /**
   * Launches the family's kernel for {@code types} over {@code layout} (in blocks of at most MAXR axes), with the
   * arguments every family takes: one Geo per operand, then the address of each operand's first element, then
   * {@code tail}'s.
   */
  private void launch(Family f, DType[] types, Coalesced layout, long[][] bases, Consumer<KernelArgs> tail) {
    if (layout.numel() == 0) return;
    long fn = function(f, types);
    layout.forEachBlock(block -> {
      KernelArgs args = KernelArgs.begin();
      for (int k = 0; k < bases.length; k++) args.geo(block.shape(), block.strides()[k]);
      for (int k = 0; k < bases.length; k++) args.ptr(bases[k][0] + block.offsets()[k] * bases[k][1]);
      tail.accept(args);
      cache.launch1d(fn, block.numel(), args);
    });
  }

  /** The operands must be on this context's device and of out's shape. */
  private void check(String op, View out, Object... namedViews) {
    Device device = device();
    for (int i = 0; i < namedViews.length; i += 2) {
      String name = (String) namedViews[i];
      View v = (View) namedViews[i + 1];
      Device d = v.storage().device();
      if (d != device) {
        throw new IllegalArgumentException(op + ": " + name + " is on " + d + ", expected " + device + ": " + name
            + "=" + Shapes.str(v.shapeRef()));
      }
      if (v != out && !java.util.Arrays.equals(v.shapeRef(), out.shapeRef())) {
        throw new IllegalArgumentException(op + ": " + name + " is not expanded to the output's shape: " + name + "="
            + Shapes.str(v.shapeRef()) + ", out=" + Shapes.str(out.shapeRef()));
      }
    }
  }

  private Device device() {
    return Device.cuda(ctx.ordinal());
  }

  private static DType[] types(View... views) {
    DType[] t = new DType[views.length];
    for (int i = 0; i < views.length; i++) t[i] = views[i].dtype();
    return t;
  }

  /** Per view, {storage base address, element size}: the kernel's pointer is base + offset * size. */
  private static long[][] bases(View... views) {
    long[][] b = new long[views.length][];
    for (int i = 0; i < views.length; i++) {
      DeviceMemory m = views[i].storage().memory();
      b[i] = new long[] {m.address(), views[i].dtype().itemSize()};
    }
    return b;
  }

  /** Java's (int) of a double: toward zero, saturating, NaN to 0. */
  private static int toInt(double v) {
    return (int) v;
  }
}
