package dev.ember.onnx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import dev.ember.autograd.Grad;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.quant.DynamicQuantizedLinear;
import dev.ember.nn.quant.Quantize;
import dev.ember.onnx.proto.OnnxProto.ModelProto;
import dev.ember.onnx.proto.OnnxProto.NodeProto;
import dev.ember.onnx.proto.OnnxProto.TensorProto;
import dev.ember.quant.QTensor;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.nio.FloatBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Quantized layers exported in the QDQ form: the graph's int8 weights, and ONNX Runtime against Ember. */
class QdqExportTest {
  private static OrtEnvironment env;

  @TempDir Path dir;

  @BeforeAll
  static void ort() {
    env = OrtEnvironment.getEnvironment();
  }

  @Test
  void dynamicLinearIsAnInt8WeightWithDequantizeLinearAndADynamicallyQuantizedInput() {
    DynamicQuantizedLinear q = DynamicQuantizedLinear.from(new Linear(6, 4, true, new Generator(1)));
    ModelProto model = Onnx.toModelProto(q, Tensor.randn(new Generator(2), 3, 6));
    List<String> ops = model.getGraph().getNodeList().stream().map(NodeProto::getOpType).toList();
    assertEquals(List.of("DequantizeLinear", "DynamicQuantizeLinear", "DequantizeLinear", "Gemm", "Identity"), ops);
    TensorProto w = init(model, "DynamicQuantizedLinear.weight");
    assertEquals(TensorProto.DataType.INT8_VALUE, w.getDataType());
    assertEquals(List.of(4L, 6L), w.getDimsList());
    QTensor qw = q.weight();
    assertArrayEquals(qw.bytes(), w.getRawData().toByteArray());
    TensorProto s = init(model, "DynamicQuantizedLinear.weight_scale");
    float[] scales = new float[4];
    s.getRawData().asReadOnlyByteBuffer().order(java.nio.ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(scales);
    assertArrayEquals(qw.params().scales(), scales);
    assertEquals(TensorProto.DataType.INT8_VALUE, init(model, "DynamicQuantizedLinear.weight_zero_point").getDataType());
    NodeProto dq = model.getGraph().getNode(0);
    assertEquals("axis", dq.getAttribute(0).getName());
    assertEquals(0, dq.getAttribute(0).getI());
    assertEquals(3, model.getGraph().getNode(1).getOutputCount());  // y, y_scale, y_zero_point
    assertEquals(17, model.getOpsetImport(0).getVersion());
  }

  private static TensorProto init(ModelProto m, String name) {
    return m.getGraph().getInitializerList().stream().filter(t -> t.getName().equals(name)).findFirst().orElseThrow();
  }

  /**
   * One quantized Linear: ORT's output is Ember's within one quantum: the float rounding of the product, plus one
   * input quantum (scale of this batch) times the row's largest weight, where the two round an element differently.
   */
  @Test
  void onnxRuntimeReproducesADynamicLinearWithinOneQuantum() throws Exception {
    Generator g = new Generator(3);
    for (int[] shape : new int[][] {{2, 32}, {5, 32}, {3, 7, 32}}) {
      DynamicQuantizedLinear q = DynamicQuantizedLinear.from(new Linear(32, 12, true, g));
      Path file = dir.resolve("q" + shape.length + shape[0] + ".onnx");
      Onnx.export(q, Tensor.randn(g, withLast(shape, 4, 32)), file);
      Tensor x = Tensor.randn(g, shape).mul(2).add(0.3);
      float[] want = q.call(x).toFloatArray();
      float[] got = ort(file, x, want.length);
      float[] xv = x.toFloatArray();
      float lo = 0;
      float hi = 0;
      for (float v : xv) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
      double aScale = (hi - lo) / 255f;
      float[] wd = q.weight().dequantize().toFloatArray();
      double worst = 0;
      for (int i = 0; i < want.length; i++) {
        int j = i % 12;
        double wMax = 0;
        for (int k = 0; k < 32; k++) wMax = Math.max(wMax, Math.abs(wd[j * 32 + k]));
        double quantum = aScale * wMax;
        double d = Math.abs(got[i] - want[i]);
        worst = Math.max(worst, d / quantum);
        assertTrue(d <= quantum + 1e-6 * Math.max(1, Math.abs(want[i])),
            "element " + i + ": ORT " + got[i] + " vs Ember " + want[i] + " (quantum " + quantum + ")");
      }
      // measured: at most 1e-4 of a quantum (ORT rounds the inputs as Ember does; the sums differ by float rounding)
      assertTrue(worst < 0.01, "worst " + worst + " quanta");
    }
  }

  /** A quantized MLP: every layer's input is quantized by ORT as by Ember, so the outputs agree to float rounding. */
  @Test
  void onnxRuntimeRunsAQuantizedMlpCloseToEmber() throws Exception {
    Generator g = new Generator(4);
    Module model = Quantize.dynamic(new Sequential(new Linear(64, 32, true, g), new ReLU(), new Linear(32, 10, true, g)));
    Path file = dir.resolve("mlp.onnx");
    Onnx.export(model, Tensor.randn(g, 3, 64), file);
    for (int b : new int[] {2, 9}) {
      Tensor x = Tensor.randn(g, b, 64);
      float[] want = model.call(x).toFloatArray();
      float[] got = ort(file, x, want.length);
      double worst = 0;
      double range = 0;
      for (int i = 0; i < want.length; i++) {
        worst = Math.max(worst, Math.abs(got[i] - want[i]));
        range = Math.max(range, Math.abs(want[i]));
      }
      assertTrue(worst <= 1e-5 * Math.max(1, range), "ORT differs from Ember by " + worst + " on outputs up to " + range);
    }
  }

  private static int[] withLast(int[] shape, int first, int last) {
    int[] s = shape.clone();
    s[0] = first;
    s[s.length - 1] = last;
    return s;
  }

  private static float[] ort(Path file, Tensor x, int n) throws Exception {
    try (OrtSession session = env.createSession(file.toString(), new OrtSession.SessionOptions());
        OnnxTensor in = OnnxTensor.createTensor(env, FloatBuffer.wrap(x.toFloatArray()),
            Arrays.stream(x.shape()).asLongStream().toArray());
        OrtSession.Result r = session.run(Map.of(Onnx.INPUT, in))) {
      FloatBuffer buf = ((OnnxTensor) r.get(0)).getFloatBuffer();
      float[] v = new float[buf.remaining()];
      buf.get(v);
      assertEquals(n, v.length);
      return v;
    }
  }
}
