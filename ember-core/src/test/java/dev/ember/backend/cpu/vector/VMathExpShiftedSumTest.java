package dev.ember.backend.cpu.vector;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Random;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;

/**
 * {@link VMath#expShiftedSum}, the softmax row's one pass, against the three passes it replaced (x - m, {@link
 * VMath#exp}, the vectors' sum in order and then its lanes in lane order): the same bits, values and sum, over
 * inputs that reach every branch of exp (underflow to 0 below EXP_ZERO and at -inf, overflow to +inf, NaN), and in
 * place as softmaxRows calls it. Run a few hundred times, so both the interpreter's and C2's code are compared.
 */
class VMathExpShiftedSumTest {
  private static final int L = FloatVector.SPECIES_PREFERRED.length();

  @Test
  void isTheSubtractionExpAndSumItReplaces() {
    Random r = new Random(5);
    float[] special = {Float.NEGATIVE_INFINITY, Float.POSITIVE_INFINITY, Float.NaN, -105f, -104.9f, -110f, 88.72f,
        89f, 100f, -0f, 0f, Float.MIN_VALUE};
    for (int round = 0; round < 300; round++) {
      int n = L * (1 + r.nextInt(40));
      int xo = r.nextInt(3);
      float[] x = new float[xo + n];
      for (int i = 0; i < n; i++) {
        x[xo + i] = r.nextInt(8) == 0 ? special[r.nextInt(special.length)] : (float) (r.nextGaussian() * 20);
      }
      float m = round % 7 == 0 ? -0f : (float) (r.nextGaussian() * 10);
      float[] want = new float[n];
      for (int i = 0; i < n; i++) want[i] = x[xo + i] - m;
      VMath.exp(want, 0, want, 0, n);
      FloatVector acc = FloatVector.zero(FloatVector.SPECIES_PREFERRED);
      for (int i = 0; i < n; i += L) acc = acc.add(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, want, i));
      float wantSum = acc.lane(0);
      for (int l = 1; l < L; l++) wantSum += acc.lane(l);
      float[] got = new float[n + 1];
      float sum = VMath.expShiftedSum(x, xo, m, got, 1, n);
      assertArrayEquals(want, java.util.Arrays.copyOfRange(got, 1, n + 1), "round " + round);
      assertEquals(Float.floatToRawIntBits(wantSum), Float.floatToRawIntBits(sum), "sum, round " + round);
      float[] inPlace = x.clone();
      assertEquals(Float.floatToRawIntBits(wantSum),
          Float.floatToRawIntBits(VMath.expShiftedSum(inPlace, xo, m, inPlace, xo, n)), "in place, round " + round);
      assertArrayEquals(want, java.util.Arrays.copyOfRange(inPlace, xo, xo + n), "in place, round " + round);
    }
  }
}
