package dev.ember.cuda.ops;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.ops.CudaTolerances.Precision;
import dev.ember.cuda.runtime.CudaSettings;
import dev.ember.cuda.testing.Gpu;
import dev.ember.ops.OpChecks;
import dev.ember.ops.OpInfo;
import dev.ember.ops.OpTable;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every entry of core's op table on {@code cuda:0}: values and input gradients against the same op on the CPU, in
 * float32, in bfloat16, and for the products in TF32, within {@link CudaTolerances}' per-op tolerances. Skipped,
 * saying why, without a GPU.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CudaOpTableTest {
  /** The table's entry that moves through the fake device: not a CUDA op. */
  private static final String FAKE_DEVICE_ENTRY = "to_device";

  Stream<OpInfo> ops() {
    return OpTable.all().filter(o -> !o.name().equals(FAKE_DEVICE_ENTRY));
  }

  Stream<OpInfo> products() {
    return OpTable.all().filter(o -> CudaTolerances.PRODUCTS.contains(o.name()));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void float32MatchesTheCpu(OpInfo op) {
    check(op, DType.F32, Precision.F32);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("ops")
  void bfloat16MatchesTheCpu(OpInfo op) {
    check(op, DType.BF16, Precision.BF16);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("products")
  void tf32ProductsMatchTheCpusFloat32(OpInfo op) {
    boolean was = CudaSettings.allowTf32();
    CudaSettings.allowTf32(true);
    try {
      check(op, DType.F32, Precision.TF32);
    } finally {
      CudaSettings.allowTf32(was);
    }
  }

  /** Every product the TF32 list names is an entry of the table (a renamed entry would drop out silently). */
  @Test
  void theProductListNamesTableEntries() {
    var names = OpTable.all().map(OpInfo::name).toList();
    for (String p : CudaTolerances.PRODUCTS) assertTrue(names.contains(p), p + " is not an op table entry");
  }

  private static void check(OpInfo op, DType dtype, Precision p) {
    Gpu.assumeDevice();
    OpChecks.sameValuesAndGradientsOn(Device.cuda(0), op, dtype, CudaTolerances.values(op.name(), p),
        CudaTolerances.grads(op.name(), p));
  }
}
