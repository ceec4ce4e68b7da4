package dev.ember.nn.functional;

import static dev.ember.testing.Assertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Outputs, argmax indices and input gradients of max, average and adaptive pooling and of
 * nearest/bilinear interpolation against PyTorch 1.13 (pool/pool_fixtures.txt, written by
 * pool/make_pool_fixtures.py), in float64 (tight) and float32 (1e-5 relative). The cases cover
 * padding, dilation, ceil mode (including the rule that drops a last window starting in the right
 * padding), count_include_pad false, divisor_override, unbatched inputs, non-divisible adaptive sizes,
 * ties and NaN in max windows (gradient routing), and interpolation by size and by scale with and
 * without align_corners.
 */
class PoolingFixtureTest {
  private static final Map<String, Tensor> ALL = Fixtures.read(PoolingFixtureTest.class, "pool/pool_fixtures.txt");
  private static final Map<String, Function<Tensor, Object>> CASES = new LinkedHashMap<>();

  private static final int[] Z = {0};
  private static final int[] ONE = {1};

  private static int[] a(int... v) {
    return v;
  }

  static {
    // max pool 2d
    CASES.put("mp_basic", x -> Pooling.maxPool2d(x, 2));
    CASES.put("mp_k3s2p1", x -> Pooling.maxPool2d(x, a(3), a(2), a(1), ONE, false));
    CASES.put("mp_ceil", x -> Pooling.maxPool2d(x, a(2), a(2), a(1), ONE, true));
    CASES.put("mp_ceil2", x -> Pooling.maxPool2d(x, a(3, 2), a(2, 2), Z, ONE, true));
    CASES.put("mp_dil", x -> Pooling.maxPool2d(x, a(3), a(1), a(1), a(2), false));
    CASES.put("mp_dil_ceil", x -> Pooling.maxPool2d(x, a(2, 3), a(3, 2), a(1, 1), a(2, 2), true));
    CASES.put("mp_unbatched", x -> Pooling.maxPool2d(x, a(2), a(1), Z, ONE, false));
    CASES.put("mp_ties", x -> Pooling.maxPool2d(x, a(3), a(1), a(1), ONE, false));
    CASES.put("mp_ties2", x -> Pooling.maxPool2d(x, 2));
    CASES.put("mp_indices", x -> Pooling.maxPool2dWithIndices(x, a(3), a(2), a(1), ONE, false));
    CASES.put("mp_nan", x -> Pooling.maxPool2dWithIndices(x, a(3), a(1), a(1), ONE, false));
    // max pool 1d
    CASES.put("mp1_basic", x -> Pooling.maxPool1d(x, 3, 2, 1, 1, false));
    CASES.put("mp1_dil_ceil", x -> Pooling.maxPool1d(x, 3, 2, 1, 2, true));
    CASES.put("mp1_unbatched", x -> Pooling.maxPool1d(x, 2));
    CASES.put("mp1_ties", x -> Pooling.maxPool1d(x, 4, 1, 2, 1, false));
    CASES.put("mp1_indices", x -> Pooling.maxPool1dWithIndices(x, 3, 2, 1, 1, false));
    // avg pool 2d
    CASES.put("ap_basic", x -> Pooling.avgPool2d(x, 2));
    CASES.put("ap_pad", x -> Pooling.avgPool2d(x, a(3), a(2), a(1), false, true, null));
    CASES.put("ap_pad_nocount", x -> Pooling.avgPool2d(x, a(3), a(2), a(1), false, false, null));
    CASES.put("ap_ceil", x -> Pooling.avgPool2d(x, a(3), a(2), a(1), true, true, null));
    CASES.put("ap_ceil_nocount", x -> Pooling.avgPool2d(x, a(3), a(2), a(1), true, false, null));
    CASES.put("ap_ceil_nopad", x -> Pooling.avgPool2d(x, a(3, 2), a(2, 2), Z, true, true, null));
    CASES.put("ap_div", x -> Pooling.avgPool2d(x, a(3, 2), a(2, 1), a(1, 1), false, true, 5));
    CASES.put("ap_unbatched", x -> Pooling.avgPool2d(x, a(2), a(1), Z, false, true, null));
    CASES.put("ap_rect", x -> Pooling.avgPool2d(x, a(2, 3), a(1, 2), a(1, 1), true, true, null));
    // avg pool 1d
    CASES.put("ap1_basic", x -> Pooling.avgPool1d(x, 3));
    CASES.put("ap1_pad", x -> Pooling.avgPool1d(x, 4, 3, 2, true, false));
    CASES.put("ap1_padcount", x -> Pooling.avgPool1d(x, 4, 3, 2, true, true));
    CASES.put("ap1_unbatched", x -> Pooling.avgPool1d(x, 2, 1, 1, false, true));
    // adaptive
    CASES.put("aap_7_3", x -> Pooling.adaptiveAvgPool2d(x, 3));
    CASES.put("aap_5_3", x -> Pooling.adaptiveAvgPool2d(x, 3, 4));
    CASES.put("aap_1", x -> Pooling.adaptiveAvgPool2d(x, 1));
    CASES.put("aap_none", x -> Pooling.adaptiveAvgPool2d(x, 3, null));
    CASES.put("aap_up", x -> Pooling.adaptiveAvgPool2d(x, 5, 6));
    CASES.put("aap_unbatched", x -> Pooling.adaptiveAvgPool2d(x, 2, 3));
    CASES.put("amp_7_3", x -> Pooling.adaptiveMaxPool2dWithIndices(x, 3, 3));
    CASES.put("amp_5_3", x -> Pooling.adaptiveMaxPool2dWithIndices(x, 3, 4));
    CASES.put("amp_1", x -> Pooling.adaptiveMaxPool2d(x, 1));
    CASES.put("amp_none", x -> Pooling.adaptiveMaxPool2d(x, null, 3));
    CASES.put("amp_up", x -> Pooling.adaptiveMaxPool2d(x, 5, 6));
    CASES.put("amp_ties", x -> Pooling.adaptiveMaxPool2dWithIndices(x, 3, 2));
    CASES.put("amp_unbatched", x -> Pooling.adaptiveMaxPool2d(x, 2, 3));
    // interpolate
    CASES.put("un_scale2", x -> Upsampling.interpolate(x, 2, "nearest"));
    CASES.put("un_scale_odd", x -> Upsampling.interpolate(x, null, new double[] {1.7, 2.2}, "nearest", null, null));
    CASES.put("un_scale_recompute",
        x -> Upsampling.interpolate(x, null, new double[] {1.7, 2.2}, "nearest", null, true));
    CASES.put("un_scale12", x -> Upsampling.interpolate(x, 1.2, "nearest"));
    CASES.put("un_size", x -> Upsampling.interpolate(x, a(7, 9), "nearest"));
    CASES.put("un_size_down", x -> Upsampling.interpolate(x, a(3, 2), "nearest"));
    CASES.put("un1_scale", x -> Upsampling.interpolate(x, 2.5, "nearest"));
    CASES.put("un1_scale22", x -> Upsampling.interpolate(x, 2.2, "nearest"));
    CASES.put("un1_scale12", x -> Upsampling.interpolate(x, 1.2, "nearest"));
    CASES.put("un_scale22", x -> Upsampling.interpolate(x, 2.2, "nearest"));
    CASES.put("un1_size", x -> Upsampling.interpolate(x, a(8), "nearest"));
    for (boolean ac : new boolean[] {false, true}) {
      String s = ac ? "_ac" : "";
      CASES.put("bl_scale2" + s, x -> Upsampling.interpolate(x, null, new double[] {2}, "bilinear", ac, null));
      CASES.put("bl_size" + s, x -> Upsampling.interpolate(x, a(7, 9), null, "bilinear", ac, null));
      CASES.put("bl_down" + s, x -> Upsampling.interpolate(x, a(3, 5), null, "bilinear", ac, null));
      CASES.put("bl_odd" + s, x -> Upsampling.interpolate(x, null, new double[] {1.5, 2.3}, "bilinear", ac, null));
      CASES.put("bl_out1" + s, x -> Upsampling.interpolate(x, a(1, 3), null, "bilinear", ac, null));
    }
    CASES.put("bl_same", x -> Upsampling.interpolate(x, null, new double[] {1.0, 1.1}, "bilinear", false, null));
    CASES.put("bl_recompute", x -> Upsampling.interpolate(x, null, new double[] {1.7}, "bilinear", false, true));
  }

  static Iterable<String> cases() {
    return CASES.keySet();
  }

  @Test
  void everyFixtureCaseIsChecked() {
    var names = new java.util.TreeSet<String>();
    for (String k : ALL.keySet()) names.add(k.substring(0, k.indexOf('.')));
    assertEquals(names, new java.util.TreeSet<>(CASES.keySet()));
  }

  @ParameterizedTest
  @MethodSource("cases")
  void matchesTorch(String name) {
    Map<String, Tensor> f = Fixtures.under(ALL, name);
    for (DType dt : new DType[] {DType.F64, DType.F32}) {
      double tol = dt == DType.F64 ? 1e-12 : 1e-5;
      Tensor x = f.get("input").to(dt).clone().requiresGrad(true);
      Object r = CASES.get(name).apply(x);
      Tensor out;
      if (r instanceof Pooling.WithIndices wi) {
        out = wi.values();
        assertEquals(DType.I64, wi.indices().dtype(), name + " indices dtype");
        assertArrayEquals(f.get("indices").to(DType.I64).toLongArray(), wi.indices().toLongArray(),
            name + " indices " + dt);
      } else {
        out = (Tensor) r;
      }
      assertEquals(dt, out.dtype());
      assertClose(f.get("out"), out, tol, tol, name + " out " + dt);
      if (!f.containsKey("up")) continue; // a forward-only case (see make_pool_fixtures.py)
      out.backward(f.get("up").to(dt));
      assertClose(f.get("grad.input"), x.grad(), tol, tol, name + " grad input " + dt);
    }
  }
}
