package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Linear;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class FTest {
  /** Every family class whose public functions F must expose. */
  static final List<Class<?>> FAMILIES = List.of(Activations.class, Losses.class, Normalization.class, Dropouts.class,
      Embeddings.class, Attention.class, Recurrent.class, Pooling.class, Upsampling.class, Convolution.class,
      Padding.class);

  @Test
  void everyPublicFunctionOfTheFamiliesIsInF() throws Exception {
    List<String> missing = new ArrayList<>();
    int n = 0;
    for (Class<?> c : FAMILIES) {
      for (Method m : c.getDeclaredMethods()) {
        if (!Modifier.isPublic(m.getModifiers()) || !Modifier.isStatic(m.getModifiers())) continue;
        n++;
        try {
          Method f = F.class.getMethod(m.getName(), m.getParameterTypes());
          assertEquals(m.getReturnType(), f.getReturnType(), m.toString());
        } catch (NoSuchMethodException e) {
          missing.add(c.getSimpleName() + "." + m.getName() + Arrays.toString(m.getParameterTypes()));
        }
      }
    }
    assertTrue(missing.isEmpty(), "not in F: " + missing);
    assertTrue(n > 80, "only " + n + " functions found");
  }

  @Test
  void delegatesToTheFamily() {
    Tensor x = Tensor.randn(new Generator(1), 3, 4);
    assertArrayEquals(Activations.gelu(x).toFloatArray(), F.gelu(x).toFloatArray());
    Tensor labels = Tensor.of(new long[] {0, 3, 1}, 3);
    assertEquals(Losses.crossEntropy(x, labels).item(), F.crossEntropy(x, labels).item());
  }

  @Test
  void linearMatchesTheModuleAndGradchecks() {
    Linear l = new Linear(5, 3, true, new Generator(2));
    Tensor x = Tensor.randn(new Generator(3), 2, 4, 5);
    assertArrayEquals(l.forward(x).toFloatArray(), F.linear(x, l.weight(), l.bias()).toFloatArray());
    assertArrayEquals(new int[] {3}, F.linear(Tensor.ones(5), l.weight()).shape());
    Tensor xd = Tensor.randn(new Generator(4), DType.F64, 2, 3, 5).requiresGrad(true);
    Tensor w = Tensor.randn(new Generator(5), DType.F64, 4, 5).requiresGrad(true);
    Tensor b = Tensor.randn(new Generator(6), DType.F64, 4).requiresGrad(true);
    GradCheck.check("linear", in -> F.linear(in.get(0), in.get(1), in.get(2)), List.of(xd, w, b));
    var e = assertThrows(IllegalArgumentException.class, () -> F.linear(Tensor.ones(2, 6), l.weight(), l.bias()));
    assertEquals("linear: input's last dimension must equal weight's second (weight is [out, in]): input=[2, 6], "
        + "weight=[3, 5]", e.getMessage());
  }
}
