package dev.ember.ops;

import static dev.ember.ops.OpInfo.op;

import dev.ember.tensor.Tensor;
import dev.ember.testing.Ref;
import java.util.List;

/** Op-table entries for reductions, softmax and cumsum. */
final class ReductionEntries {
  private ReductionEntries() {}

  private static int[] dims(int... d) {
    return d;
  }

  static void add(List<OpInfo> t) {
    t.add(op("sum").unary(Tensor::sum).ref(l -> Ref.sum(l.get(0), null, false)));
    t.add(op("sum_dim_keep").def("sum").unary(x -> x.sum(1, true)).ref(l -> Ref.sum(l.get(0), dims(1), true))
        .shapes("[3, 4]", "[2, 3, 4]", "[2, 0]", "[4, 1]")
        .error("[3]", "sum: axis 1 out of range for rank 1 (valid: -1..0): x=[3]"));
    t.add(op("sum_dims").def("sum").unary(x -> x.sum(dims(0, 2), false)).ref(l -> Ref.sum(l.get(0), dims(0, 2), false))
        .shapes("[2, 3, 4]", "[1, 5, 1]", "[3, 2, 17]")
        .error(l -> l.get(0).sum(dims(0, 0), false), "[2, 3]", "sum: axis 0 appears more than once in [0, 0]: x=[2, 3]"));
    t.add(op("sum_last").def("sum")
        .unary(x -> x.sum(-1, false)).ref(l -> Ref.sum(l.get(0), dims(l.get(0).rank() - 1), false))
        .shapes("[7]", "[3, 33]", "[2, 2, 1000]"));
    t.add(op("mean").unary(Tensor::mean).ref(l -> Ref.mean(l.get(0), null, false)).shapes("[]", "[7]", "[3, 5]"));
    t.add(op("mean_dim").def("mean").unary(x -> x.mean(0, false)).ref(l -> Ref.mean(l.get(0), dims(0), false))
        .shapes("[4, 3]", "[5]", "[2, 3, 4]"));
    t.add(op("var_unbiased").def("var").unary(x -> ReduceOps.var(x, dims(1), true, false))
        .ref(l -> Ref.var(l.get(0), dims(1), true, false)).shapes("[3, 4]", "[2, 5, 3]"));
    t.add(op("var_biased").def("var").unary(x -> ReduceOps.var(x, null, false, true))
        .ref(l -> Ref.var(l.get(0), null, false, true)).shapes("[3, 4]", "[6]"));
    t.add(op("std").unary(x -> ReduceOps.std(x, dims(0), true, true))
        .ref(l -> Ref.map(Ref.var(l.get(0), dims(0), true, true), Math::sqrt)).shapes("[4, 3]", "[5]"));
    t.add(op("std_biased").def("std").unary(x -> ReduceOps.std(x, dims(0, 2), false, false))
        .ref(l -> Ref.map(Ref.var(l.get(0), dims(0, 2), false, false), Math::sqrt)).shapes("[3, 4, 2]", "[2, 3, 5]"));
    t.add(op("amax").unary(x -> ReduceOps.amax(x, dims(1), false)).ref(l -> Ref.max(l.get(0), dims(1), false))
        .shapes("[3, 4]", "[2, 5, 3]", "[3, 33]")
        .error("[2, 0]", "amax: cannot reduce over an empty dimension 1 (no identity): x=[2, 0]"));
    t.add(op("amax_all").def("amax")
        .unary(Tensor::max).ref(l -> Ref.max(l.get(0), null, false)).shapes("[]", "[7]", "[3, 5]", "[100]"));
    t.add(op("amin").unary(x -> ReduceOps.amin(x, dims(0), true)).ref(l -> Ref.min(l.get(0), dims(0), true))
        .shapes("[3, 4]", "[5]", "[4, 1000]"));
    t.add(op("max_dim").def("max").unary(x -> ReduceOps.max(x, 1, false)[0]).ref(l -> Ref.max(l.get(0), dims(1), false))
        .shapes("[3, 4]", "[2, 3, 4]"));
    t.add(op("max_dim_indices").def("max")
        .unary(x -> ReduceOps.max(x, 1, false)[1]).ref(l -> Ref.arg(l.get(0), 1, true))
        .shapes("[3, 4]", "[2, 3, 4]").noGrad());
    t.add(op("min_dim").def("min").unary(x -> ReduceOps.min(x, 0, true)[0]).ref(l -> Ref.min(l.get(0), dims(0), true))
        .shapes("[3, 4]", "[6]"));
    t.add(op("argmax").unary(x -> x.argmax(-1, false)).ref(l -> Ref.arg(l.get(0), l.get(0).rank() - 1, true))
        .shapes("[7]", "[3, 4]", "[2, 3, 4]").noGrad());
    t.add(op("argmin").unary(x -> x.argmin(0, false)).ref(l -> Ref.arg(l.get(0), 0, false))
        .shapes("[7]", "[3, 4]").noGrad()
        .error("[0, 3]", "argmin: cannot reduce over an empty dimension 0: x=[0, 3]"));
    t.add(op("prod").unary(x -> ReduceOps.prod(x, dims(1), false)).ref(l -> Ref.reduce(l.get(0), dims(1), false, 1, (a, b) -> a * b))
        .shapes("[3, 4]", "[2, 3, 2]", "[2, 0]").domain(0.5, 1.5));
    t.add(op("logsumexp").unary(x -> ReduceOps.logsumexp(x, dims(1), false))
        .ref(l -> Ref.map(Ref.sum(Ref.map(l.get(0), Math::exp), dims(1), false), Math::log)).shapes("[3, 4]", "[2, 5, 3]")
        .domain(-5, 5));
    t.add(op("norm_1").def("norm").unary(x -> ReduceOps.norm(x, 1, dims(1), false))
        .ref(l -> Ref.sum(Ref.map(l.get(0), Math::abs), dims(1), false)).shapes("[3, 4]"));
    t.add(op("norm_2").def("norm").unary(x -> ReduceOps.norm(x, 2, null, false))
        .ref(l -> Ref.map(Ref.sum(Ref.map(l.get(0), v -> v * v), null, false), Math::sqrt)).shapes("[3, 4]", "[7]")
        .error(l -> ReduceOps.norm(l.get(0), 3, null, false), "[2]", "norm: unsupported order p=3.0 (supported: 1, 2, inf): x=[2]"));
    t.add(op("norm_2_keep").def("norm").unary(x -> ReduceOps.norm(x, 2, dims(1), true))
        .ref(l -> Ref.map(Ref.sum(Ref.map(l.get(0), v -> v * v), dims(1), true), Math::sqrt))
        .shapes("[3, 4]", "[2, 5, 3]", "[2, 0]"));
    t.add(op("norm_inf").def("norm").unary(x -> ReduceOps.norm(x, Double.POSITIVE_INFINITY, dims(0), true))
        .ref(l -> Ref.max(Ref.map(l.get(0), Math::abs), dims(0), true)).shapes("[3, 4]"));
    t.add(op("all").unary(x -> ReduceOps.all(x.gt(-1.5), dims(1), false))
        .ref(l -> Ref.map(Ref.min(Ref.map(l.get(0), v -> v > -1.5 ? 1 : 0), dims(1), false), v -> v != 0 ? 1 : 0)).shapes("[6, 3]", "[4, 0]").noGrad());
    t.add(op("any").unary(x -> ReduceOps.any(x.gt(1.5), null, false))
        .ref(l -> Ref.max(Ref.map(l.get(0), v -> v > 1.5 ? 1 : 0), null, false)).shapes("[6, 3]", "[40]").noGrad());
    t.add(op("softmax").unary(x -> x.softmax(-1)).ref(l -> Ref.softmax(l.get(0), l.get(0).rank() - 1, false))
        .shapes("[7]", "[3, 5]", "[2, 3, 4]", "[4, 1]", "[2, 100]").domain(-5, 5));
    t.add(op("softmax_dim0").def("softmax")
        .unary(x -> x.softmax(0)).ref(l -> Ref.softmax(l.get(0), 0, false)).shapes("[3, 5]", "[4, 2, 3]"));
    t.add(op("log_softmax").unary(x -> x.logSoftmax(1)).ref(l -> Ref.softmax(l.get(0), 1, true))
        .shapes("[3, 5]", "[2, 3, 4]", "[2, 100]").domain(-5, 5)
        .error("[3]", "log_softmax: axis 1 out of range for rank 1 (valid: -1..0): x=[3]"));
    t.add(op("cumsum").unary(x -> ReduceOps.cumsum(x, 1)).ref(l -> Ref.cumsum(l.get(0), 1)).shapes("[3, 5]", "[2, 4, 3]", "[2, 0]"));
    t.add(op("cumsum_dim0").def("cumsum")
        .unary(x -> ReduceOps.cumsum(x, 0)).ref(l -> Ref.cumsum(l.get(0), 0)).shapes("[9]", "[4, 3]"));
    t.add(op("cumsum_last").def("cumsum")
        .unary(x -> ReduceOps.cumsum(x, -1)).ref(l -> Ref.cumsum(l.get(0), 2)).shapes("[2, 3, 4]", "[3, 2, 1]"));
  }
}
