package dev.ember.nn;

import static dev.ember.testing.Assertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.functional.Pooling;
import dev.ember.nn.functional.Upsampling;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * The pooling and upsampling modules: printed exactly as PyTorch 1.13 prints them, defaults as
 * PyTorch's, and forward equal to the functional op with those arguments.
 */
class PoolModulesTest {
  private static int[] a(int... v) {
    return v;
  }

  @Test
  void reprsMatchTorch() {
    assertEquals("MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
        new MaxPool2d(2).toString());
    assertEquals("MaxPool2d(kernel_size=(2, 3), stride=(2, 3), padding=0, dilation=1, ceil_mode=False)",
        new MaxPool2d(a(2, 3), null, a(0), a(1), false).toString());
    assertEquals("MaxPool2d(kernel_size=3, stride=1, padding=1, dilation=2, ceil_mode=True)",
        new MaxPool2d(3, 1, 1, 2, true).toString());
    assertEquals("MaxPool2d(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), dilation=(2, 1), ceil_mode=False)",
        new MaxPool2d(a(3, 2), a(1, 2), a(1, 0), a(2, 1), false).toString());
    assertEquals("MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)",
        new MaxPool1d(3).toString());
    assertEquals("MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)",
        new MaxPool1d(3, 2, 1, 2, true).toString());
    assertEquals("AvgPool2d(kernel_size=2, stride=2, padding=0)", new AvgPool2d(2).toString());
    assertEquals("AvgPool2d(kernel_size=3, stride=2, padding=1)", new AvgPool2d(3, 2, 1, true, false, 4).toString());
    assertEquals("AvgPool2d(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0))",
        new AvgPool2d(a(2, 3), a(1, 2), a(1, 0), false, true, null).toString());
    assertEquals("AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))", new AvgPool1d(3).toString());
    assertEquals("AvgPool1d(kernel_size=(4,), stride=(3,), padding=(2,))",
        new AvgPool1d(4, 3, 2, true, false).toString());
    assertEquals("AdaptiveAvgPool2d(output_size=1)", new AdaptiveAvgPool2d(1).toString());
    assertEquals("AdaptiveAvgPool2d(output_size=(1, 1))", new AdaptiveAvgPool2d(1, 1).toString());
    assertEquals("AdaptiveAvgPool2d(output_size=(3, None))", new AdaptiveAvgPool2d(3, null).toString());
    assertEquals("AdaptiveMaxPool2d(output_size=(2, 3))", new AdaptiveMaxPool2d(2, 3).toString());
    assertEquals("AdaptiveMaxPool2d(output_size=7)", new AdaptiveMaxPool2d(7).toString());
    assertEquals("AdaptiveMaxPool2d(output_size=(None, 4))", new AdaptiveMaxPool2d(null, 4).toString());
    assertEquals("Upsample(scale_factor=2.0, mode=nearest)", new Upsample(2).toString());
    assertEquals("Upsample(scale_factor=(2.0, 3.0), mode=nearest)",
        new Upsample(null, new double[] {2, 3}, "nearest", null, null).toString());
    assertEquals("Upsample(size=4, mode=nearest)", new Upsample(a(4), "nearest").toString());
    assertEquals("Upsample(size=(4, 5), mode=bilinear)", new Upsample(a(4, 5), "bilinear").toString());
    assertEquals("Upsample(scale_factor=2.0, mode=bilinear)",
        new Upsample(null, new double[] {2}, "bilinear", true, null).toString());
    assertEquals("Upsample(scale_factor=1.5, mode=nearest)", new Upsample(1.5).toString());
    assertEquals("Upsample(scale_factor=0.1, mode=nearest)", new Upsample(0.1).toString());
    assertEquals("Sequential(\n  (0): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
        + "  (1): Upsample(scale_factor=2.0, mode=nearest)\n)",
        new Sequential(new MaxPool2d(2), new Upsample(2)).toString());
  }

  @Test
  void forwardIsTheFunctionalOpWithTheModulesArguments() {
    Tensor x = Tensor.randn(new Generator(3), 2, 3, 9, 10);
    Tensor x1 = Tensor.randn(new Generator(4), 2, 3, 11);
    assertClose(Pooling.maxPool2d(x, a(3, 2), a(1, 2), a(1, 0), a(2, 1), true),
        new MaxPool2d(a(3, 2), a(1, 2), a(1, 0), a(2, 1), true).forward(x), 0, 0, "MaxPool2d");
    assertClose(Pooling.maxPool2d(x, a(2), a(2), a(0), a(1), false), new MaxPool2d(2).forward(x), 0, 0,
        "MaxPool2d default");
    assertClose(Pooling.maxPool1d(x1, 3, 2, 1, 2, true), new MaxPool1d(3, 2, 1, 2, true).forward(x1), 0, 0,
        "MaxPool1d");
    assertClose(Pooling.avgPool2d(x, a(3), a(2), a(1), true, false, 4), new AvgPool2d(3, 2, 1, true, false, 4)
        .forward(x), 0, 0, "AvgPool2d");
    assertClose(Pooling.avgPool2d(x, a(2), a(2), a(0), false, true, null), new AvgPool2d(2).forward(x), 0, 0,
        "AvgPool2d default");
    assertClose(Pooling.avgPool1d(x1, 4, 3, 2, true, false), new AvgPool1d(4, 3, 2, true, false).forward(x1), 0, 0,
        "AvgPool1d");
    assertClose(Pooling.adaptiveAvgPool2d(x, 4, 10), new AdaptiveAvgPool2d(4, null).forward(x), 0, 0,
        "AdaptiveAvgPool2d");
    assertClose(Pooling.adaptiveMaxPool2d(x, 3, 3), new AdaptiveMaxPool2d(3).forward(x), 0, 0, "AdaptiveMaxPool2d");
    assertClose(Upsampling.interpolate(x, a(12, 13), null, "bilinear", true, null),
        new Upsample(a(12, 13), null, "bilinear", true, null).forward(x), 0, 0, "Upsample bilinear");
    assertClose(Upsampling.interpolate(x, 2, "nearest"), new Upsample(2).forward(x), 0, 0, "Upsample nearest");
    assertArrayEquals(a(2, 3, 1, 1), new AdaptiveAvgPool2d(1).forward(x).shape());
  }

  @Test
  void forwardWithIndicesGivesValuesAndIndices() {
    Tensor x = Tensor.randn(new Generator(5), 2, 3, 8, 8);
    Pooling.WithIndices r = new MaxPool2d(2).forwardWithIndices(x);
    assertClose(new MaxPool2d(2).forward(x), r.values(), 0, 0, "values");
    long[] idx = r.indices().toLongArray();
    float[] xs = x.toFloatArray();
    float[] vs = r.values().toFloatArray();
    for (int i = 0; i < idx.length; i++) {
      int plane = i / 16;
      assertTrue(idx[i] >= 0 && idx[i] < 64);
      assertEquals(vs[i], xs[plane * 64 + (int) idx[i]], "value at the returned index " + i);
    }
    Tensor x1 = Tensor.randn(new Generator(6), 2, 9);
    assertClose(new MaxPool1d(3).forward(x1), new MaxPool1d(3).forwardWithIndices(x1).values(), 0, 0, "1d values");
    assertClose(new AdaptiveMaxPool2d(3).forward(x), new AdaptiveMaxPool2d(3).forwardWithIndices(x).values(), 0, 0,
        "adaptive values");
  }

  @Test
  void modulesHaveNoParameters() {
    for (Module m : new Module[] {new MaxPool2d(2), new MaxPool1d(2), new AvgPool2d(2), new AvgPool1d(2),
        new AdaptiveAvgPool2d(1), new AdaptiveMaxPool2d(1), new Upsample(2)}) {
      assertEquals(0, m.parameters().size(), m.name());
      assertTrue(m.stateDict().isEmpty(), m.name());
    }
  }
}
