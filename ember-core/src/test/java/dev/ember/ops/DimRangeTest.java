package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;

/**
 * Every dim-taking op accepts exactly the dims PyTorch 1.13 accepts, on 0-d and n-d inputs, with
 * PyTorch's result shape, and rejects the rest with a {@link TensorArgumentException} naming the op,
 * the dim, the valid range and the input's shape. A 0-d tensor counts as one dim of size 1 (dims 0
 * and -1), as in PyTorch. The cases come from make_dim_range_fixtures.py (dim_range_fixtures.txt).
 */
class DimRangeTest {
  /** Each op as the fixture script calls it, on a float32 input of ones; dims has one entry for single-dim ops. */
  private static final Map<String, BiFunction<Tensor, int[], Tensor>> OPS = new LinkedHashMap<>();

  static {
    OPS.put("argmax", (x, d) -> ReduceOps.argmax(x, d[0], false));
    OPS.put("argmin", (x, d) -> ReduceOps.argmin(x, d[0], true));
    OPS.put("max", (x, d) -> ReduceOps.max(x, d[0], false)[0]);
    OPS.put("min", (x, d) -> ReduceOps.min(x, d[0], true)[0]);
    OPS.put("prod", (x, d) -> ReduceOps.prod(x, d, false));
    OPS.put("all", (x, d) -> ReduceOps.all(x.to(DType.BOOL), d, false));
    OPS.put("any", (x, d) -> ReduceOps.any(x.to(DType.BOOL), d, true));
    OPS.put("softmax", (x, d) -> ReduceOps.softmax(x, d[0], false));
    OPS.put("log_softmax", (x, d) -> ReduceOps.softmax(x, d[0], true));
    OPS.put("cumsum", (x, d) -> ReduceOps.cumsum(x, d[0]));
    OPS.put("gather", (x, d) -> IndexOps.gather(x, d[0], zeroIndex(x)));
    OPS.put("scatter", (x, d) -> IndexOps.scatter(x, d[0], zeroIndex(x), Tensor.ones(x.shapeRef()), false));
    OPS.put("scatter_add", (x, d) -> IndexOps.scatterAdd(x, d[0], zeroIndex(x), Tensor.ones(x.shapeRef())));
    OPS.put("index_select", (x, d) -> IndexOps.indexSelect(x, d[0], Tensor.of(new long[] {0}, 1)));
    OPS.put("take_along_dim", (x, d) -> IndexOps.takeAlongDim(x, zeroIndex(x), d[0]));
    OPS.put("cat", (x, d) -> Tensor.cat(List.of(x, x), d[0]));
    OPS.put("stack", (x, d) -> Tensor.stack(List.of(x, x), d[0]));
    OPS.put("sum", (x, d) -> ReduceOps.sum(x, d, false));
    OPS.put("mean", (x, d) -> ReduceOps.mean(x, d, true));
    OPS.put("var", (x, d) -> ReduceOps.var(x, d, true, false));
    OPS.put("std", (x, d) -> ReduceOps.std(x, d, true, true));
    OPS.put("amax", (x, d) -> ReduceOps.amax(x, d, false));
    OPS.put("amin", (x, d) -> ReduceOps.amin(x, d, true));
    OPS.put("logsumexp", (x, d) -> ReduceOps.logsumexp(x, d, false));
    OPS.put("norm", (x, d) -> ReduceOps.norm(x, 2, d, false));
  }

  private static Tensor zeroIndex(Tensor x) {
    return Tensor.zeros(DType.I64, x.shapeRef());
  }

  private record Case(String op, int[] shape, int[] dims, int[] expected) {
    @Override
    public String toString() {
      return op + " on " + Arrays.toString(shape) + " dims " + Arrays.toString(dims) + " (PyTorch: "
          + (expected == null ? "error" : Arrays.toString(expected)) + ")";
    }
  }

  private static int[] parseInts(String s) {
    String body = s.substring(1, s.length() - 1).trim();
    if (body.isEmpty()) return new int[0];
    return Arrays.stream(body.split(",")).map(String::trim).mapToInt(Integer::parseInt).toArray();
  }

  private static List<Case> fixtures() throws IOException {
    List<Case> cases = new ArrayList<>();
    try (InputStream in = DimRangeTest.class.getResourceAsStream("dim_range_fixtures.txt")) {
      assertTrue(in != null, "dim_range_fixtures.txt missing from the test resources");
      BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      for (String line; (line = r.readLine()) != null; ) {
        if (line.isBlank()) continue;
        String[] f = line.split("\\|");
        cases.add(new Case(f[0], parseInts(f[1]), parseInts(f[2]), f[3].equals("error") ? null : parseInts(f[3])));
      }
    }
    return cases;
  }

  /** Runs one case: the result's shape when accepted, or the checks on the exception when PyTorch refuses. */
  private static void check(Case c) {
    BiFunction<Tensor, int[], Tensor> op = OPS.get(c.op());
    assertTrue(op != null, "no Java binding for " + c.op());
    Tensor x = Tensor.ones(c.shape());
    if (c.expected() != null) {
      Tensor out;
      try {
        out = op.apply(x, c.dims());
      } catch (RuntimeException e) {
        throw new AssertionError(c + ": Ember refused: " + e, e);
      }
      assertArrayEquals(c.expected(), out.shape(), c + ": result shape");
      return;
    }
    RuntimeException e;
    try {
      op.apply(x, c.dims());
      fail(c + ": Ember accepted");
      return;
    } catch (RuntimeException thrown) {
      e = thrown;
    }
    if (!(e instanceof TensorArgumentException te)) throw new AssertionError(c + ": untyped exception " + e, e);
    assertEquals(c.op(), te.op(), c + ": " + te.getMessage());
    String msg = te.getMessage();
    assertTrue(msg.startsWith(c.op() + ": "), c + ": " + msg);
    assertTrue(msg.contains(Arrays.toString(c.shape())), c + ": shape missing in " + msg);
    // cat refuses a 0-d input whatever the dim ("zero-dimensional tensors cannot be concatenated")
    boolean named = c.op().equals("cat") && c.shape().length == 0;
    for (int d : c.dims()) named |= msg.contains(" " + d + " ") || msg.contains(" " + d + ")");
    assertTrue(named, c + ": dim missing in " + msg);
  }

  @Test
  void everyFixtureCaseMatchesPyTorch() throws IOException {
    List<Case> cases = fixtures();
    assertTrue(cases.size() > 2000, "fixture has " + cases.size() + " cases");
    assertEquals(OPS.keySet(), new java.util.LinkedHashSet<>(cases.stream().map(Case::op).toList()));
    List<String> failures = new ArrayList<>();
    for (Case c : cases) {
      try {
        check(c);
      } catch (AssertionError e) {
        failures.add(e.getMessage());
      }
    }
    assertTrue(failures.isEmpty(), failures.size() + " of " + cases.size() + " cases differ from PyTorch:\n"
        + String.join("\n", failures.subList(0, Math.min(40, failures.size()))));
  }

  /**
   * Random ranks 0-4, sizes 1-4 and dims in [-6, 6] against PyTorch's rule, which the fixture confirms:
   * a dim is valid when -max(r, 1) <= dim < max(r, 1) for rank r (r + 1 for stack); take_along_dim and
   * cat refuse every dim of a 0-d input; a dim list may not name an axis twice.
   */
  @Test
  void randomRanksAndDimsFollowPyTorchsRule() {
    SplittableRandom rnd = new SplittableRandom(1913);
    List<String> names = new ArrayList<>(OPS.keySet());
    List<String> failures = new ArrayList<>();
    for (int i = 0; i < 3000; i++) {
      String op = names.get(rnd.nextInt(names.size()));
      int rank = rnd.nextInt(5);
      int[] shape = new int[rank];
      for (int k = 0; k < rank; k++) shape[k] = 1 + rnd.nextInt(4);
      boolean multi = List.of("sum", "mean", "var", "std", "amax", "amin", "logsumexp", "norm").contains(op);
      int[] dims = new int[multi && rnd.nextBoolean() ? 2 : 1];
      for (int k = 0; k < dims.length; k++) dims[k] = rnd.nextInt(-6, 7);
      try {
        check(new Case(op, shape, dims, expectedShape(op, shape, dims)));
      } catch (AssertionError e) {
        failures.add(e.getMessage());
      }
    }
    assertTrue(failures.isEmpty(), failures.size() + " random cases broke the rule:\n"
        + String.join("\n", failures.subList(0, Math.min(40, failures.size()))));
  }

  /** PyTorch's result shape for the case, or null when it raises. */
  private static int[] expectedShape(String op, int[] shape, int[] dims) {
    int r = shape.length;
    if (op.equals("stack")) {
      int span = r + 1;
      if (dims[0] < -span || dims[0] >= span) return null;
      int a = dims[0] < 0 ? dims[0] + span : dims[0];
      int[] out = new int[r + 1];
      for (int k = 0, j = 0; k <= r; k++) out[k] = k == a ? 2 : shape[j++];
      return out;
    }
    if (r == 0 && (op.equals("take_along_dim") || op.equals("cat"))) return null;
    int span = Math.max(r, 1);
    boolean[] hit = new boolean[span];
    for (int d : dims) {
      if (d < -span || d >= span) return null;
      int a = d < 0 ? d + span : d;
      if (hit[a]) return null;
      hit[a] = true;
    }
    if (r == 0) return new int[0];
    boolean keepDim = List.of("argmin", "min", "any", "mean", "std", "amin").contains(op);
    switch (op) {
      case "argmax", "argmin", "max", "min", "prod", "all", "any", "sum", "mean", "var", "std", "amax", "amin",
          "logsumexp", "norm" -> {
        List<Integer> out = new ArrayList<>();
        for (int k = 0; k < r; k++) {
          if (!hit[k]) out.add(shape[k]);
          else if (keepDim) out.add(1);
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
      }
      case "index_select" -> {
        int[] out = shape.clone();
        out[dims[0] < 0 ? dims[0] + r : dims[0]] = 1;
        return out;
      }
      case "cat" -> {
        int[] out = shape.clone();
        out[dims[0] < 0 ? dims[0] + r : dims[0]] *= 2;
        return out;
      }
      default -> {
        return shape.clone(); // softmax, log_softmax, cumsum, gather, scatter, scatter_add, take_along_dim
      }
    }
  }

  @Test
  void zeroDimIndexSelectReturnsTheElement() {
    Tensor x = Tensor.scalar(7.5);
    for (int dim : new int[] {0, -1}) {
      Tensor y = IndexOps.indexSelect(x, dim, Tensor.of(new long[] {0}, 1));
      assertArrayEquals(new int[0], y.shape());
      assertEquals(7.5, y.item());
      Tensor y0 = IndexOps.indexSelect(x, dim, Tensor.scalar(0, DType.I64));
      assertEquals(7.5, y0.item());
    }
    TensorArgumentException e = assertThrows(TensorArgumentException.class,
        () -> IndexOps.indexSelect(x, 0, Tensor.of(new long[] {1}, 1)));
    assertTrue(e.getMessage().contains("index 1 out of range [0, 1)"), e.getMessage());
  }

  @Test
  void zeroDimOutOfRangeDimsNameOpDimRangeAndShape() {
    Tensor x = Tensor.scalar(2.0);
    TensorArgumentException e = assertThrows(TensorArgumentException.class, () -> ReduceOps.argmax(x, 5, false));
    assertEquals("argmax: axis 5 out of range for rank 0 (valid: -1..0): x=[]", e.getMessage());
    e = assertThrows(TensorArgumentException.class, () -> IndexOps.gather(x, 7, Tensor.scalar(0, DType.I64)));
    assertEquals("gather", e.op());
    assertTrue(e.getMessage().contains("axis 7 out of range for rank 0 (valid: -1..0)"), e.getMessage());
    e = assertThrows(TensorArgumentException.class, () -> ReduceOps.softmax(x, 3, false));
    assertEquals("softmax", e.op());
    e = assertThrows(TensorArgumentException.class, () -> ReduceOps.cumsum(x, 3));
    assertEquals("cumsum", e.op());
  }

  @Test
  void zeroDimAcceptedOpsKeepValuesAndGradients() {
    Tensor x = Tensor.scalar(3.0).requiresGrad(true);
    assertEquals(3.0, ReduceOps.cumsum(x, -1).item());
    assertEquals(1.0, ReduceOps.softmax(x, 0, false).item());
    assertEquals(0L, ReduceOps.argmax(x, 0, false).item(), 0);
    Tensor g = IndexOps.gather(x, 0, Tensor.of(new long[] {0, 0}, 2));
    assertArrayEquals(new int[] {2}, g.shape()); // PyTorch treats the 0-d input as [1] for a 1-d index
    assertArrayEquals(new double[] {3, 3}, g.toDoubleArray());
    g.sum().backward();
    assertEquals(2.0, x.grad().item());
    Tensor s = IndexOps.scatter(Tensor.scalar(1.0), 0, Tensor.scalar(0, DType.I64), Tensor.scalar(9.0), false);
    assertEquals(9.0, s.item());
  }
}
