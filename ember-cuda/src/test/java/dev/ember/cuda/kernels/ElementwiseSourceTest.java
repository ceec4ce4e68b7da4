package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.UnaryOp;
import dev.ember.cuda.kernels.Elementwise.Family;
import dev.ember.cuda.testing.DeviceCompiler;
import dev.ember.tensor.DType;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The elementwise kernel sources: every op of the Java enums has a case in them, and every family compiles for
 * sm_90 over every dtype in every position (NVRTC or nvcc, no GPU needed; skipped where neither is present).
 */
class ElementwiseSourceTest {
  @Test
  void everyUnaryAndBinaryOpHasACase() {
    String src = Elementwise.source(Family.UNARY, DType.F32, DType.F32);
    for (UnaryOp op : UnaryOp.values()) {
      assertTrue(src.contains("#define U_" + op.name() + " " + op.ordinal() + "\n"), op.name());
      assertTrue(src.contains("case U_" + op.name() + ":"), "elementwise.cu has no case for UnaryOp." + op);
    }
    for (BinaryOp op : BinaryOp.values()) {
      assertTrue(src.contains("#define B_" + op.name() + " " + op.ordinal() + "\n"), op.name());
      assertTrue(src.contains("case B_" + op.name() + ":"), "elementwise.cu has no case for BinaryOp." + op);
    }
  }

  @Test
  void sourcesEndInTheirOneInstantiation() {
    String src = Elementwise.source(Family.WHERE, DType.BOOL, DType.F32, DType.I64, DType.F64);
    assertTrue(src.endsWith("EW_WHERE(ew_where_b8_f32_i64_f64, ebool, float, long long, double)\n"), src);
    assertEquals("ew_unary_backward_f64", Elementwise.kernelName(Family.UNARY_BACKWARD, DType.F64));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Elementwise.source(Family.BINARY, DType.F32));
    assertEquals("Elementwise.source: BINARY takes 3 dtypes, got 1", e.getMessage());
    assertEquals(125, Elementwise.instantiations(Family.BINARY).size());
    assertEquals(2, Elementwise.instantiations(Family.UNARY_BACKWARD).size());
  }

  /** Each family with every dtype in every position (the others F32), in one module per family. */
  @Test
  void everyFamilyCompilesForSm90() {
    DeviceCompiler.assume();
    for (Family f : Family.values()) {
      List<DType[]> picks = new ArrayList<>();
      for (DType[] t : Elementwise.instantiations(f)) {
        int notF32 = 0;
        for (DType d : t) if (d != DType.F32) notF32++;
        boolean allSame = true;
        for (DType d : t) allSame &= d == t[0];
        if (notF32 <= 1 || allSame || f.dtypes() <= 2) picks.add(t);
      }
      StringBuilder all = new StringBuilder(Elementwise.source(f, picks.get(0)));
      for (DType[] t : picks.subList(1, picks.size())) {
        String one = Elementwise.source(f, t);
        all.append(one, one.lastIndexOf('\n', one.length() - 2) + 1, one.length());
      }
      byte[] cubin = DeviceCompiler.cubin("elementwise_" + f, all.toString());
      assertEquals(0x7f, cubin[0] & 0xff, f + ": a cubin is an ELF file");
    }
  }
}
