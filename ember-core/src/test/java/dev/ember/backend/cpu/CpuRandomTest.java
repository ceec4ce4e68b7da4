package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.RandomKernels;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** The random fills: the generator's own draws, in row-major order. */
class CpuRandomTest {
  private static final RandomKernels K = Device.CPU.backend().random();

  @Test
  void uniformAndNormalAreTheGeneratorsFills() {
    Tensor u = Tensor.empty(DType.F32, 5, 7);
    K.uniform(u, -1, 2, new Generator(3));
    float[] expected = new float[35];
    new Generator(3).fillUniform(expected, 0, 35, -1, 2);
    assertArrayEquals(expected, u.toFloatArray());
    Tensor nrm = Tensor.empty(DType.F64, 40);
    K.normal(nrm, 0.5, 2, new Generator(4));
    double[] e2 = new double[40];
    new Generator(4).fillNormal(e2, 0, 40, 0.5, 2);
    assertArrayEquals(e2, nrm.toDoubleArray());
  }

  /**
   * A BF16/F16 view's uniform fill keeps the dtype's significand bits of each output, as torch's (HalfDTypeTest has
   * torch's values); its normal and truncated normal fills are float32's rounded once (every nn.init function on a
   * half tensor threw a NullPointerException once).
   */
  @Test
  void halfViewsGetTheirOwnUniformsAndFloat32sNormalsRoundedOnce() {
    for (DType half : new DType[] {DType.BF16, DType.F16}) {
      Tensor u = Tensor.empty(half, 5, 7);
      K.uniform(u, -1, 2, new Generator(3));
      float[] expected = new float[35];
      new Generator(3).fillUniform(expected, 0, 35, -1, 2, half.digits());
      assertArrayEquals(Tensor.of(expected, 5, 7).to(half).toDoubleArray(), u.toDoubleArray(), half + " uniform");
      Tensor n = Tensor.empty(half, 40);
      Tensor nf = Tensor.empty(DType.F32, 40);
      K.normal(n, 0.5, 2, new Generator(4));
      K.normal(nf, 0.5, 2, new Generator(4));
      assertArrayEquals(nf.to(half).toDoubleArray(), n.toDoubleArray(), half + " normal");
      Tensor t = Tensor.empty(half, 300);
      Tensor tf = Tensor.empty(DType.F32, 300);
      K.truncatedNormal(t, 0.5, 1, -0.25, 1.5, new Generator(5));
      K.truncatedNormal(tf, 0.5, 1, -0.25, 1.5, new Generator(5));
      assertArrayEquals(tf.to(half).toDoubleArray(), t.toDoubleArray(), half + " truncated normal");
    }
  }

  @Test
  void truncatedNormalStaysInItsBounds() {
    Tensor t = Tensor.empty(DType.F32, 1000);
    K.truncatedNormal(t, 0.5, 1, -0.25, 1.5, new Generator(5));
    for (float v : t.toFloatArray()) assertTrue(v >= -0.25f && v <= 1.5f, "v=" + v);
  }

  @Test
  void bernoulliDrawsOneUniformPerElement() {
    Tensor m = Tensor.empty(DType.F64, 3, 4);
    K.bernoulli(m, 0.7, 2.5, new Generator(6));
    Generator g = new Generator(6);
    for (double v : m.toDoubleArray()) assertEquals(g.nextDouble() < 0.7 ? 2.5 : 0, v);
  }

  @Test
  void erfinvInvertsErf() {
    for (double x = -4; x <= 4; x += 0.01) {
      assertEquals(x, CpuRandom.erfinv(ScalarKernels.erf(x)), 1e-9 * Math.max(1, Math.abs(x)) * (Math.abs(x) > 3 ? 1e3 : 1),
          "x=" + x);
    }
    assertEquals(Double.POSITIVE_INFINITY, CpuRandom.erfinv(1));
    assertTrue(Double.isNaN(CpuRandom.erfinv(1.5)));
  }
}
