package dev.ember.ops;

import static dev.ember.ops.IntegerExactnessTest.assertBools;

import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** any and all, against PyTorch 1.13 (each expected value with its line). */
class LogicalReductionsTest {
  @Test
  void anyOverNothingIsFalseAndAllIsTrue() {
    // torch.zeros(0).any(): tensor(False); torch.zeros(0, 3).any(0): tensor([False, False, False])
    assertBools(new boolean[] {false}, ReduceOps.any(Tensor.zeros(0), null, false).reshape(1));
    assertBools(new boolean[] {false, false, false}, ReduceOps.any(Tensor.zeros(0, 3), new int[] {0}, false));
    // torch.zeros(3, 0).any(1), torch.zeros(0, 3, dtype=torch.bool).any(0): tensor([False, False, False])
    assertBools(new boolean[] {false, false, false}, ReduceOps.any(Tensor.zeros(3, 0), new int[] {1}, false));
    Tensor noBools = Tensor.zeros(0, 3).ne(0);
    assertBools(new boolean[] {false, false, false}, ReduceOps.any(noBools, new int[] {0}, false));
    // torch.zeros(0, dtype=torch.int64).any(): tensor(False)
    assertBools(new boolean[] {false}, ReduceOps.any(Tensor.of(new long[0], 0), null, false).reshape(1));
    // torch.zeros(0).all(): tensor(True); torch.zeros(0, 3).all(0): tensor([True, True, True])
    assertBools(new boolean[] {true}, ReduceOps.all(Tensor.zeros(0), null, false).reshape(1));
    assertBools(new boolean[] {true, true, true}, ReduceOps.all(Tensor.zeros(0, 3), new int[] {0}, false));
  }
}
