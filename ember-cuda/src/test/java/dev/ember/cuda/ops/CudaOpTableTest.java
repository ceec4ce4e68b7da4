package dev.ember.cuda.ops;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.ops.CudaTolerances.Precision;
import dev.ember.cuda.runtime.CudaSettings;
import dev.ember.cuda.testing.Gpu;
import dev.ember.nn.functional.NnOpTable;
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
 * Every entry of core's and the nn op table on {@code cuda:0}: values and input gradients against the same op on the CPU, in
 * float32, in bfloat16, and for the products in TF32, within {@link CudaTolerances}' per-op tolerances. Skipped,
 * saying why, without a GPU.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CudaOpTableTest {
  /** The table's entry that moves through the fake device: not a CUDA op. */
  private static final String FAKE_DEVICE_ENTRY = "to_device";

  /** Core's table and the nn table (convolutions, pooling, norms, attention, recurrent layers, dropout, losses). */
  static Stream<OpInfo> table() {
    return Stream.concat(OpTable.all(), NnOpTable.all());
  }

  Stream<OpInfo> ops() {
    return table().filter(o -> !o.name().equals(FAKE_DEVICE_ENTRY));
  }

  Stream<OpInfo> products() {
    return table().filter(o -> CudaTolerances.PRODUCTS.contains(o.def()));
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

  /** Every op the tolerance lists name is a definition in the tables (a renamed one would drop out silently). */
  @Test
  void theToleranceListsNameTableEntries() {
    var defs = table().map(OpInfo::def).toList();
    for (String p : CudaTolerances.PRODUCTS) assertTrue(defs.contains(p), p + " is not an op table definition");
    for (String p : CudaTolerances.RECURRENT) assertTrue(defs.contains(p), p + " is not an op table definition");
    for (String p : CudaTolerances.widerInBfloat16()) assertTrue(defs.contains(p), p + " is not an op table definition");
  }

  private static void check(OpInfo op, DType dtype, Precision p) {
    Gpu.assumeDevice();
    OpChecks.sameValuesAndGradientsOn(Device.cuda(0), op, dtype, CudaTolerances.values(op.def(), p),
        CudaTolerances.grads(op.def(), p));
  }
}
