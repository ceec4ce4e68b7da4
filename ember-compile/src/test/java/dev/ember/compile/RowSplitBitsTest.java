package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;

import dev.ember.backend.cpu.Parallel;
import dev.ember.nn.functional.F;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * The precondition of running the mlp_mnist b=32 step's small-op chain (the 128 -&gt; 10 linear with its bias,
 * log_softmax, the exp of the loss's gradient, dY W2) as two 16-row halves, one per thread, with eager's bits: each
 * of these kernels gives every element the same bits on a half as on the whole batch. The 128 -&gt; 10 product
 * sums each element over K in the same order whatever its 12-row tile; the exp kernel's vector/tail cut falls at
 * a multiple of the vector length from the tensor's start, and a 16-row half of [32, 10] (160 elements) starts at a
 * multiple of 16 lanes (a 12-row cut, 120 elements, does not: there exp's bits differ on a 16-lane host). The
 * reductions over the batch (the loss, dW2, the bias sums) are not row-wise and stay whole.
 */
class RowSplitBitsTest {
  private static void halvesMatch(Tensor in, UnaryOperator<Tensor> op) {
    int n = in.shape()[0];
    Tensor whole = op.apply(in);
    Tensor halves = Tensor.cat(List.of(op.apply(in.narrow(0, 0, n / 2).contiguous()),
        op.apply(in.narrow(0, n / 2, n - n / 2).contiguous())), 0);
    assertBitwise(whole, halves);
  }

  @Test
  void mlpMnistChainOpsGiveTheSameBitsOnSixteenRowHalves() {
    int threads = Parallel.threads();
    try {
      for (int t : new int[] {1, 2}) {
        Parallel.setThreads(t);
        for (long seed = 0; seed < 4; seed++) {
          Generator g = new Generator(seed);
          Tensor h = Tensor.randn(g, 32, 128).relu();
          Tensor w2 = Tensor.randn(g, 10, 128).mul(0.1);
          Tensor b2 = Tensor.randn(g, 10);
          Tensor logits = F.linear(h, w2, b2);
          Tensor dy = Tensor.randn(g, 32, 10);
          halvesMatch(h, x -> F.linear(x, w2, b2));
          halvesMatch(logits, x -> F.logSoftmax(x, 1));
          halvesMatch(F.logSoftmax(logits, 1), Tensor::exp);
          halvesMatch(dy, x -> x.matmul(w2));
        }
      }
    } finally {
      Parallel.setThreads(threads);
    }
  }
}
