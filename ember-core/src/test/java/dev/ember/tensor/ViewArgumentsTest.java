package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.testing.Arr;
import dev.ember.testing.GradCheck;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The arguments of the view ops (narrow, slice, select, expand, reshape, view, squeeze, unsqueeze,
 * transpose, permute, flatten, split, chunk) against an independent reference of PyTorch's rules:
 * which arguments are errors, how negative indices wrap, how slice clamps. For random shapes (rank
 * 0 to 4, with size-0 and size-1 dims) and random arguments (negative, out of range, extreme), Ember
 * must either give the reference's shape and values or throw a {@link TensorArgumentException} from
 * that op exactly when the reference says error; views must share the base's storage and write
 * through to exactly the elements they show, and gradients must land on exactly those elements.
 */
class ViewArgumentsTest {
  private static final int CASES = 2000;

  // ------------------------------------------------------------------ the cases

  private static Tensor grid(int... shape) {
    return Tensor.arange(0, Shapes.numel(shape), 1, DType.F32).reshape(shape);
  }

  private static TensorArgumentException rejects(String op, Runnable call) {
    TensorArgumentException e = assertThrows(TensorArgumentException.class, call::run);
    assertEquals(op, e.op(), e.getMessage());
    return e;
  }

  @Test
  void narrowWrapsANegativeStartAndRejectsRangesOutsideTheDim() {
    Tensor x = grid(3, 2);
    Tensor last = x.narrow(0, -1, 1); // was empty
    assertArrayEquals(new int[] {1, 2}, last.shape());
    assertArrayEquals(new float[] {4, 5}, last.toFloatArray());
    assertArrayEquals(new float[] {2, 3, 4, 5}, x.narrow(0, -2, 2).toFloatArray());
    assertArrayEquals(new int[] {0, 2}, x.narrow(0, 3, 0).shape()); // start == size is the empty end
    assertArrayEquals(new int[] {3, 0}, x.narrow(-1, 2, 0).shape());

    // were 2 rows: the range was clamped to [1, 3) and [0, 2)
    assertEquals("narrow: start (1) + length (5) exceeds dimension size (3) of dim 0: x=[3, 2]",
        rejects("narrow", () -> x.narrow(0, 1, 5)).getMessage());
    assertEquals("narrow: length must be non-negative, got -1: x=[3, 2]",
        rejects("narrow", () -> x.narrow(0, 0, -1)).getMessage());
    assertEquals("narrow: start 4 out of range for dim 0 of size 3 (valid: -3..3): x=[3, 2]",
        rejects("narrow", () -> x.narrow(0, 4, 0)).getMessage());
    assertEquals("narrow: start -4 out of range for dim 0 of size 3 (valid: -3..3): x=[3, 2]",
        rejects("narrow", () -> x.narrow(0, -4, 1)).getMessage());
    assertEquals("narrow: start (2) + length (2) exceeds dimension size (3) of dim 0: x=[3, 2]",
        rejects("narrow", () -> x.narrow(0, -1, 2)).getMessage());
    rejects("narrow", () -> x.narrow(2, 0, 1));
    // start + length overflowed int: MAX_VALUE + 1 wrapped to a negative end, an empty view
    rejects("narrow", () -> x.narrow(0, 1, Integer.MAX_VALUE));
    assertEquals("narrow: cannot be applied to a 0-dim tensor (dim 0): x=[]",
        rejects("narrow", () -> Tensor.scalar(1).narrow(0, 0, 1)).getMessage());
  }

  @Test
  void zeroDimTensorsHaveNoDimToIndexButAcceptDimZeroWherePyTorchDoes() {
    Tensor s = Tensor.scalar(7);
    // these read shape[0] of a 0-d tensor: ArrayIndexOutOfBoundsException
    rejects("select", () -> s.select(0, 0));
    rejects("slice", () -> s.slice(-1, 0, 1, 1));
    rejects("split", () -> s.split(1, 0));
    rejects("chunk", () -> s.chunk(1, 0));
    rejects("size", () -> s.size(0));
    // these accepted any dim
    rejects("squeeze", () -> s.squeeze(3));
    rejects("transpose", () -> s.transpose(0, 2));
    rejects("flatten", () -> s.flatten(0, 5));
    rejects("mT", () -> grid(3).mT()); // said "axis -2 out of range"; torch: only matrices or batches of them
    // and these are fine, as in PyTorch
    assertSame(s, s.squeeze(-1));
    assertSame(s, s.transpose(0, -1));
    assertSame(s, s.mT()); // as torch 1.13
    assertArrayEquals(new int[] {1}, s.flatten(-1, 0).shape());
    assertArrayEquals(new int[] {1}, s.unsqueeze(-1).shape());
    rejects("unsqueeze", () -> s.unsqueeze(1));
  }

  @Test
  void sliceClampsLikePythonAndRejectsANonPositiveStep() {
    Tensor x = grid(5);
    assertArrayEquals(new float[] {3, 4}, x.slice(0, -2, 100, 1).toFloatArray());
    assertArrayEquals(new float[] {0, 1}, x.slice(0, -100, 2, 1).toFloatArray());
    assertArrayEquals(new float[] {1}, x.slice(0, 1, 5, Integer.MAX_VALUE).toFloatArray()); // length was -1073741823
    assertArrayEquals(new float[] {0, 4}, x.slice(0, Integer.MIN_VALUE, Integer.MAX_VALUE, 4).toFloatArray());
    assertEquals(0, x.slice(0, 4, 2, 1).numel());
    assertEquals("slice: step must be positive, got -1: x=[5]", rejects("slice", () -> x.slice(0, 0, 5, -1)).getMessage());
  }

  @Test
  void expandKeepsMinusOneOnlyInExistingDims() {
    Tensor col = grid(3, 1);
    assertArrayEquals(new int[] {2, 3, 4}, col.expand(2, -1, 4).shape());
    assertArrayEquals(new int[] {3, 0}, col.expand(-1, 0).shape());
    assertEquals("expand: size -1 is not allowed in the new leading dim 0: x=[3, 1], target=[-1, 3, 4]",
        rejects("expand", () -> col.expand(-1, 3, 4)).getMessage());
    assertEquals("expand: size 3 at dim 0 cannot expand to 2: x=[3, 1], target=[2, 4]",
        rejects("expand", () -> col.expand(2, 4)).getMessage());
    rejects("expand", () -> col.expand(3, -2));
    rejects("expand", () -> col.expand(4));
  }

  @Test
  void splitAndChunkOfAnEmptyDimAsPyTorch() {
    Tensor e = grid(0, 3);
    assertEquals(1, e.split(0, 0).size()); // split size 0 is allowed only for an empty dim
    assertEquals(1, e.split(2, 0).size());
    List<Tensor> ch = e.chunk(3, 0); // torch.empty(0, 3).chunk(3): three [0, 3] pieces
    assertEquals(3, ch.size());
    for (Tensor c : ch) assertArrayEquals(new int[] {0, 3}, c.shape());
    rejects("split", () -> grid(4, 2).split(0, 0));
    rejects("split", () -> grid(4, 2).split(-1, 0));
    rejects("chunk", () -> grid(4, 2).chunk(0, 1));
    assertEquals(5, grid(5).chunk(Integer.MAX_VALUE, 0).size());
    assertEquals(1, grid(5).split(Integer.MAX_VALUE, 0).size());
  }

  @Test
  void reshapeRejectsAShapeWhoseProductOverflows() {
    Tensor e = Tensor.zeros(0);
    // 65536^4 = 2^64 wrapped to 0 and matched the 0 elements
    rejects("reshape", () -> e.reshape(65536, 65536, 65536, 65536));
    assertArrayEquals(new int[] {2, 0, 3}, e.reshape(2, 0, 3).shape());
    rejects("reshape", () -> e.reshape(0, -1)); // -1 is ambiguous when the others multiply to 0
    rejects("view", () -> grid(2, 3).view(-1, 0));
  }

  @Test
  void gradientsOfNarrowSelectAndSliceReachTheirElements() {
    Tensor x = Tensor.randn(new Generator(5), DType.F64, 4, 5).requiresGrad(true);
    GradCheck.check("narrow", l -> l.get(0).narrow(0, -3, 2), List.of(x));
    GradCheck.check("select", l -> l.get(0).select(1, -2), List.of(x));
    GradCheck.check("slice", l -> l.get(0).slice(1, -4, 100, 2), List.of(x));
    GradCheck.check("narrow_of_transpose", l -> l.get(0).t().narrow(1, 1, 3).select(0, -1), List.of(x));
    x.setGrad(null);
    x.narrow(0, -1, 1).sum().backward();
    double[] g = x.grad().toDoubleArray();
    for (int i = 0; i < g.length; i++) assertEquals(i >= 15 ? 1.0 : 0.0, g[i], "element " + i);
  }

  // ------------------------------------------------------------------ PyTorch's answers

  private static int[] ints(String s) {
    return s.equals("-") ? new int[0] : Arrays.stream(s.split(",")).mapToInt(Integer::parseInt).toArray();
  }

  /** The op of a fixture line with its arguments (for expand, reshape, view and permute: the one list). */
  private static Case fixtureCase(String op, int[] a) {
    return switch (op) {
      case "narrow" -> one(s -> narrow(s, a[0], a[1], a[2]), t -> t.narrow(a[0], a[1], a[2]));
      case "slice" -> one(s -> slice(s, a[0], a[1], a[2], a[3]), t -> t.slice(a[0], a[1], a[2], a[3]));
      case "select" -> one(s -> select(s, a[0], a[1]), t -> t.select(a[0], a[1]));
      case "expand" -> one(s -> expand(s, a), t -> t.expand(a));
      case "reshape" -> one(s -> reshape(s, a), t -> t.reshape(a));
      case "view" -> one(s -> reshape(s, a), t -> t.view(a));
      case "squeeze" -> a.length == 0 ? one(s -> squeeze(s), Tensor::squeeze) : one(s -> squeeze(s, a[0]), t -> t.squeeze(a[0]));
      case "unsqueeze" -> one(s -> unsqueeze(s, a[0]), t -> t.unsqueeze(a[0]));
      case "transpose" -> one(s -> transpose(s, a[0], a[1]), t -> t.transpose(a[0], a[1]));
      case "permute" -> one(s -> permute(s, a), t -> t.permute(a));
      case "flatten" -> one(s -> flatten(s, a[0], a[1]), t -> t.flatten(a[0], a[1]));
      case "split" -> many(s -> split(s, a[0], a[1]), t -> t.split(a[0], a[1]));
      case "chunk" -> many(s -> chunk(s, a[0], a[1]), t -> t.chunk(a[0], a[1]));
      default -> throw new AssertionError("unknown op in the fixture: " + op);
    };
  }

  /**
   * view_fixtures.txt holds PyTorch 1.13's answers to tricky arguments (make_view_fixtures.py beside
   * it writes them): both the reference below and Ember must give exactly those, so the reference
   * the random cases trust is itself checked against PyTorch.
   */
  @Test
  void theReferenceAndEmberGivePyTorchsAnswers() throws IOException {
    List<String> lines;
    try (InputStream in = ViewArgumentsTest.class.getResourceAsStream("view_fixtures.txt")) {
      lines = new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().filter(l -> !l.isBlank()).toList();
    }
    assertTrue(lines.size() > 1000, "fixture cases: " + lines.size());
    for (String line : lines) {
      String[] sides = line.split(" -> ");
      String[] head = sides[0].split(" ");
      int[] shape = ints(head[1]);
      Case c = fixtureCase(head[0], ints(head[2]));
      List<RefView> torch = null;
      if (!sides[1].equals("error")) {
        torch = new ArrayList<>();
        for (String piece : sides[1].split(" ")) {
          String[] sv = piece.split(":");
          torch.add(new RefView(ints(sv[0]), ints(sv[1])));
        }
      }
      List<RefView> ref;
      try {
        ref = c.ref(shape.clone());
      } catch (RefError e) {
        ref = null;
        if (torch != null) fail(line + ": the reference says error (" + e.getMessage() + ")");
      }
      if (ref != null) {
        if (torch == null) fail(line + ": the reference allows it");
        assertEquals(torch.size(), ref.size(), line + ": reference's number of results");
        for (int k = 0; k < ref.size(); k++) {
          assertArrayEquals(torch.get(k).shape, ref.get(k).shape, line + ": reference's shape " + k);
          assertArrayEquals(torch.get(k).src, ref.get(k).src, line + ": reference's elements " + k);
        }
      }
      Tensor base = Tensor.arange(0, Arr.numel(shape), 1, DType.F64).reshape(shape);
      List<Tensor> got;
      try {
        got = c.ember(base);
      } catch (TensorArgumentException e) {
        if (torch != null) fail(line + ": Ember threw " + e.getMessage());
        assertEquals(head[0], e.op(), line);
        continue;
      }
      if (torch == null) fail(line + ": Ember returned " + got.stream().map(t -> Arrays.toString(t.shape())).toList());
      assertEquals(torch.size(), got.size(), line + ": number of results");
      for (int k = 0; k < got.size(); k++) {
        assertArrayEquals(torch.get(k).shape, got.get(k).shape(), line + ": shape " + k);
        assertArrayEquals(Arrays.stream(torch.get(k).src).asDoubleStream().toArray(), got.get(k).toDoubleArray(),
            line + ": values " + k);
      }
    }
  }

  // ------------------------------------------------------------------ the reference

  /** The reference's answer: a result's shape and, per element in row-major order, the base element it shows. */
  private record RefView(int[] shape, int[] src) {}

  /** The reference rejects the arguments. */
  private static final class RefError extends RuntimeException {
    RefError(String why) {
      super(why, null, false, false);
    }
  }

  /** The result of shape {@code out} whose element at index o shows the base element at {@code in.apply(o)}. */
  private static RefView gather(int[] base, int[] out, Function<int[], int[]> in) {
    Arr outIdx = Arr.zeros(out); // only its row-major index arithmetic is used
    Arr baseIdx = Arr.zeros(base);
    int[] src = new int[outIdx.numel()];
    for (int i = 0; i < src.length; i++) {
      int[] b = in.apply(outIdx.index(i));
      for (int d = 0; d < base.length; d++) {
        if (b[d] < 0 || b[d] >= base[d]) throw new AssertionError("reference bug: index " + Arrays.toString(b));
      }
      src[i] = baseIdx.flat(b);
    }
    return new RefView(out, src);
  }

  /** The same elements in the same order under another shape. */
  private static RefView sameOrder(int[] base, int[] out) {
    int[] src = new int[Arr.numel(base)];
    for (int i = 0; i < src.length; i++) src[i] = i;
    return new RefView(out, src);
  }

  /** PyTorch's maybe_wrap_dim: an index into {@code size} things, a 0-size one wrapping as if it were 1. */
  private static int wrap(long dim, int size) {
    int n = Math.max(size, 1);
    if (dim < -n || dim >= n) throw new RefError("index " + dim + " out of [" + -n + ", " + (n - 1) + "]");
    return (int) (dim < 0 ? dim + n : dim);
  }

  private static void needDims(int[] base) {
    if (base.length == 0) throw new RefError("0-dim tensor");
  }

  private static int[] without(int[] a, int at) {
    int[] o = new int[a.length - 1];
    for (int i = 0, j = 0; i < a.length; i++) if (i != at) o[j++] = a[i];
    return o;
  }

  private static int[] with(int[] a, int at, int v) {
    int[] o = new int[a.length + 1];
    for (int i = 0, j = 0; i < o.length; i++) o[i] = i == at ? v : a[j++];
    return o;
  }

  /** torch.narrow: start wraps as a dim index unless it equals the size; the range may not pass the end. */
  private static RefView narrow(int[] base, int dim, int start, int length) {
    needDims(base);
    int ax = wrap(dim, base.length);
    if (length < 0) throw new RefError("negative length");
    int n = base[ax];
    long s = start == n ? n : wrap(start, n);
    if (s + length > n) throw new RefError("past the end");
    int[] out = base.clone();
    out[ax] = length;
    return gather(base, out, o -> {
      o[ax] += (int) s;
      return o;
    });
  }

  /** Python's x[start:end:step] along dim (as at::slice). */
  private static RefView slice(int[] base, int dim, int start, int end, int step) {
    needDims(base);
    int ax = wrap(dim, base.length);
    if (step <= 0) throw new RefError("step <= 0");
    long n = base[ax];
    long s = Math.min(Math.max(start < 0 ? start + n : start, 0), n);
    long e = Math.min(Math.max(end < 0 ? end + n : end, s), n);
    int len = (int) ((e - s + step - 1) / step);
    int[] out = base.clone();
    out[ax] = len;
    return gather(base, out, o -> {
      o[ax] = (int) (s + (long) o[ax] * step);
      return o;
    });
  }

  private static RefView select(int[] base, int dim, int index) {
    needDims(base);
    int ax = wrap(dim, base.length);
    int n = base[ax];
    if (index < -n || index >= n) throw new RefError("index out of range");
    int i = index < 0 ? index + n : index;
    return gather(base, without(base, ax), o -> with(o, ax, i));
  }

  /** torch.expand: -1 keeps an existing size, new leading dims take any size >= 0, only size-1 dims change. */
  private static RefView expand(int[] base, int[] sizes) {
    if (sizes.length < base.length) throw new RefError("fewer sizes than dims");
    int lead = sizes.length - base.length;
    int[] out = new int[sizes.length];
    for (int d = 0; d < sizes.length; d++) {
      if (d < lead) {
        if (sizes[d] < 0) throw new RefError("negative leading size");
        out[d] = sizes[d];
        continue;
      }
      int have = base[d - lead];
      int want = sizes[d] == -1 ? have : sizes[d];
      if (want != have && (have != 1 || want < 0)) throw new RefError("cannot expand");
      out[d] = want;
    }
    return gather(base, out, o -> {
      int[] b = new int[base.length];
      for (int d = 0; d < base.length; d++) b[d] = base[d] == 1 ? 0 : o[d + lead];
      return b;
    });
  }

  /** torch.reshape / view of a viewable tensor: one -1 at most, inferred from the others; sizes must multiply to numel. */
  private static RefView reshape(int[] base, int[] sizes) {
    int infer = -1;
    BigInteger known = BigInteger.ONE;
    for (int i = 0; i < sizes.length; i++) {
      if (sizes[i] == -1) {
        if (infer >= 0) throw new RefError("two -1");
        infer = i;
      } else if (sizes[i] < 0) {
        throw new RefError("negative size");
      } else {
        known = known.multiply(BigInteger.valueOf(sizes[i]));
      }
    }
    BigInteger total = BigInteger.valueOf(Arr.numel(base));
    int[] out = sizes.clone();
    if (infer >= 0) {
      if (known.signum() == 0 || total.mod(known).signum() != 0) throw new RefError("cannot infer");
      out[infer] = total.divide(known).intValueExact();
    } else if (!known.equals(total)) {
      throw new RefError("numel differs");
    }
    return sameOrder(base, out);
  }

  private static RefView squeeze(int[] base) {
    return sameOrder(base, Arrays.stream(base).filter(d -> d != 1).toArray());
  }

  private static RefView squeeze(int[] base, int dim) {
    int ax = wrap(dim, base.length);
    return base.length == 0 || base[ax] != 1 ? sameOrder(base, base) : sameOrder(base, without(base, ax));
  }

  private static RefView unsqueeze(int[] base, int dim) {
    return sameOrder(base, with(base, wrap(dim, base.length + 1), 1));
  }

  private static RefView permute(int[] base, int[] dims) {
    if (dims.length != base.length) throw new RefError("wrong number of dims");
    int[] p = new int[dims.length];
    boolean[] seen = new boolean[dims.length];
    for (int i = 0; i < dims.length; i++) {
      p[i] = wrap(dims[i], base.length);
      if (seen[p[i]]) throw new RefError("repeated dim");
      seen[p[i]] = true;
    }
    int[] out = new int[p.length];
    for (int i = 0; i < p.length; i++) out[i] = base[p[i]];
    return gather(base, out, o -> {
      int[] b = new int[p.length];
      for (int i = 0; i < p.length; i++) b[p[i]] = o[i];
      return b;
    });
  }

  private static RefView transpose(int[] base, int d0, int d1) {
    int a = wrap(d0, base.length);
    int b = wrap(d1, base.length);
    if (base.length == 0) return sameOrder(base, base);
    int[] p = new int[base.length];
    for (int i = 0; i < p.length; i++) p[i] = i == a ? b : i == b ? a : i;
    return permute(base, p);
  }

  private static RefView flatten(int[] base, int start, int end) {
    int a = wrap(start, base.length);
    int b = wrap(end, base.length);
    if (base.length == 0) return sameOrder(base, new int[] {1});
    if (a > b) throw new RefError("start after end");
    int[] out = new int[base.length - (b - a)];
    int merged = 1;
    for (int d = a; d <= b; d++) merged *= base[d];
    for (int d = 0, j = 0; d < base.length; d++) {
      if (d < a || d > b) out[j++] = base[d];
      else if (d == a) out[j++] = merged;
    }
    return sameOrder(base, out);
  }

  /** torch.split: pieces of size along dim, the last one shorter; size 0 only for an empty dim, which gives one piece. */
  private static List<RefView> split(int[] base, int size, int dim) {
    needDims(base);
    int ax = wrap(dim, base.length);
    if (size < 0) throw new RefError("negative split size");
    int n = base[ax];
    if (size == 0 && n != 0) throw new RefError("split size 0 of a non-empty dim");
    long pieces = size == 0 ? 1 : Math.max(((long) n + size - 1) / size, 1);
    List<RefView> out = new ArrayList<>();
    for (long k = 0; k < pieces; k++) {
      long from = k * size;
      int[] shape = base.clone();
      shape[ax] = (int) Math.min(size, n - from);
      out.add(gather(base, shape, o -> {
        o[ax] += (int) from;
        return o;
      }));
    }
    return out;
  }

  /** torch.chunk: split by ceil(n / chunks); an empty dim gives chunks empty pieces. */
  private static List<RefView> chunk(int[] base, int chunks, int dim) {
    needDims(base);
    if (chunks <= 0) throw new RefError("chunks <= 0");
    int ax = wrap(dim, base.length);
    int n = base[ax];
    if (n == 0) {
      int[] shape = base.clone();
      List<RefView> out = new ArrayList<>();
      for (int k = 0; k < chunks; k++) out.add(gather(base, shape, o -> o));
      return out;
    }
    return split(base, (int) (((long) n + chunks - 1) / chunks), ax);
  }

  // ------------------------------------------------------------------ random cases

  private static int[] randomShape(Random rnd) {
    int[] s = new int[rnd.nextInt(5)];
    for (int i = 0; i < s.length; i++) s[i] = rnd.nextInt(8) == 0 ? 0 : 1 + rnd.nextInt(rnd.nextBoolean() ? 1 : 4);
    return s;
  }

  private static final int[] EXTREMES = {Integer.MIN_VALUE, Integer.MIN_VALUE + 1, Integer.MAX_VALUE - 1,
      Integer.MAX_VALUE};

  /** An index-like argument around [-n, n]: in range, just outside, or extreme. */
  private static int arg(Random rnd, int n) {
    int r = rnd.nextInt(20);
    if (r == 0) return EXTREMES[rnd.nextInt(EXTREMES.length)];
    if (r < 4) return rnd.nextInt(3) - 1;
    return rnd.nextInt(2 * n + 5) - n - 2;
  }

  private static int dimArg(Random rnd, int rank) {
    return rnd.nextInt(40) == 0 ? EXTREMES[rnd.nextInt(EXTREMES.length)] : rnd.nextInt(2 * rank + 4) - rank - 2;
  }

  private static int size(Random rnd, int[] base, int dim) {
    int r = base.length;
    return r == 0 ? 0 : base[dim < -r || dim >= r ? rnd.nextInt(r) : dim < 0 ? dim + r : dim];
  }

  /**
   * A base with logical values 1..numel in one of three layouts: contiguous, reversed strides, or an
   * offset into a larger buffer. {@code leaf} gets the gradient (it is the base or the buffer it views).
   */
  private record Base(Tensor t, Tensor leaf, int layout) {
    double[] grad() {
      return switch (layout) {
        case 1 -> leaf.grad().permute(reverse(t.dim())).toDoubleArray();
        case 2 -> leaf.grad().narrow(0, 1, (int) t.numel()).toDoubleArray();
        default -> leaf.grad().toDoubleArray();
      };
    }
  }

  private static int[] reverse(int rank) {
    int[] p = new int[rank];
    for (int i = 0; i < rank; i++) p[i] = rank - 1 - i;
    return p;
  }

  private static Base base(int[] shape, int layout, boolean grad) {
    int n = Arr.numel(shape);
    Tensor values = Tensor.arange(1, n + 1, 1, DType.F64);
    return switch (layout) {
      case 1 -> {
        int[] rev = reverse(shape.length);
        int[] rs = new int[shape.length];
        for (int i = 0; i < rs.length; i++) rs[i] = shape[rev[i]];
        Tensor leaf = values.reshape(shape).permute(rev).contiguous().requiresGrad(grad);
        yield new Base(leaf.permute(rev), leaf, layout);
      }
      case 2 -> {
        Tensor buf = Tensor.zeros(DType.F64, n + 3);
        buf.narrow(0, 1, n).copy_(values);
        Tensor leaf = buf.requiresGrad(grad);
        yield new Base(leaf.narrow(0, 1, n).view(shape), leaf, layout);
      }
      default -> {
        Tensor leaf = values.reshape(shape).contiguous().requiresGrad(grad);
        yield new Base(leaf, leaf, layout);
      }
    };
  }

  /** One op under test: its name, the reference's answer and Ember's for a base of the given shape. */
  private interface Case {
    List<RefView> ref(int[] base);

    List<Tensor> ember(Tensor base);
  }

  private static Case one(Function<int[], RefView> ref, Function<Tensor, Tensor> ember) {
    return new Case() {
      public List<RefView> ref(int[] base) {
        return List.of(ref.apply(base));
      }

      public List<Tensor> ember(Tensor base) {
        return List.of(ember.apply(base));
      }
    };
  }

  private static Case many(Function<int[], List<RefView>> ref, Function<Tensor, List<Tensor>> ember) {
    return new Case() {
      public List<RefView> ref(int[] base) {
        return ref.apply(base);
      }

      public List<Tensor> ember(Tensor base) {
        return ember.apply(base);
      }
    };
  }

  /**
   * Runs {@code CASES} random cases of {@code op}: {@code make} builds a case (with its arguments in
   * the description it appends) for a base shape. {@code sharesStorage}: the results are views of the
   * base; {@code disjoint}: they also show each base element at most once, so writes through them can
   * be checked; {@code anyLayout}: the op succeeds on non-contiguous bases (false for view).
   */
  private static void property(String op, long seed, boolean sharesStorage, boolean disjoint, boolean anyLayout,
      CaseMaker make) {
    Random rnd = new Random(seed);
    int errors = 0;
    for (int trial = 0; trial < CASES; trial++) {
      int[] shape = randomShape(rnd);
      StringBuilder what = new StringBuilder(op).append(" case ").append(trial).append(" on ")
          .append(Arrays.toString(shape));
      Case c = make.make(rnd, shape, what);
      int layout = anyLayout ? rnd.nextInt(3) : 0;
      what.append(" (layout ").append(layout).append(')');

      List<RefView> expected;
      String refError = null;
      try {
        expected = c.ref(shape.clone());
      } catch (RefError e) {
        expected = null;
        refError = e.getMessage();
      }
      Base b = base(shape, layout, trial % 4 == 0);
      List<Tensor> got;
      try {
        got = c.ember(b.t);
      } catch (TensorArgumentException e) {
        if (refError == null) fail(what + ": the reference allows it, Ember threw " + e.getMessage());
        assertEquals(op, e.op(), what + ": " + e.getMessage());
        errors++;
        continue;
      } catch (RuntimeException e) {
        throw new AssertionError(what + ": Ember threw " + e, e);
      }
      if (refError != null) {
        fail(what + ": expected an error (" + refError + "), Ember returned shapes "
            + got.stream().map(t -> Arrays.toString(t.shape())).toList());
      }
      compare(what.toString(), expected, got, b, sharesStorage, disjoint, trial % 4 == 0, rnd);
    }
    // the generator must reach both outcomes often, or the property says little
    assertTrue(errors > CASES / 20 && errors < CASES * 19 / 20, op + ": " + errors + " errors in " + CASES + " cases");
  }

  @FunctionalInterface
  private interface CaseMaker {
    Case make(Random rnd, int[] shape, StringBuilder what);
  }

  private static void compare(String what, List<RefView> expected, List<Tensor> got, Base b, boolean sharesStorage,
      boolean disjoint, boolean checkGrad, Random rnd) {
    assertEquals(expected.size(), got.size(), what + ": number of results");
    double[] before = b.t.toDoubleArray();
    for (int k = 0; k < got.size(); k++) {
      RefView e = expected.get(k);
      Tensor t = got.get(k);
      assertArrayEquals(e.shape, t.shape(), what + ": shape of result " + k);
      double[] want = new double[e.src.length];
      for (int i = 0; i < want.length; i++) want[i] = before[e.src[i]];
      assertArrayEquals(want, t.toDoubleArray(), what + ": values of result " + k);
      if (sharesStorage) assertSame(b.t.storage(), t.storage(), what + ": result " + k + " is not a view");
    }
    if (checkGrad) {
      // d/d base of sum_k sum(result_k * w_k) is w scattered (added) onto the elements each result shows
      double[] expectGrad = new double[before.length];
      Tensor loss = Tensor.scalar(0, DType.F64);
      for (int k = 0; k < got.size(); k++) {
        int[] src = expected.get(k).src;
        double[] w = new double[src.length];
        for (int i = 0; i < w.length; i++) {
          w[i] = rnd.nextInt(7) - 3;
          expectGrad[src[i]] += w[i];
        }
        loss = loss.add(got.get(k).mul(Tensor.of(w, expected.get(k).shape)).sum());
      }
      assertTrue(loss.requiresGrad(), what + ": the results are cut from the graph");
      loss.backward();
      assertArrayEquals(expectGrad, b.grad(), what + ": gradient of the base");
      return; // a base that requires grad is not written in place
    }
    if (disjoint) {
      // writes through result k land on exactly the elements it shows
      double[] want = before.clone();
      for (int k = 0; k < got.size(); k++) {
        got.get(k).fill_(-(k + 1));
        for (int s : expected.get(k).src) want[s] = -(k + 1);
      }
      assertArrayEquals(want, b.t.toDoubleArray(), what + ": base after writing through the results");
    }
  }

  private static Case describe(StringBuilder what, String args, Case c) {
    what.append(": ").append(args);
    return c;
  }

  @Test
  void narrowMatchesTheReference() {
    property("narrow", 1, true, true, true, (rnd, shape, what) -> {
      int dim = dimArg(rnd, shape.length);
      int n = size(rnd, shape, dim);
      int start = arg(rnd, n);
      int length = rnd.nextInt(5) == 0 ? arg(rnd, n) : rnd.nextInt(n + 2);
      return describe(what, "narrow(" + dim + ", " + start + ", " + length + ")",
          one(s -> narrow(s, dim, start, length), t -> t.narrow(dim, start, length)));
    });
  }

  @Test
  void sliceMatchesTheReference() {
    property("slice", 2, true, true, true, (rnd, shape, what) -> {
      int dim = dimArg(rnd, shape.length);
      int n = size(rnd, shape, dim);
      int start = arg(rnd, n);
      int end = arg(rnd, n);
      int step = rnd.nextInt(10) == 0 ? arg(rnd, 3) : rnd.nextInt(4) + (rnd.nextInt(6) == 0 ? -1 : 1);
      return describe(what, "slice(" + dim + ", " + start + ", " + end + ", " + step + ")",
          one(s -> slice(s, dim, start, end, step), t -> t.slice(dim, start, end, step)));
    });
  }

  @Test
  void selectMatchesTheReference() {
    property("select", 3, true, true, true, (rnd, shape, what) -> {
      int dim = dimArg(rnd, shape.length);
      int index = arg(rnd, size(rnd, shape, dim));
      return describe(what, "select(" + dim + ", " + index + ")",
          one(s -> select(s, dim, index), t -> t.select(dim, index)));
    });
  }

  @Test
  void expandMatchesTheReference() {
    property("expand", 4, true, false, true, (rnd, shape, what) -> {
      int rank = Math.max(0, shape.length + rnd.nextInt(4) - 1);
      int[] sizes = new int[rank];
      int lead = rank - shape.length;
      for (int d = 0; d < rank; d++) {
        int have = d < lead ? 1 : shape[d - lead];
        int r = rnd.nextInt(10);
        // an extreme size only where it is an error: a valid one would make a huge (stride-0) result to read
        int extreme = d >= lead && have > 1 ? Integer.MAX_VALUE : Integer.MIN_VALUE;
        sizes[d] = r < 4 ? have : r < 6 ? -1 : r < 8 ? rnd.nextInt(4) : r < 9 ? -2 : extreme;
      }
      return describe(what, "expand(" + Arrays.toString(sizes) + ")",
          one(s -> expand(s, sizes), t -> t.expand(sizes)));
    });
  }

  private static int[] reshapeSizes(Random rnd, int[] shape) {
    int n = Arr.numel(shape);
    int rank = rnd.nextInt(5);
    int[] sizes = new int[rank];
    int left = n;
    for (int d = 0; d < rank; d++) {
      int r = rnd.nextInt(12);
      if (r == 0) sizes[d] = -1;
      else if (r == 1) sizes[d] = arg(rnd, 3);
      else if (r < 4) sizes[d] = rnd.nextInt(4);
      else {
        // a divisor of what is left, so a good share of the shapes fit
        int dv = 1;
        for (int k = 1 + rnd.nextInt(4); k >= 1; k--) if (left % k == 0) { dv = k; break; }
        sizes[d] = d == rank - 1 ? left : dv;
        left = dv == 0 ? left : left / Math.max(dv, 1);
      }
    }
    if (rank > 0 && rnd.nextInt(3) == 0) sizes[rnd.nextInt(rank)] = -1;
    return sizes;
  }

  @Test
  void reshapeMatchesTheReference() {
    property("reshape", 5, false, false, true, (rnd, shape, what) -> {
      int[] sizes = reshapeSizes(rnd, shape);
      return describe(what, "reshape(" + Arrays.toString(sizes) + ")",
          one(s -> reshape(s, sizes), t -> t.reshape(sizes)));
    });
  }

  @Test
  void viewMatchesTheReferenceOnContiguousTensors() {
    property("view", 6, true, true, false, (rnd, shape, what) -> {
      int[] sizes = reshapeSizes(rnd, shape);
      return describe(what, "view(" + Arrays.toString(sizes) + ")", one(s -> reshape(s, sizes), t -> t.view(sizes)));
    });
  }

  @Test
  void squeezeAndUnsqueezeMatchTheReference() {
    property("squeeze", 7, true, true, true, (rnd, shape, what) -> {
      if (rnd.nextInt(4) == 0) return describe(what, "squeeze()", one(s -> squeeze(s), Tensor::squeeze));
      int dim = dimArg(rnd, shape.length);
      return describe(what, "squeeze(" + dim + ")", one(s -> squeeze(s, dim), t -> t.squeeze(dim)));
    });
    property("unsqueeze", 8, true, true, true, (rnd, shape, what) -> {
      int dim = dimArg(rnd, shape.length + 1);
      return describe(what, "unsqueeze(" + dim + ")", one(s -> unsqueeze(s, dim), t -> t.unsqueeze(dim)));
    });
  }

  @Test
  void transposeAndPermuteMatchTheReference() {
    property("transpose", 9, true, true, true, (rnd, shape, what) -> {
      int d0 = dimArg(rnd, shape.length);
      int d1 = dimArg(rnd, shape.length);
      return describe(what, "transpose(" + d0 + ", " + d1 + ")",
          one(s -> transpose(s, d0, d1), t -> t.transpose(d0, d1)));
    });
    property("permute", 10, true, true, true, (rnd, shape, what) -> {
      int rank = rnd.nextInt(6) == 0 ? rnd.nextInt(5) : shape.length;
      List<Integer> order = new ArrayList<>();
      for (int i = 0; i < rank; i++) order.add(i);
      java.util.Collections.shuffle(order, rnd);
      int[] dims = new int[rank];
      for (int i = 0; i < rank; i++) {
        int r = rnd.nextInt(10);
        dims[i] = r < 6 ? order.get(i) : r < 9 ? order.get(i) - rank : dimArg(rnd, rank);
      }
      return describe(what, "permute(" + Arrays.toString(dims) + ")", one(s -> permute(s, dims), t -> t.permute(dims)));
    });
  }

  @Test
  void flattenMatchesTheReference() {
    property("flatten", 11, false, false, true, (rnd, shape, what) -> {
      int a = dimArg(rnd, shape.length);
      int b = dimArg(rnd, shape.length);
      return describe(what, "flatten(" + a + ", " + b + ")", one(s -> flatten(s, a, b), t -> t.flatten(a, b)));
    });
  }

  @Test
  void splitAndChunkMatchTheReference() {
    property("split", 12, true, true, true, (rnd, shape, what) -> {
      int dim = dimArg(rnd, shape.length);
      int n = size(rnd, shape, dim);
      int sz = rnd.nextInt(10) == 0 ? arg(rnd, n) : rnd.nextInt(n + 2);
      return describe(what, "split(" + sz + ", " + dim + ")", many(s -> split(s, sz, dim), t -> t.split(sz, dim)));
    });
    property("chunk", 13, true, true, true, (rnd, shape, what) -> {
      int dim = dimArg(rnd, shape.length);
      int n = size(rnd, shape, dim);
      // an extreme count only where the dim is not empty: an empty dim gives that many pieces
      int chunks = rnd.nextInt(10) == 0 && n > 0 ? arg(rnd, n) : rnd.nextInt(n + 3) - 1;
      return describe(what, "chunk(" + chunks + ", " + dim + ")",
          many(s -> chunk(s, chunks, dim), t -> t.chunk(chunks, dim)));
    });
  }
}
