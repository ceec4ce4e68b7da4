package dev.ember.ops;

import static dev.ember.ops.OpInfo.op;

import dev.ember.backend.UnaryOp;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Arr;
import dev.ember.testing.FakeDevice;
import dev.ember.testing.Ref;
import java.util.List;

/** Op-table entries for linear algebra, movement (views, cat/stack/split) and indexing. */
final class StructureEntries {
  private StructureEntries() {}

  private static Tensor longs(int[] shape, long... v) {
    return Tensor.of(v, shape);
  }

  /** x W^T + b for inputs bias, x, weight (linear's entry order). */
  private static Arr linearRef(List<Arr> l) {
    return Ref.zip(Ref.matmul(l.get(1), Ref.permute(l.get(2), 1, 0)), l.get(0), Double::sum);
  }

  private static Arr arr(Tensor t) {
    return Arr.of(t);
  }

  /** A fixed index or mask of an entry, on the device of the op's input (the fake-device check moves inputs). */
  private static Tensor on(Tensor like, Tensor constant) {
    return constant.to(like.device());
  }

  private static final Tensor GATHER_IDX = longs(new int[] {3, 2}, 0, 3, 2, 2, 1, 0);
  private static final Tensor GATHER_BAD = longs(new int[] {3, 2}, 0, 4, 2, 2, 1, 0);
  private static final Tensor SCATTER_IDX = longs(new int[] {2, 4}, 0, 1, 2, 0, 2, 0, 1, 1);
  private static final Tensor SCATTER_ADD_IDX = longs(new int[] {2, 4}, 0, 1, 1, 0, 0, 1, 1, 0);
  private static final Tensor SELECT_IDX = longs(new int[] {3}, 0, 2, 0);
  private static final Tensor MASK = Tensor.of(new boolean[] {true, false, false, true});
  private static final Tensor TAKE_IDX = longs(new int[] {1, 2}, 3, 1);
  private static final Tensor EMB_IDX = longs(new int[] {2, 3}, 4, 0, 1, 1, 3, 4);

  static void add(List<OpInfo> t) {
    // ---------------------------------------------------------------- linear algebra
    t.add(op("matmul").binary(Tensor::matmul).ref(l -> Ref.matmul(l.get(0), l.get(1)))
        .shapes("[3, 4] x [4, 5]", "[1, 7] x [7, 1]", "[5, 0] x [0, 3]", "[0, 3] x [3, 2]", "[17, 33] x [33, 19]")
        .error("[2, 3] x [4, 5]", "matmul: inner dimensions differ (3 vs 4): a=[2, 3], b=[4, 5]")
        .error("[] x [3]", "matmul: both arguments need at least 1 dimension: a=[], b=[3]"));
    t.add(op("matmul_vector").def("matmul").binary(Tensor::matmul).ref(l -> Ref.matmul(l.get(0), l.get(1)))
        .shapes("[4] x [4, 3]", "[3, 4] x [4]", "[4] x [4]", "[2, 3, 4] x [4]"));
    t.add(op("matmul_batched").def("matmul").binary(Tensor::matmul).ref(l -> Ref.matmul(l.get(0), l.get(1)))
        .shapes("[2, 3, 4] x [4, 5]", "[2, 1, 3, 4] x [3, 4, 2]", "[3, 4] x [2, 4, 5]")
        .error("[2, 3, 4] x [3, 4, 5]", "matmul: cannot broadcast (2 vs 3 at axis -1): a=[2], b=[3]"));
    t.add(op("bmm").binary(LinalgOps::bmm).ref(l -> Ref.matmul(l.get(0), l.get(1)))
        .shapes("[2, 3, 4] x [2, 4, 5]", "[1, 1, 1] x [1, 1, 3]")
        .error("[2, 3, 4] x [3, 4, 5]", "bmm: batch sizes differ (2 vs 3): a=[2, 3, 4], b=[3, 4, 5]"));
    t.add(op("outer").binary(LinalgOps::outer).ref(l -> Ref.matmul(Ref.reshape(l.get(0), l.get(0).numel(), 1),
        Ref.reshape(l.get(1), 1, l.get(1).numel()))).shapes("[3] x [4]", "[1] x [5]"));
    t.add(op("addmm").fn(l -> LinalgOps.addmm(l.get(0), l.get(1), l.get(2)))
        .ref(l -> Ref.zip(Ref.matmul(l.get(1), l.get(2)), l.get(0), Double::sum))
        .shapes("[5] x [3, 4] x [4, 5]", "[3, 5] x [3, 4] x [4, 5]", "[] x [2, 2] x [2, 2]", "[1, 4] x [6, 0] x [0, 4]")
        .error("[3] x [3, 4] x [4, 5]", "addmm: cannot broadcast (3 vs 5 at axis -1): a=[3], b=[3, 5]"));
    t.add(op("linear").fn(l -> LinalgOps.linear(l.get(1), l.get(2), l.get(0)))
        .ref(l -> Ref.zip(Ref.matmul(l.get(1), Ref.permute(l.get(2), 1, 0)), l.get(0), Double::sum))
        .shapes("[5] x [3, 4] x [5, 4]", "[1] x [1, 7] x [1, 7]", "[4] x [0, 3] x [4, 3]", "[2] x [3, 0] x [2, 0]",
            "[19] x [17, 33] x [19, 33]")
        .error("[5] x [3, 4] x [5, 3]", "linear: expects x [m, in] and weight [out, in]: x=[3, 4], weight=[5, 3]")
        .error("[4] x [3, 4] x [5, 4]", "linear: bias must be [out_features] = [5]: bias=[4], weight=[5, 4]"));
    t.add(op("linear_nobias").def("linear").binary((x, w) -> LinalgOps.linear(x, w, null))
        .ref(l -> Ref.matmul(l.get(0), Ref.permute(l.get(1), 1, 0)))
        .shapes("[3, 4] x [5, 4]", "[2, 0] x [3, 0]"));
    // linear_epilogue: act(x W^T + b) + residual; inputs bias, x, weight, residual as linear's entry orders them
    t.add(op("linear_epilogue").fn(l -> LinalgOps.linearEpilogue(l.get(1), l.get(2), l.get(0), UnaryOp.TANH, 0, l.get(3)))
        .ref(l -> Ref.zip(Ref.map(linearRef(l), Math::tanh), l.get(3), Double::sum))
        .shapes("[5] x [3, 4] x [5, 4] x [3, 5]", "[19] x [17, 33] x [19, 33] x [17, 19]", "[4] x [2, 3, 6] x [4, 6] x [2, 3, 4]")
        .error(l -> LinalgOps.linearEpilogue(l.get(1), l.get(2), l.get(0), UnaryOp.EXP, 0, l.get(3)),
            "[5] x [3, 4] x [5, 4] x [3, 5]", "linear_epilogue: activation must be one of [TANH, SIGMOID, RELU, LEAKY_RELU,"
            + " GELU, GELU_TANH, SILU], got EXP: x=[3, 4]")
        .error("[5] x [3, 4] x [5, 4] x [3, 4]", "linear_epilogue: residual must be a float32 tensor of the output's"
            + " shape [3, 5] on cpu: x=[3, 4], weight=[5, 4], residual=[3, 4]")
        .error("[5] x [3, 4] x [5, 3] x [3, 5]", "linear_epilogue: expects x [..., in] and weight [out, in]: x=[3, 4],"
            + " weight=[5, 3]"));
    t.add(op("linear_epilogue_silu").def("linear_epilogue")
        .fn(l -> LinalgOps.linearEpilogue(l.get(1), l.get(2), l.get(0), UnaryOp.SILU, 0, null))
        .ref(l -> Ref.map(linearRef(l), v -> v / (1 + Math.exp(-v)))).shapes("[5] x [3, 4] x [5, 4]"));
    t.add(op("linear_epilogue_sigmoid").def("linear_epilogue")
        .fn(l -> LinalgOps.linearEpilogue(l.get(1), l.get(2), l.get(0), UnaryOp.SIGMOID, 0, l.get(3)))
        .ref(l -> Ref.zip(Ref.map(linearRef(l), v -> 1 / (1 + Math.exp(-v))), l.get(3), Double::sum))
        .shapes("[5] x [3, 4] x [5, 4] x [3, 5]"));
    t.add(op("linear_epilogue_gelu").def("linear_epilogue")
        .fn(l -> LinalgOps.linearEpilogue(l.get(1), l.get(2), l.get(0), UnaryOp.GELU, 0, l.get(3)))
        .ref(l -> Ref.zip(Ref.map(linearRef(l), v -> 0.5 * v * (1 + Ref.erf(v / Math.sqrt(2)))), l.get(3), Double::sum))
        .shapes("[5] x [3, 4] x [5, 4] x [3, 5]").domain(-0.7, 0.7)); // |x W^T + b| within gelu's own [-3, 3]
    t.add(op("linear_epilogue_gelu_tanh").def("linear_epilogue")
        .fn(l -> LinalgOps.linearEpilogue(l.get(1), l.get(2), l.get(0), UnaryOp.GELU_TANH, 0, null))
        .ref(l -> Ref.map(linearRef(l),
            v -> 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v * v * v)))))
        .shapes("[5] x [3, 4] x [5, 4]"));
    t.add(op("linear_epilogue_residual").def("linear_epilogue")
        .fn(l -> LinalgOps.linearEpilogue(l.get(0), l.get(1), null, null, 0, l.get(2)))
        .ref(l -> Ref.zip(Ref.matmul(l.get(0), Ref.permute(l.get(1), 1, 0)), l.get(2), Double::sum))
        .shapes("[3, 4] x [5, 4] x [3, 5]"));
    t.add(op("dot").binary(LinalgOps::dot).ref(l -> Ref.matmul(l.get(0), l.get(1))).shapes("[5] x [5]", "[0] x [0]"));

    // ---------------------------------------------------------------- movement
    t.add(op("reshape").unary(x -> x.reshape(2, -1)).ref(l -> Ref.reshape(l.get(0), 2, l.get(0).numel() / 2))
        .shapes("[3, 4]", "[4, 3]", "[2, 0]", "[2, 3, 2]")
        .error("[3, 5]", "reshape: cannot infer -1 in shape [2, -1] for 15 elements: x=[3, 5]"));
    t.add(op("view").unary(x -> x.view(-1)).ref(l -> Ref.reshape(l.get(0), l.get(0).numel()))
        .shapes("[3, 4]", "[]", "[2, 3, 2]").contiguousOnly()
        .error(l -> l.get(0).t().view(-1), "[2, 3]", "view: size [6] is not compatible with the strides [1, 3]"
            + " (at least one dimension spans two contiguous subspaces): x=[3, 2]; hint: use reshape(), or contiguous() first"));
    t.add(op("permute").unary(x -> x.permute(2, 0, 1)).ref(l -> Ref.permute(l.get(0), 2, 0, 1)).shapes("[2, 3, 4]", "[1, 0, 3]")
        .error(l -> l.get(0).permute(0, 0, 1), "[2, 3, 4]", "permute: repeated dim 0 in [0, 0, 1]: x=[2, 3, 4]"));
    t.add(op("transpose").unary(x -> x.transpose(0, 1)).ref(l -> l.get(0).rank() == 2 ? Ref.permute(l.get(0), 1, 0)
        : Ref.permute(l.get(0), 1, 0, 2)).shapes("[3, 4]", "[2, 3, 4]"));
    t.add(op("t").unary(Tensor::t).ref(l -> Ref.permute(l.get(0), 1, 0)).shapes("[3, 4]", "[1, 5]")
        .error("[3]", "t: expects a 2-d tensor, got rank 1: x=[3]"));
    t.add(op("expand").unary(x -> x.expand(3, 4, 5)).ref(l -> Ref.expand(l.get(0), 3, 4, 5)).shapes("[4, 1]", "[5]", "[]")
        .error("[2, 5]", "expand: size 2 at dim 0 cannot expand to 4: x=[2, 5], target=[3, 4, 5]"));
    t.add(op("broadcast_to").unary(x -> x.broadcastTo(2, 3)).ref(l -> Ref.expand(l.get(0), 2, 3)).shapes("[3]", "[2, 1]"));
    t.add(op("narrow").unary(x -> x.narrow(1, 1, 2)).ref(l -> Ref.slice(l.get(0), 1, 1, 3, 1)).shapes("[3, 4]", "[2, 5, 2]"));
    t.add(op("slice_step").def("slice")
        .unary(x -> x.slice(0, 1, -1, 2)).ref(l -> Ref.slice(l.get(0), 0, 1, -1, 2)).shapes("[7]", "[6, 3]")
        .error(l -> l.get(0).slice(0, 0, 2, 0), "[4]", "slice: step must be positive, got 0: x=[4]"));
    t.add(op("select").unary(x -> x.select(1, -1)).ref(l -> Ref.select(l.get(0), 1, l.get(0).shape()[1] - 1))
        .shapes("[3, 4]", "[2, 3, 4]")
        .error(l -> l.get(0).select(1, 5), "[3, 4]", "select: index 5 out of range for dimension 1 of size 4: x=[3, 4]"));
    t.add(op("squeeze").unary(Tensor::squeeze).ref(l -> Ref.reshape(l.get(0),
        java.util.Arrays.stream(l.get(0).shape()).filter(d -> d != 1).toArray())).shapes("[3, 1, 4]", "[1]", "[1, 1]", "[2, 3]"));
    t.add(op("unsqueeze").unary(x -> x.unsqueeze(-1)).ref(l -> Ref.reshape(l.get(0), Ref.append(l.get(0).shape(), 1)))
        .shapes("[3, 4]", "[]", "[5]"));
    t.add(op("flatten").unary(x -> x.flatten(1, 2)).ref(l -> {
      int[] s = l.get(0).shape();
      return Ref.reshape(l.get(0), s[0], s[1] * s[2]);
    }).shapes("[2, 3, 4]", "[1, 0, 2]"));
    t.add(op("contiguous").unary(Tensor::contiguous).ref(l -> l.get(0)).shapes("[3, 4]", "[2, 3, 4]", "[5]"));
    t.add(op("cat").fn(l -> Tensor.cat(l, 1)).ref(l -> Ref.cat(l, 1))
        .shapes("[2, 3] x [2, 1] x [2, 0]", "[2, 3, 1] x [2, 2, 1]")
        .error("[2, 3] x [3, 3]", "cat: sizes must match except in dim 1 (2 vs 3 at dim 0): t0=[2, 3], t1=[3, 3]"));
    t.add(op("stack").fn(l -> Tensor.stack(l, 0)).ref(l -> Ref.cat(l.stream().map(a -> Ref.reshape(a,
        Ref.insert(a.shape(), 0, 1))).toList(), 0)).shapes("[2, 3] x [2, 3]", "[4] x [4] x [4]")
        .error("[2] x [3]", "stack: all tensors must have the same shape: t0=[2], t1=[3]"));
    t.add(op("split").unary(x -> x.split(2, 1).get(1)).ref(l -> Ref.slice(l.get(0), 1, 2, 4, 1)).shapes("[3, 5]"));
    t.add(op("chunk").unary(x -> x.chunk(3, 0).get(2)).ref(l -> Ref.slice(l.get(0), 0, 6, 9, 1)).shapes("[7, 2]", "[9]"));
    // through the strict fake device and back: the copies both ways, an op computed there, the gradient copied back
    t.add(op("to_device").unary(x -> x.to(FakeDevice.DEVICE).mul(2).cpu()).refUnary(x -> 2 * x));

    // ---------------------------------------------------------------- indexing
    t.add(op("gather").unary(x -> x.gather(1, on(x, GATHER_IDX))).ref(l -> Ref.gather(l.get(0), 1, arr(GATHER_IDX))).shapes("[3, 4]")
        .error(l -> l.get(0).gather(1, GATHER_BAD), "[3, 4]",
            "gather: index 4 out of range [0, 4) for dim 1 at flat position 1: x=[3, 4], index=[3, 2]"));
    t.add(op("scatter").binary((x, src) -> IndexOps.scatter(x, 0, on(x, SCATTER_IDX), src, false))
        .ref(l -> Ref.scatter(l.get(0), 0, arr(SCATTER_IDX), l.get(1), false)).shapes("[3, 4] x [2, 4]"));
    t.add(op("scatter_add").binary((x, src) -> IndexOps.scatterAdd(x, 0, on(x, SCATTER_ADD_IDX), src))
        .ref(l -> Ref.scatter(l.get(0), 0, arr(SCATTER_ADD_IDX), l.get(1), true)).shapes("[3, 4] x [2, 4]", "[2, 4] x [3, 5]"));
    t.add(op("index_select").unary(x -> x.indexSelect(0, on(x, SELECT_IDX)))
        .ref(l -> Ref.cat(List.of(Ref.slice(l.get(0), 0, 0, 1, 1), Ref.slice(l.get(0), 0, 2, 3, 1), Ref.slice(l.get(0), 0, 0, 1, 1)), 0))
        .shapes("[3, 4]", "[3]")
        .error(l -> l.get(0).indexSelect(0, SELECT_IDX), "[2, 4]",
            "index_select: index 2 out of range [0, 2) for dim 0 at flat position 1: x=[2, 4], index=[3]"));
    t.add(op("masked_fill").unary(x -> x.maskedFill(on(x, MASK), -7)).ref(l -> Ref.where(arr(MASK), new Arr(new double[] {-7}, new int[0]),
        l.get(0))).shapes("[3, 4]", "[4]")
        .error("[3, 5]", "masked_fill: cannot broadcast (5 vs 4 at axis -1): a=[3, 5], b=[4]"));
    t.add(op("masked_select").unary(x -> IndexOps.maskedSelect(x, on(x, MASK))).ref(l -> {
      Arr a = Ref.expand(l.get(0), Ref.broadcastShape(l.get(0).shape(), new int[] {4}));
      double[] out = new double[a.numel() / 2];
      for (int i = 0, j = 0; i < a.numel(); i++) if (i % 4 == 0 || i % 4 == 3) out[j++] = a.data()[i];
      return new Arr(out, new int[] {out.length});
    }).shapes("[3, 4]", "[4]"));
    t.add(op("one_hot").unary(x -> IndexOps.oneHot(x.add(2).floor().clamp(0, 3).to(DType.I64), 4))
        .ref(l -> {
          Arr a = l.get(0);
          Arr out = Arr.zeros(Ref.append(a.shape(), 4));
          for (int i = 0; i < a.numel(); i++) out.data()[i * 4 + (int) Math.min(3, Math.max(0, Math.floor(a.data()[i] + 2)))] = 1;
          return out;
        }).shapes("[5]", "[2, 3]").noGrad()
        .error(l -> IndexOps.oneHot(Tensor.of(new long[] {1, 5}), 4), "[2]",
            "one_hot: index 5 out of range [0, 4) for numClasses 4 at flat position 1: x=[2], index=[2]"));
    t.add(op("take_along_dim").unary(x -> IndexOps.takeAlongDim(x, on(x, TAKE_IDX), 1))
        .ref(l -> Ref.gather(l.get(0), 1, Ref.expand(arr(TAKE_IDX), l.get(0).shape()[0], 2))).shapes("[3, 4]"));
    t.add(op("embedding").unary(w -> IndexOps.embedding(w, on(w, EMB_IDX))).ref(l -> {
      Arr w = l.get(0);
      Arr out = Arr.zeros(2, 3, w.shape()[1]);
      for (int i = 0; i < 6; i++) {
        int row = (int) arr(EMB_IDX).data()[i];
        for (int d = 0; d < w.shape()[1]; d++) out.data()[i * w.shape()[1] + d] = w.get(row, d);
      }
      return out;
    }).shapes("[5, 3]", "[5, 1]"));
  }
}
