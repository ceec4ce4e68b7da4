package dev.ember.nn.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.io.Json;
import dev.ember.quant.QDType;
import dev.ember.quant.QScheme;
import dev.ember.quant.QTensor;
import dev.ember.quant.Quantization;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Quantize.dynamic and DynamicQuantizedLinear: the int8 path against its own float definition, F32 and torch 1.13. */
class DynamicQuantizationTest {
  private static Sequential mlp(Generator g) {
    return new Sequential(new Linear(784, 256, true, g), new ReLU(), new Linear(256, 128, true, g), new ReLU(),
        new Linear(128, 10, true, g));
  }

  @Test
  void outputIsTheFloatProductOfTheQuantizedOperands() {
    Generator g = new Generator(1);
    Linear lin = new Linear(37, 19, true, g);
    Tensor x = Tensor.randn(g, 5, 37);
    DynamicQuantizedLinear q = DynamicQuantizedLinear.from(lin);
    float[] y = q.call(x).toFloatArray();
    // the same quantization by the public API, then a float64 product of the dequantized values
    QTensor qx = Quantization.quantize(x, QScheme.perTensorAffine(QDType.QINT8));
    QTensor qw = Quantization.quantize(lin.weight().detach(), QScheme.perChannelSymmetric(QDType.QINT8, 0));
    assertArrayEquals(qw.intRepr(), q.weight().intRepr());
    float[] xd = qx.dequantize().toFloatArray();
    float[] wd = qw.dequantize().toFloatArray();
    float[] b = lin.bias().toFloatArray();
    for (int i = 0; i < 5; i++) {
      for (int j = 0; j < 19; j++) {
        double s = b[j];
        for (int p = 0; p < 37; p++) s += (double) xd[i * 37 + p] * wd[j * 37 + p];
        assertEquals(s, y[i * 19 + j], 1e-5 * Math.max(1, Math.abs(s)), "y[" + i + ", " + j + "]");
      }
    }
  }

  @Test
  void everyBatchSizeGivesTheExactIntegerProductsBits() {
    // batch 1, 5 and 40 take the packed kernel's 1-, 4- and 8-row tiles; each layer is called twice (the second call
    // reuses the packed weight); the expected bits follow Backend.int8LinearDequantize's formula on exact int sums
    Generator g = new Generator(4);
    Linear lin = new Linear(300, 45, true, g);
    DynamicQuantizedLinear q = DynamicQuantizedLinear.from(lin);
    int[] w = q.weight().intRepr();
    float[] ws = q.weight().params().scales();
    float[] bias = lin.bias().toFloatArray();
    for (int m : new int[] {1, 5, 40}) {
      Tensor x = Tensor.randn(g, m, 300);
      QTensor qx = Quantization.quantize(x, QScheme.perTensorAffine(QDType.QINT8));
      int[] a = qx.intRepr();
      float aScale = qx.params().scales()[0];
      int aZero = qx.params().zeroPoints()[0];
      for (int call = 0; call < 2; call++) {
        float[] y = q.call(x).toFloatArray();
        for (int i = 0; i < m; i++) {
          for (int j = 0; j < 45; j++) {
            int acc = 0;
            int rowSum = 0;
            for (int p = 0; p < 300; p++) {
              acc += a[i * 300 + p] * w[j * 300 + p];
              rowSum += w[j * 300 + p];
            }
            float want = (acc - (long) aZero * rowSum) * (aScale * ws[j]) + bias[j];
            assertEquals(want, y[i * 45 + j], 0f, "m=" + m + " call " + call + " y[" + i + ", " + j + "]");
          }
        }
      }
    }
  }

  @Test
  void dynamicReplacesEveryLinearAndStaysCloseToF32() {
    Generator g = new Generator(2);
    Sequential model = mlp(g);
    Module nested = new Sequential(new Sequential(model.get(0), model.get(1)), model.get(2));
    Tensor x = Tensor.randn(g, 64, 784);
    float[] ref;
    try (var off = Grad.off()) {
      ref = model.call(x).toFloatArray();
    }
    Module q = Quantize.dynamic(model);
    assertSame(model, q);
    assertInstanceOf(DynamicQuantizedLinear.class, model.get(0));
    assertInstanceOf(ReLU.class, model.get(1));
    assertInstanceOf(DynamicQuantizedLinear.class, model.get(4));
    assertTrue(model.parameters().isEmpty());
    float[] y = q.call(x).toFloatArray();
    double maxErr = 0;
    double maxRef = 0;
    for (int i = 0; i < y.length; i++) {
      maxErr = Math.max(maxErr, Math.abs(y[i] - ref[i]));
      maxRef = Math.max(maxRef, Math.abs(ref[i]));
    }
    assertTrue(maxErr < 0.02 * maxRef, "max |int8 - f32| = " + maxErr + " for max |f32| = " + maxRef);
    // nested containers: the shared Linear objects were already replaced in model, the nested tree gets its own
    Quantize.dynamic(nested);
    assertInstanceOf(DynamicQuantizedLinear.class, ((Sequential) nested.child("0")).get(0));
    assertInstanceOf(DynamicQuantizedLinear.class, Quantize.dynamic(new Linear(3, 2)));
    // batch 1 and a 3-d input keep their leading dimensions
    assertArrayEquals(new int[] {1, 10}, q.call(Tensor.randn(g, 1, 784)).shape());
    assertArrayEquals(new int[] {2, 3, 10}, q.call(Tensor.randn(g, 2, 3, 784)).shape());
  }

  @Test
  @SuppressWarnings("unchecked")
  void closeToTorchQuantizeDynamic() throws Exception {
    Map<String, Object> fx;
    try (InputStream in = getClass().getResourceAsStream("dynamic_fixture.json")) {
      fx = (Map<String, Object>) Json.parsePlain(new String(in.readAllBytes(), StandardCharsets.UTF_8), Json.NonFinite.LITERALS);
    }
    DynamicQuantizedLinear l0 = new DynamicQuantizedLinear(t(fx, "w0", 32, 64), t(fx, "b0", 32));
    DynamicQuantizedLinear l2 = new DynamicQuantizedLinear(t(fx, "w2", 10, 32), t(fx, "b2", 10));
    Sequential q = new Sequential(l0, new ReLU(), l2);
    float[] y = q.call(t(fx, "x", 8, 64)).toFloatArray();
    float[] torchQ = t(fx, "dynamic", 80).toFloatArray();
    float[] f32 = t(fx, "f32", 80).toFloatArray();
    double ours = 0;
    double theirs = 0;
    for (int i = 0; i < y.length; i++) {
      ours = Math.max(ours, Math.abs(y[i] - f32[i]));
      theirs = Math.max(theirs, Math.abs(torchQ[i] - f32[i]));
      assertEquals(torchQ[i], y[i], 0.02, "element " + i);  // torch's inputs are quint8 with reduce_range (7 bits)
    }
    assertTrue(ours <= theirs, "ours " + ours + " vs torch's " + theirs + " from f32");  // 8-bit inputs: closer
  }

  private static Tensor t(Map<String, Object> fx, String key, int... shape) {
    List<?> l = (List<?>) fx.get(key);
    float[] f = new float[l.size()];
    for (int i = 0; i < f.length; i++) f[i] = (float) ((Number) l.get(i)).doubleValue();
    return Tensor.of(f, shape);
  }

  @Test
  void badInputsNameTheLayerAndShapes() {
    DynamicQuantizedLinear q = DynamicQuantizedLinear.from(new Linear(4, 3));
    var e = assertThrows(IllegalArgumentException.class, () -> q.call(Tensor.zeros(2, 5)));
    assertTrue(e.getMessage().startsWith("DynamicQuantizedLinear: input's last dimension must be in_features (4)"),
        e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> q.call(Tensor.of(new float[] {1, Float.NaN, 0, 0}, 1, 4)));
    assertThrows(IllegalArgumentException.class, () -> new DynamicQuantizedLinear(Tensor.zeros(3, 4), Tensor.zeros(4)));
    // a constant-zero input still quantizes (scale = eps) and gives the bias
    Tensor b = Tensor.of(new float[] {1, 2, 3}, 3);
    assertArrayEquals(new float[] {1, 2, 3}, new DynamicQuantizedLinear(Tensor.ones(3, 4), b).call(Tensor.zeros(1, 4))
        .toFloatArray());
  }
}
