package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.functional.Convolution;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The convolution layers: PyTorch's default initialisation bounds (fan_in
 * from the weight's dims, transposed convolution included), printed forms identical to
 * {@code print(module)} in PyTorch 1.13, parameter names and shapes, and that forward is the
 * functional op with the layer's arguments.
 */
class ConvModulesTest {

  /** Every element within [-bound, bound], and for 64+ elements the extremes close to it (so a wrong fan would show). */
  private static void assertUniformBound(Tensor t, double bound, String what) {
    double max = 0;
    for (double v : t.toDoubleArray()) {
      assertTrue(Math.abs(v) <= bound, what + ": " + v + " outside +-" + bound);
      max = Math.max(max, Math.abs(v));
    }
    if (t.numel() >= 64) assertTrue(max > 0.9 * bound, what + ": largest |value| " + max + " is far inside +-" + bound);
  }

  @Test
  void defaultInitialisationFollowsPyTorch() {
    Conv2d c = new Conv2d(3, 16, new int[] {3, 5}, new int[] {1, 1}, new int[] {0, 0}, new int[] {1, 1}, 1, true,
        "zeros", new Generator(1));
    assertArrayEquals(new int[] {16, 3, 3, 5}, c.weight().shape());
    assertUniformBound(c.weight(), 1 / Math.sqrt(45), "Conv2d weight");
    assertUniformBound(c.bias(), 1 / Math.sqrt(45), "Conv2d bias");
    Conv1d c1 = new Conv1d(4, 64, 3, 1, 0, 1, 2, true, "zeros", new Generator(2));
    assertArrayEquals(new int[] {64, 2, 3}, c1.weight().shape());
    assertUniformBound(c1.weight(), 1 / Math.sqrt(6), "Conv1d weight (groups 2)");
    assertUniformBound(c1.bias(), 1 / Math.sqrt(6), "Conv1d bias");
    // transposed: weight [in, out / groups, kH, kW], PyTorch's fan_in = weight.size(1) * kH * kW = 4 * 9
    // (a conv-style fan, in / groups * 9 = 9, would give bound 1/3)
    ConvTranspose2d t = new ConvTranspose2d(32, 128, new int[] {3, 3}, new int[] {1, 1}, new int[] {0, 0},
        new int[] {0, 0}, 32, true, new int[] {1, 1}, new Generator(3));
    assertArrayEquals(new int[] {32, 4, 3, 3}, t.weight().shape());
    assertUniformBound(t.weight(), 1.0 / 6, "ConvTranspose2d weight");
    assertUniformBound(t.bias(), 1.0 / 6, "ConvTranspose2d bias");
    assertEquals(List.of("weight", "bias"), List.copyOf(t.namedParameters().keySet()));
    Conv2d nb = new Conv2d(2, 2, new int[] {1, 1}, new int[] {1, 1}, new int[] {0, 0}, new int[] {1, 1}, 1, false,
        "zeros", new Generator(4));
    assertNull(nb.bias());
    assertEquals(List.of("weight"), List.copyOf(nb.namedParameters().keySet()));
  }

  @Test
  void printsAsPyTorch() {
    Generator g = new Generator(0);
    assertEquals("Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))", new Conv2d(3, 16, 3, 1, 1).toString());
    assertEquals("Conv2d(3, 16, kernel_size=(3, 5), stride=(2, 2), dilation=(2, 2), bias=False, padding_mode=reflect)",
        new Conv2d(3, 16, new int[] {3, 5}, new int[] {2, 2}, new int[] {0, 0}, new int[] {2, 2}, 1, false, "reflect",
            g).toString());
    assertEquals("Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=same, groups=2)",
        new Conv2d(4, 8, new int[] {3, 3}, new int[] {1, 1}, "same", new int[] {1, 1}, 2, true, "zeros", g).toString());
    assertEquals("Conv1d(3, 6, kernel_size=(5,), stride=(1,))", new Conv1d(3, 6, 5).toString());
    assertEquals("ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1), "
        + "groups=2)", new ConvTranspose2d(4, 6, new int[] {3, 3}, new int[] {2, 2}, new int[] {1, 1},
            new int[] {1, 1}, 2, true, new int[] {1, 1}, g).toString());
  }

  @Test
  void forwardAppliesTheLayersArguments() {
    Generator g = new Generator(9);
    Tensor x = Tensor.randn(g, 2, 4, 9, 8);
    Conv2d c = new Conv2d(4, 6, new int[] {3, 2}, new int[] {2, 1}, new int[] {1, 0}, new int[] {1, 2}, 2, true,
        "circular", g);
    Tensor expected = Convolution.conv2d(x, c.weight(), c.bias(), new int[] {2, 1}, new int[] {1, 0},
        new int[] {1, 2}, 2, "circular");
    assertArrayEquals(expected.toFloatArray(), c.forward(x).toFloatArray(), 0f);
    Conv2d same = new Conv2d(4, 4, new int[] {4, 3}, new int[] {1, 1}, "same", new int[] {1, 1}, 4, true, "zeros", g);
    assertArrayEquals(new int[] {2, 4, 9, 8}, same.forward(x).shape());
    Conv1d c1 = new Conv1d(4, 2, 3, 2, "valid", 1, 1, false, "zeros", g);
    assertArrayEquals(new int[] {2, 2, 3}, c1.forward(Tensor.randn(g, 2, 4, 7)).shape());
    ConvTranspose2d t = new ConvTranspose2d(4, 3, 3, 2, 1);
    assertArrayEquals(new int[] {2, 3, 17, 15}, t.forward(x).shape());
    assertArrayEquals(new int[] {2, 3, 18, 16}, t.forward(x, new int[] {18, 16}).shape());
    assertThrows(IllegalArgumentException.class, () -> t.forward(x, new int[] {19, 16}));
  }

  @Test
  void constructorsRejectBadHyperparameters() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Conv2d(3, 4,
        new int[] {3, 3}, new int[] {1, 1}, new int[] {0, 0}, new int[] {1, 1}, 2, true, "zeros", new Generator(0)));
    assertEquals("Conv2d: in_channels (3) and out_channels (4) must be divisible by groups (2)", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new Conv2d(3, 4, new int[] {3, 3}, new int[] {2, 2},
        "same", new int[] {1, 1}, 1, true, "zeros", new Generator(0)));
    assertEquals("Conv2d: padding='same' is not supported for strided convolutions (stride (2, 2))", e.getMessage());
  }
}
