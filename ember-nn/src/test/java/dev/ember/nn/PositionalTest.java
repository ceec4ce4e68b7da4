package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.util.List;
import org.junit.jupiter.api.Test;

class PositionalTest {
  @Test
  void sinusoidalTableFollowsTheFormula() {
    SinusoidalPositionalEncoding pe = new SinusoidalPositionalEncoding(6, 50);
    float[] t = pe.table().toFloatArray();
    for (int pos : new int[] {0, 1, 7, 49}) {
      for (int i = 0; i < 6; i += 2) {
        double a = pos / Math.pow(10000, i / 6.0);
        assertEquals(Math.sin(a), t[pos * 6 + i], 1e-6);
        assertEquals(Math.cos(a), t[pos * 6 + i + 1], 1e-6);
      }
    }
    Tensor x = Tensor.randn(new Generator(1), 2, 5, 6);
    Tensor y = pe.forward(x);
    assertArrayEquals(x.add(pe.table().narrow(0, 0, 5)).toFloatArray(), y.toFloatArray());
    assertTrue(pe.stateDict().isEmpty(), "the table is not saved");
    assertEquals("SinusoidalPositionalEncoding: input must be [..., T <= max_len (50), d_model (6)]: input=[2, 51, 6]",
        assertThrows(IllegalArgumentException.class, () -> pe.forward(Tensor.zeros(2, 51, 6))).getMessage());
    // odd d_model keeps the last sine column
    assertEquals(Math.sin(3 / Math.pow(10000, 4 / 5.0)), new SinusoidalPositionalEncoding(5, 4).table().toFloatArray()[3 * 5 + 4], 1e-6);
  }

  @Test
  void learnedEmbeddingIsTrainable() {
    LearnedPositionalEmbedding pe = new LearnedPositionalEmbedding(8, 4, new Generator(2));
    pe.to(DType.F64);
    Tensor x = Tensor.randn(new Generator(3), DType.F64, 3, 5, 4).requiresGrad(true);
    GradCheck.check("LearnedPositionalEmbedding", in -> pe.forward(in.get(0)), List.of(x, pe.weight()));
    pe.weight().setGrad(null);
    pe.forward(x).sum().backward();
    double[] g = pe.weight().grad().toDoubleArray();
    assertEquals(3.0, g[0]);
    assertEquals(0.0, g[5 * 4], "rows past T get no gradient");
    assertEquals(List.of("weight"), List.copyOf(pe.stateDict().keySet()));
  }
}
