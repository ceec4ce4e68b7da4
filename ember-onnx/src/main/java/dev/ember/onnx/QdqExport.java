package dev.ember.onnx;

import com.google.protobuf.ByteString;
import dev.ember.nn.Module;
import dev.ember.nn.quant.DynamicQuantizedLSTM;
import dev.ember.nn.quant.DynamicQuantizedLinear;
import dev.ember.nn.quant.QuantizedConv2d;
import dev.ember.nn.quant.QuantizedConvReLU2d;
import dev.ember.nn.quant.QuantizedLinear;
import dev.ember.nn.quant.QuantizedLinearReLU;
import dev.ember.quant.QDType;
import dev.ember.quant.QParams;
import dev.ember.onnx.proto.OnnxProto.AttributeProto;
import dev.ember.onnx.proto.OnnxProto.TensorProto;
import dev.ember.quant.QTensor;
import dev.ember.tensor.Tensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * ONNX translations of quantized layers in the QDQ form (ONNX's QuantizeLinear / DequantizeLinear pairs around float
 * ops, which runtimes such as ONNX Runtime fuse into integer kernels):
 *
 * <ul>
 *   <li>{@link DynamicQuantizedLinear}: the weight is an int8 initializer ({@code NAME.weight}, [out, in]) with its
 *       per-row scales ({@code NAME.weight_scale}) and int8 zero points ({@code NAME.weight_zero_point}, all 0)
 *       dequantized by {@code DequantizeLinear(axis=0)}; the input goes through {@code DynamicQuantizeLinear} (uint8,
 *       the range of this call's input, 0 included) and {@code DequantizeLinear}, then {@code Gemm} (2-d input) or
 *       {@code MatMul} and {@code Add} with the float32 bias. Ember quantizes the input to qint8 over the same range
 *       with the same scale, so its values are ONNX's minus 128 and the two products differ by float rounding only,
 *       plus one input quantum where the two round an element on opposite sides of a tie.</li>
 *   <li>{@link DynamicQuantizedLSTM}: one ONNX {@code LSTM} node per layer (both directions in it), its input
 *       through {@code DynamicQuantizeLinear} -&gt; {@code DequantizeLinear} (the whole sequence, as Ember quantizes
 *       it for the input projection), {@code W} and {@code R} int8 initializers ({@code NAME.l{k}/W}, rows in ONNX's
 *       gate order i, o, f, c, both directions stacked) with per-row {@code DequantizeLinear} and a Reshape to
 *       [directions, 4H, ...], {@code B} float32. The LSTM op multiplies the hidden state in float32, where Ember
 *       quantizes it per step: the weights and inputs are Ember's exactly, the outputs differ by the hidden state's
 *       quantization (about as much as Ember's from the float LSTM). Input must be 3-d.</li>
 *   <li>{@link QuantizedLinear} and {@link QuantizedConv2d} (static quantization) and their ReLU-fused forms: the
 *       input through {@code QuantizeLinear} -&gt; {@code DequantizeLinear} with the layer's calibrated input
 *       parameters (int8 or uint8 zero point, as its dtype), the weight as above (per row or per tensor), {@code
 *       Gemm} / {@code MatMul} + {@code Add} or {@code Conv} with the float32 bias, {@code Relu} when fused, and the
 *       result through {@code QuantizeLinear} -&gt; {@code DequantizeLinear} with the output parameters, so the
 *       output lies on the same int8 grid as Ember's. ONNX divides by the scale where Ember multiplies by its
 *       reciprocal, so a value on the edge of a rounding step can land one quantum away.</li>
 * </ul>
 *
 * <p>{@link Onnx} hands a layer here when {@link #handles} says so.
 */
final class QdqExport {
  private QdqExport() {}

  /** What the exporter gives a translation: nodes and initializers of the graph under construction. */
  interface Graph {
    /** Adds node {@code op} named after {@code at} and returns its (first) output's name. */
    String node(String op, String at, List<String> inputs, AttributeProto... attrs);

    /** Adds node {@code op} with {@code outputs} outputs, named after {@code at}, and returns their names. */
    List<String> nodeOutputs(String op, String at, List<String> inputs, int outputs, AttributeProto... attrs);

    /** Adds {@code t} as an initializer under its name, made unique, and returns that name. */
    String constantTensor(TensorProto t);
  }

  /** Whether {@code m} is a quantized layer this class translates. */
  static boolean handles(Module m) {
    return m instanceof DynamicQuantizedLinear || m instanceof DynamicQuantizedLSTM || m instanceof QuantizedLinear
        || m instanceof QuantizedConv2d;
  }

  /** The nodes of layer {@code m} at path {@code at} on input {@code x} of rank {@code rank}; its output's name. */
  static String translate(Graph g, Module m, String at, String x, int rank) {
    if (m instanceof DynamicQuantizedLinear l) return dynamicLinear(g, at, x, l, rank);
    if (m instanceof DynamicQuantizedLSTM l) return dynamicLstm(g, at, x, l, rank);
    if (m instanceof QuantizedLinear l) {
      String xd = qdq(g, at + ".input", x, l.inputQParams());
      String y = matmul(g, at, xd, dequantizedWeight(g, at + ".weight", l.weight()), l.bias(), l.outFeatures(), rank);
      if (l instanceof QuantizedLinearReLU) y = g.node("Relu", at, List.of(y));
      return qdq(g, at + ".output", y, l.outputQParams());
    }
    if (m instanceof QuantizedConv2d c) {
      String xd = qdq(g, at + ".input", x, c.inputQParams());
      String wd = dequantizedWeight(g, at + ".weight", c.weight());
      int[] k = {c.weight().shape()[2], c.weight().shape()[3]};
      int[] p = c.padding(); // top, bottom, left, right; ONNX: begins (top, left), then ends (bottom, right)
      List<String> in = c.bias() == null ? List.of(xd, wd)
          : List.of(xd, wd, g.constantTensor(floats(at + ".bias", c.bias().toFloatArray(), c.outChannels())));
      String y = g.node("Conv", at, in, intsAttr("kernel_shape", k), intsAttr("strides", c.stride()),
          intsAttr("dilations", c.dilation()), intsAttr("pads", p[0], p[2], p[1], p[3]), intAttr("group", c.groups()));
      if (c instanceof QuantizedConvReLU2d) y = g.node("Relu", at, List.of(y));
      return qdq(g, at + ".output", y, c.outputQParams());
    }
    throw new IllegalArgumentException("QdqExport: " + m.getClass().getName() + " is not a quantized layer");
  }

  private static String dynamicLinear(Graph g, String at, String x, DynamicQuantizedLinear l, int rank) {
    QTensor w = l.weight();
    String wd = dequantizedWeight(g, at + ".weight", w);
    List<String> q = g.nodeOutputs("DynamicQuantizeLinear", at, List.of(x), 3);
    String xd = g.node("DequantizeLinear", at, q);
    return matmul(g, at, xd, wd, l.bias(), l.outFeatures(), rank);
  }

  private static String dynamicLstm(Graph g, String at, String x, DynamicQuantizedLSTM l, int rank) {
    if (rank != 3) {
      throw new OnnxExportException("Onnx.export: layer '" + at + "' (" + l.getClass().getName() + ") got a " + rank
          + "-d input; export supports batched 3-d inputs");
    }
    int[] order = {0, 3, 1, 2}; // PyTorch's i f g o rows to ONNX's i o f c
    int hs = l.hiddenSize();
    int dirs = l.bidirectional() ? 2 : 1;
    String y = l.batchFirst() ? g.node("Transpose", at, List.of(x), intsAttr("perm", 1, 0, 2)) : x; // [T, N, in]
    for (int layer = 0; layer < l.numLayers(); layer++) {
      String pre = at + ".l" + layer;
      List<String> q = g.nodeOutputs("DynamicQuantizeLinear", pre, List.of(y), 3);
      String xd = g.node("DequantizeLinear", pre, q);
      List<QTensor> w = new ArrayList<>();
      List<QTensor> r = new ArrayList<>();
      List<float[]> b = new ArrayList<>();
      for (int d = 0; d < dirs; d++) {
        String sfx = "_l" + layer + (d == 1 ? "_reverse" : "");
        w.add(l.weight("weight_ih" + sfx));
        r.add(l.weight("weight_hh" + sfx));
        if (l.hasBias()) {
          b.add(gateRows(l.buffer("bias_ih" + sfx).toFloatArray(), order, hs, 1));
          b.add(gateRows(l.buffer("bias_hh" + sfx).toFloatArray(), order, hs, 1));
        }
      }
      List<String> inputs = new ArrayList<>(List.of(xd, stackedWeight(g, pre + "/W", w, order, hs, dirs),
          stackedWeight(g, pre + "/R", r, order, hs, dirs)));
      if (l.hasBias()) {
        float[] all = new float[dirs * 8 * hs];
        for (int i = 0; i < b.size(); i++) System.arraycopy(b.get(i), 0, all, i * 4 * hs, 4 * hs);
        inputs.add(g.constantTensor(floats(pre + "/B", all, dirs, 8L * hs)));
      }
      String out = g.node("LSTM", at, inputs, intAttr("hidden_size", hs), stringAttr("direction",
          dirs == 2 ? "bidirectional" : "forward")); // [T, dirs, N, H]
      String t = g.node("Transpose", at, List.of(out), intsAttr("perm", 0, 2, 1, 3));
      ByteBuffer shape = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN).putLong(0).putLong(0).putLong(-1);
      String s = g.constantTensor(TensorProto.newBuilder().setName(at + "/shape")
          .setDataType(TensorProto.DataType.INT64_VALUE).addDims(3).setRawData(ByteString.copyFrom(shape.array()))
          .build());
      y = g.node("Reshape", at, List.of(t, s)); // [T, N, dirs H]
    }
    return l.batchFirst() ? g.node("Transpose", at, List.of(y), intsAttr("perm", 1, 0, 2)) : y;
  }

  /**
   * The int8 weights {@code ws} (one per direction, [4H, cols], per-row scales) with their rows in ONNX's gate
   * order, stacked into one int8 initializer [dirs * 4H, cols] with per-row DequantizeLinear, reshaped to
   * [dirs, 4H, cols].
   */
  private static String stackedWeight(Graph g, String name, List<QTensor> ws, int[] order, int hs, int dirs) {
    int cols = ws.get(0).shape()[1];
    byte[] q = new byte[dirs * 4 * hs * cols];
    float[] scales = new float[dirs * 4 * hs];
    for (int d = 0; d < dirs; d++) {
      QTensor w = ws.get(d);
      System.arraycopy(gateRows(w.bytes(), order, hs, cols), 0, q, d * 4 * hs * cols, 4 * hs * cols);
      System.arraycopy(gateRows(w.params().scales(), order, hs, 1), 0, scales, d * 4 * hs, 4 * hs);
    }
    String qi = g.constantTensor(int8s(name, q, new long[] {dirs * 4L * hs, cols}));
    String s = g.constantTensor(floats(name + "_scale", scales, scales.length));
    String z = g.constantTensor(zeroPoints(name + "_zero_point", QDType.QINT8, new int[scales.length], true));
    String wd = g.node("DequantizeLinear", name, List.of(qi, s, z), intAttr("axis", 0));
    ByteBuffer shape = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN).putLong(dirs).putLong(4L * hs)
        .putLong(cols);
    String sh = g.constantTensor(TensorProto.newBuilder().setName(name + "_shape")
        .setDataType(TensorProto.DataType.INT64_VALUE).addDims(3).setRawData(ByteString.copyFrom(shape.array()))
        .build());
    return g.node("Reshape", name, List.of(wd, sh));
  }

  /** The four gate blocks of {@code v} ({@code hs} rows of {@code cols} each) in the order {@code order}. */
  private static byte[] gateRows(byte[] v, int[] order, int hs, int cols) {
    byte[] out = new byte[v.length];
    int block = hs * cols;
    for (int j = 0; j < order.length; j++) System.arraycopy(v, order[j] * block, out, j * block, block);
    return out;
  }

  private static float[] gateRows(float[] v, int[] order, int hs, int cols) {
    float[] out = new float[v.length];
    int block = hs * cols;
    for (int j = 0; j < order.length; j++) System.arraycopy(v, order[j] * block, out, j * block, block);
    return out;
  }

  /** {@code x W^T + b} in float: Gemm for a 2-d x, else MatMul with the transposed weight and Add. */
  private static String matmul(Graph g, String at, String xd, String wd, Tensor bias, int out, int rank) {
    String b = bias == null ? null : g.constantTensor(floats(at + ".bias", bias.toFloatArray(), out));
    if (rank == 2) {
      return g.node("Gemm", at, b == null ? List.of(xd, wd) : List.of(xd, wd, b), intAttr("transB", 1));
    }
    String wt = g.node("Transpose", at, List.of(wd), intsAttr("perm", 1, 0));
    String y = g.node("MatMul", at, List.of(xd, wt));
    return b == null ? y : g.node("Add", at, List.of(y, b));
  }

  /**
   * {@code x} quantized with per-tensor parameters {@code p} and dequantized (QuantizeLinear -&gt; DequantizeLinear),
   * the scale and zero point initializers named {@code name_scale} and {@code name_zero_point}.
   */
  private static String qdq(Graph g, String name, String x, QParams p) {
    String s = g.constantTensor(floats(name + "_scale", new float[] {p.scales()[0]}));
    String z = g.constantTensor(zeroPoints(name + "_zero_point", p.dtype(), new int[] {p.zeroPoints()[0]}, false));
    String q = g.node("QuantizeLinear", name, List.of(x, s, z));
    return g.node("DequantizeLinear", name, List.of(q, s, z));
  }

  /** Zero points as ONNX INT8 (qint8) or UINT8 (quint8): 1-d when {@code perAxis}, else a scalar. */
  private static TensorProto zeroPoints(String name, QDType dtype, int[] z, boolean perAxis) {
    byte[] b = new byte[z.length];
    for (int i = 0; i < z.length; i++) b[i] = (byte) z[i];
    TensorProto.Builder t = TensorProto.newBuilder().setName(name).setRawData(ByteString.copyFrom(b))
        .setDataType(dtype == QDType.QUINT8 ? TensorProto.DataType.UINT8_VALUE : TensorProto.DataType.INT8_VALUE);
    if (perAxis) t.addDims(z.length);
    return t.build();
  }

  /**
   * The float weight of int8 {@code w} [rows, ...] quantized per row (axis 0) or per tensor: the int8 initializer
   * {@code name}, {@code name_scale} and {@code name_zero_point} (1-d per row, scalars per tensor), and the
   * DequantizeLinear node that reads them.
   */
  static String dequantizedWeight(Graph g, String name, QTensor w) {
    int[] shape = w.shape();
    long[] dims = new long[shape.length];
    for (int i = 0; i < shape.length; i++) dims[i] = shape[i];
    String q = g.constantTensor(int8s(name, w.bytes(), dims));
    QParams p = w.params();
    float[] scales = p.scales();
    String s = g.constantTensor(p.perChannel() ? floats(name + "_scale", scales, scales.length)
        : floats(name + "_scale", scales));
    String zp = g.constantTensor(zeroPoints(name + "_zero_point", p.dtype(), p.zeroPoints(), p.perChannel()));
    if (!p.perChannel()) return g.node("DequantizeLinear", name, List.of(q, s, zp));
    return g.node("DequantizeLinear", name, List.of(q, s, zp), intAttr("axis", p.axis()));
  }

  static TensorProto int8s(String name, byte[] values, long[] dims) {
    TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(TensorProto.DataType.INT8_VALUE)
        .setRawData(ByteString.copyFrom(values));
    for (long d : dims) t.addDims(d);
    return t.build();
  }

  static TensorProto floats(String name, float[] values, long... dims) {
    ByteBuffer buf = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
    for (float v : values) buf.putFloat(v);
    TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(TensorProto.DataType.FLOAT_VALUE)
        .setRawData(ByteString.copyFrom(buf.array()));
    for (long d : dims) t.addDims(d);
    return t.build();
  }

  static AttributeProto intAttr(String name, long v) {
    return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INT).setI(v).build();
  }

  static AttributeProto stringAttr(String name, String v) {
    return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.STRING)
        .setS(ByteString.copyFromUtf8(v)).build();
  }

  static AttributeProto intsAttr(String name, int... v) {
    AttributeProto.Builder a = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
    for (int x : v) a.addInts(x);
    return a.build();
  }
}
