package dev.ember.onnx;

import com.google.protobuf.ByteString;
import dev.ember.nn.Module;
import dev.ember.nn.quant.DynamicQuantizedLinear;
import dev.ember.onnx.proto.OnnxProto.AttributeProto;
import dev.ember.onnx.proto.OnnxProto.TensorProto;
import dev.ember.quant.QTensor;
import dev.ember.tensor.Tensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
    return m instanceof DynamicQuantizedLinear;
  }

  /** The nodes of layer {@code m} at path {@code at} on input {@code x} of rank {@code rank}; its output's name. */
  static String translate(Graph g, Module m, String at, String x, int rank) {
    if (m instanceof DynamicQuantizedLinear l) return dynamicLinear(g, at, x, l, rank);
    throw new IllegalArgumentException("QdqExport: " + m.getClass().getName() + " is not a quantized layer");
  }

  private static String dynamicLinear(Graph g, String at, String x, DynamicQuantizedLinear l, int rank) {
    QTensor w = l.weight();
    String wd = dequantizedWeight(g, at + ".weight", w);
    List<String> q = g.nodeOutputs("DynamicQuantizeLinear", at, List.of(x), 3);
    String xd = g.node("DequantizeLinear", at, q);
    Tensor bias = l.bias();
    String b = bias == null ? null : g.constantTensor(floats(at + ".bias", bias.toFloatArray(), l.outFeatures()));
    if (rank == 2) {
      return g.node("Gemm", at, b == null ? List.of(xd, wd) : List.of(xd, wd, b), intAttr("transB", 1));
    }
    String wt = g.node("Transpose", at, List.of(wd), intsAttr("perm", 1, 0));
    String y = g.node("MatMul", at, List.of(xd, wt));
    return b == null ? y : g.node("Add", at, List.of(y, b));
  }

  /**
   * The float weight of int8 {@code w} [rows, ...] quantized per row (axis 0): the int8 initializer {@code name},
   * {@code name_scale} and {@code name_zero_point}, and the DequantizeLinear node that reads them.
   */
  static String dequantizedWeight(Graph g, String name, QTensor w) {
    int[] shape = w.shape();
    long[] dims = new long[shape.length];
    for (int i = 0; i < shape.length; i++) dims[i] = shape[i];
    String q = g.constantTensor(int8s(name, w.bytes(), dims));
    float[] scales = w.params().scales();
    int[] zps = w.params().zeroPoints();
    byte[] z = new byte[zps.length];
    for (int i = 0; i < z.length; i++) z[i] = (byte) zps[i];
    String s = g.constantTensor(floats(name + "_scale", scales, scales.length));
    String zp = g.constantTensor(int8s(name + "_zero_point", z, new long[] {z.length}));
    return g.node("DequantizeLinear", name, List.of(q, s, zp), intAttr("axis", w.params().axis()));
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

  static AttributeProto intsAttr(String name, int... v) {
    AttributeProto.Builder a = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
    for (int x : v) a.addInts(x);
    return a.build();
  }
}
