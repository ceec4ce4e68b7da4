package dev.ember.backend.cpu.vector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The register transpose against the element-by-element definition, for each kind of beta. */
class Transpose16Test {
  @Test
  void transposesABlockAndScalesWhatWasThereByBeta() {
    assumeTrue(Transpose16.APPLIES, "the preferred vector species does not have 16 float lanes");
    Random rnd = new Random(7);
    int ldb = 37;
    int ldd = 29;
    float[] b = new float[5 + 16 * ldb];
    for (int i = 0; i < b.length; i++) b[i] = rnd.nextFloat() * 2 - 1;
    for (float beta : new float[] {0f, 1f, 0.5f, -2f}) {
      float[] dst = new float[3 + 16 * ldd];
      for (int i = 0; i < dst.length; i++) dst[i] = beta == 0 ? Float.NaN : rnd.nextFloat();
      float[] want = dst.clone();
      for (int t = 0; t < 16; t++) {
        for (int j = 0; j < 16; j++) {
          float v = b[5 + j * ldb + t]; // row j, column t of the block
          int at = 3 + t * ldd + j;
          want[at] = beta == 0 ? v : beta == 1 ? v + want[at] : want[at] * beta + v;
        }
      }
      Transpose16.transpose(b, 5, ldb, dst, 3, ldd, beta);
      for (int i = 0; i < dst.length; i++) {
        boolean inBlock = i >= 3 && (i - 3) / ldd < 16 && (i - 3) % ldd < 16;
        if (!inBlock) assertEquals(Float.floatToRawIntBits(want[i]), Float.floatToRawIntBits(dst[i]), "beta " + beta + ": wrote outside the block at " + i);
        else assertEquals(want[i], dst[i], "beta " + beta + " at " + i + " of " + Arrays.toString(new int[] {(i - 3) / ldd, (i - 3) % ldd}));
      }
    }
  }
}
