package dev.ember.onnx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import dev.ember.autograd.Grad;
import dev.ember.nn.Conv2d;
import dev.ember.nn.ConvReLU2d;
import dev.ember.nn.Flatten;
import dev.ember.nn.LSTM;
import dev.ember.nn.Linear;
import dev.ember.nn.LinearReLU;
import dev.ember.nn.MaxPool2d;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.quant.DynamicQuantizedLinear;
import dev.ember.nn.quant.QConfig;
import dev.ember.nn.quant.QuantizedConv2d;
import dev.ember.nn.quant.QuantizedConvReLU2d;
import dev.ember.nn.quant.QuantizedLinear;
import dev.ember.nn.quant.QuantizedLinearReLU;
import dev.ember.nn.quant.Quantize;
import dev.ember.quant.MinMaxObserver;
import dev.ember.quant.QDType;
import dev.ember.quant.QParams;
import dev.ember.quant.QScheme;
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

  /** Conv+ReLU, pool, a strided, padded, dilated, grouped conv, ReLU, flatten, Linear+ReLU, Linear. */
  private static Sequential convNet(Generator g) {
    return new Sequential(
        new ConvReLU2d(new Conv2d(2, 4, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1, true,
            "zeros", g)),
        new MaxPool2d(2),
        new Conv2d(4, 6, new int[] {3, 2}, new int[] {2, 1}, new int[] {1, 0}, new int[] {1, 2}, 2, true, "zeros", g),
        new ReLU(),
        new Flatten(),
        new LinearReLU(new Linear(6 * 2 * 2, 12, true, g)),
        new Linear(12, 5, true, g));
  }

  private static Module staticQuantized(Module model, QConfig qc, Generator g, int... inputShape) {
    Module p = Quantize.prepare(model, qc);
    for (int i = 0; i < 4; i++) p.call(Tensor.randn(g, inputShape));
    return Quantize.convert(p);
  }

  /**
   * Exports, runs ORT on {@code x} and checks its output against Ember's: on the last layer's output grid, and within
   * one quantum of it. Returns how many values are exactly equal.
   */
  private int staticRoundTrip(Module q, Tensor x, QParams out) throws Exception {
    Path file = dir.resolve("static" + System.nanoTime() + ".onnx");
    Onnx.export(q, x, file);
    float[] want = q.call(x).toFloatArray();
    float[] got = ort(file, x, want.length);
    float s = out.scales()[0];
    int equal = 0;
    for (int i = 0; i < want.length; i++) {
      assertEquals(want[i], got[i], s * (1 + 1e-5), "element " + i);
      double steps = got[i] / s + out.zeroPoints()[0];
      assertEquals(Math.rint(steps), steps, 1e-3, "ORT's element " + i + " is on the output grid");
      if (want[i] == got[i]) equal++;
    }
    return equal;
  }

  @Test
  void onnxRuntimeRunsAStaticQuantizedConvNetOnEmbersOutputGrid() throws Exception {
    Generator g = new Generator(5);
    Sequential q = (Sequential) staticQuantized(convNet(g), QConfig.ptqDefault(), g, 8, 2, 8, 8);
    assertInstanceOf(QuantizedConvReLU2d.class, q.get(0));
    assertInstanceOf(QuantizedConv2d.class, q.get(2));
    assertInstanceOf(QuantizedLinearReLU.class, q.get(5));
    QuantizedLinear last = (QuantizedLinear) q.get(6);
    List<String> ops = Onnx.toModelProto(q, Tensor.randn(g, 2, 2, 8, 8)).getGraph().getNodeList().stream()
        .map(NodeProto::getOpType).toList();
    assertEquals(8, ops.stream().filter(o -> o.equals("QuantizeLinear")).count());  // input and output of 4 layers
    for (int b : new int[] {2, 7}) {
      Tensor x = Tensor.randn(g, b, 2, 8, 8);
      int equal = staticRoundTrip(q, x, last.outputQParams());
      // every value equal here (10 of 10, 35 of 35); the one-quantum bound only allows for ORT's x / scale and
      // Ember's x * (1 / scale) rounding a value on a step's edge differently
      assertEquals(b * 5, equal, equal + " of " + b * 5 + " values equal");
    }
  }

  @Test
  void perTensorWeightsAndQint8ActivationsExportToo() throws Exception {
    Generator g = new Generator(6);
    QConfig qc = new QConfig(() -> new MinMaxObserver(QScheme.perTensorAffine(QDType.QINT8), false),
        () -> new MinMaxObserver(QScheme.perTensorSymmetric(QDType.QINT8), false));
    Sequential q = (Sequential) staticQuantized(new Sequential(new LinearReLU(new Linear(10, 8, true, g)),
        new Linear(8, 1, false, g)), qc, g, 6, 10);
    QuantizedLinear last = (QuantizedLinear) q.get(1);
    assertEquals(QDType.QINT8, last.outputQParams().dtype());
    assertEquals(-1, last.weight().params().axis());
    ModelProto m = Onnx.toModelProto(q, Tensor.randn(g, 2, 10));
    assertEquals(0, init(m, "1.weight_scale").getDimsCount());  // per tensor: a scalar scale
    assertEquals(TensorProto.DataType.INT8_VALUE, init(m, "0.input_zero_point").getDataType());
    int equal = staticRoundTrip(q, Tensor.randn(g, 9, 10), last.outputQParams());
    assertEquals(9, equal, equal + " of 9 values equal");
    // a 3-d input goes through MatMul + Add instead of Gemm
    Sequential q3 = (Sequential) staticQuantized(new Sequential(new Linear(10, 4, true, g)), QConfig.ptqDefault(), g,
        6, 10);
    staticRoundTrip(q3, Tensor.randn(g, 3, 5, 10), ((QuantizedLinear) q3.get(0)).outputQParams());
  }

  /**
   * A dynamically quantized LSTM: ONNX's LSTM op runs on Ember's int8 weights and quantized inputs but keeps the
   * hidden state in float32, where Ember quantizes it per step; the gap is about that quantization's effect.
   */
  @Test
  void onnxRuntimeRunsADynamicQuantizedLstmWithEmbersWeights() throws Exception {
    Generator g = new Generator(7);
    Sequential model = new Sequential(new LSTM(6, 8, 2, true, true, 0, true, g), new Linear(16, 3, true, g));
    Sequential f32 = new Sequential(new LSTM(6, 8, 2, true, true, 0, true, new Generator(7)), new Linear(16, 3, true,
        new Generator(7)));
    f32.loadStateDict(model.stateDict());
    Quantize.dynamic(model);
    Path file = dir.resolve("lstm.onnx");
    Onnx.export(model, Tensor.randn(g, 3, 5, 6), file);
    List<String> ops = Onnx.toModelProto(model, Tensor.randn(g, 3, 5, 6)).getGraph().getNodeList().stream()
        .map(NodeProto::getOpType).toList();
    assertEquals(2, ops.stream().filter(o -> o.equals("LSTM")).count());
    assertEquals(3, ops.stream().filter(o -> o.equals("DynamicQuantizeLinear")).count());  // 2 LSTM layers, the Linear
    for (int b : new int[] {2, 6}) {
      Tensor x = Tensor.randn(g, b, 5, 6);
      float[] want = model.call(x).toFloatArray();
      float[] ref;
      try (var off = Grad.off()) {
        ref = f32.call(x).toFloatArray();
      }
      float[] got = ort(file, x, want.length);
      double vsEmber = 0;
      double emberVsF32 = 0;
      double range = 0;
      for (int i = 0; i < want.length; i++) {
        vsEmber = Math.max(vsEmber, Math.abs(got[i] - want[i]));
        emberVsF32 = Math.max(emberVsF32, Math.abs(ref[i] - want[i]));
        range = Math.max(range, Math.abs(want[i]));
      }
      // measured: 5e-4 from Ember (outputs up to 0.28), Ember 7e-4 and 1.5e-3 from the float model
      assertTrue(vsEmber <= 0.005 * range && vsEmber <= 2 * emberVsF32, "ORT vs Ember " + vsEmber + ", Ember vs float " + emberVsF32);
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
