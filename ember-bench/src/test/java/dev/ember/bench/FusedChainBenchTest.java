package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.ops.FusedOps;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** The benchmark's fused program is the eager chain it is compared with, to the bit. */
class FusedChainBenchTest {
  @Test
  void theFusedProgramIsTheEagerChain() {
    assertEquals("add(mul(relu(add(mul(x0, x1), x2)), 0.5), x0)", FusedChainBench.chain().toString());
    Generator gen = new Generator(3);
    Tensor x = Tensor.randn(gen, 7, 1031);
    Tensor y = Tensor.randn(gen, 7, 1031);
    Tensor z = Tensor.randn(gen, 7, 1031);
    assertArrayEquals(FusedChainBench.eager(x, y, z).toFloatArray(),
        FusedOps.elementwise(FusedChainBench.chain(), x, y, z).toFloatArray());
  }
}
