package dev.ember.onnx;

import com.google.protobuf.ByteString;
import dev.ember.autograd.Grad;
import dev.ember.nn.AvgPool2d;
import dev.ember.nn.BatchNorm1d;
import dev.ember.nn.BatchNorm2d;
import dev.ember.nn.BatchNormBase;
import dev.ember.nn.Conv1d;
import dev.ember.nn.Conv2d;
import dev.ember.nn.ConvTranspose2d;
import dev.ember.nn.Dropout;
import dev.ember.nn.Dropout2d;
import dev.ember.nn.Embedding;
import dev.ember.nn.Flatten;
import dev.ember.nn.ForwardHook;
import dev.ember.nn.GELU;
import dev.ember.nn.GRU;
import dev.ember.nn.LSTM;
import dev.ember.nn.HookHandle;
import dev.ember.nn.Identity;
import dev.ember.nn.LayerNorm;
import dev.ember.nn.Linear;
import dev.ember.nn.LogSoftmax;
import dev.ember.nn.MaxPool2d;
import dev.ember.nn.Module;
import dev.ember.nn.RNN;
import dev.ember.nn.RNNBase;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.SiLU;
import dev.ember.nn.Sigmoid;
import dev.ember.nn.Softmax;
import dev.ember.nn.Tanh;
import dev.ember.onnx.proto.OnnxProto.AttributeProto;
import dev.ember.onnx.proto.OnnxProto.GraphProto;
import dev.ember.onnx.proto.OnnxProto.ModelProto;
import dev.ember.onnx.proto.OnnxProto.NodeProto;
import dev.ember.onnx.proto.OnnxProto.OperatorSetIdProto;
import dev.ember.onnx.proto.OnnxProto.TensorProto;
import dev.ember.onnx.proto.OnnxProto.TensorShapeProto;
import dev.ember.onnx.proto.OnnxProto.TypeProto;
import dev.ember.onnx.proto.OnnxProto.ValueInfoProto;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Exports a model to ONNX (PyTorch's {@code torch.onnx.export}): the model runs once on an example input,
 * in eval mode and without recording gradients, and every layer call it makes becomes ONNX nodes, so
 * composite modules with their own {@code forward} (LeNet-5's features then classifier) export as long as
 * they only chain their layers. The graph has one input, {@value #INPUT}, and one output, {@value #OUTPUT},
 * float32 (half and float64 models export float32 weights) with a dynamic first (batch) dimension named {@value #BATCH}; weights and running statistics
 * are initializers named by their state dict keys.
 *
 * <p>Layers: Linear; ReLU, Sigmoid, Tanh, GELU (exact or tanh), SiLU; Softmax, LogSoftmax; Flatten;
 * Dropout and Identity (identity in eval mode); Conv1d and Conv2d (padding sizes or 'same'/'valid',
 * strides, dilations, groups, zeros/reflect/replicate padding modes); ConvTranspose2d; MaxPool2d and AvgPool2d (ceil mode,
 * count_include_pad, divisor_override); BatchNorm1d/2d (running statistics); LayerNorm; Embedding (without
 * max_norm; the input is then int64 or int32 indices); RNN (tanh/relu), LSTM and GRU (3-d input, any layers, bidirectional;
 * their weights become initializers with ONNX's gate order). The dynamic first dimension is the batch,
 * except before a sequence-first ({@code batchFirst=false}) recurrent layer, where it is the sequence.
 * Quantized layers export in the QDQ form (int8 weights with DequantizeLinear, see {@link QdqExport}):
 * DynamicQuantizedLinear, DynamicQuantizedLSTM, QuantizedLinear(ReLU) and QuantizedConv(ReLU)2d.
 * Anything else fails with an {@link OnnxExportException} naming the layer's path and class.
 */
public final class Onnx {
  /** The ONNX operator set the exported models import. */
  public static final int OPSET = 17;
  /** The IR version of opset 17 (ONNX 1.12). */
  public static final long IR_VERSION = 8;
  public static final String INPUT = "input";
  public static final String OUTPUT = "output";
  public static final String BATCH = "batch";

  private Onnx() {}

  /**
   * Writes {@code model} as an ONNX file at {@code path}, atomically: to a temporary file in the same
   * folder, then renamed over {@code path}, so a reader never sees a partial model.
   */
  public static void export(Module model, Tensor exampleInput, Path path) throws IOException {
    byte[] bytes = toModelProto(model, exampleInput).toByteArray();
    Path abs = path.toAbsolutePath();
    Path dir = abs.getParent();
    if (dir != null) Files.createDirectories(dir);
    Path tmp = Files.createTempFile(dir, abs.getFileName().toString(), ".tmp");
    try {
      Files.write(tmp, bytes);
      try {
        Files.move(tmp, abs, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING);
      }
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /** The ONNX model of {@code model} traced on {@code exampleInput} (see the class comment). */
  public static ModelProto toModelProto(Module model, Tensor exampleInput) {
    if (model == null || exampleInput == null) {
      throw new IllegalArgumentException("Onnx.export: model and example input must not be null");
    }
    DType dt = exampleInput.dtype();
    if (!dt.isFloatingPoint() && dt != DType.I64 && dt != DType.I32) {
      throw new IllegalArgumentException("Onnx.export: the example input must be floating point (or int64/int32 "
          + "indices for an Embedding), got " + dt + " " + Arrays.toString(exampleInput.shape()));
    }
    if (exampleInput.dim() == 0) {
      throw new IllegalArgumentException("Onnx.export: the example input needs a batch dimension, got a scalar");
    }
    Tracer tracer = new Tracer(model);
    GraphProto graph = tracer.trace(exampleInput);
    return ModelProto.newBuilder()
        .setIrVersion(IR_VERSION)
        .setProducerName("ember")
        .setProducerVersion("0.1.0")
        .addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("").setVersion(OPSET))
        .setGraph(graph)
        .build();
  }

  /** Runs the model with a hook on every module and turns each layer call into nodes. */
  private static final class Tracer implements QdqExport.Graph {
    private final Module model;
    private final Map<Module, String> paths = new IdentityHashMap<>();
    private final Map<Tensor, String> names = new IdentityHashMap<>();
    private final Set<String> usedNames = new HashSet<>();
    private final Set<String> initializers = new HashSet<>();
    private final Deque<Module> stack = new ArrayDeque<>();
    private final GraphProto.Builder graph = GraphProto.newBuilder();
    private Module activeLayer;

    Tracer(Module model) {
      this.model = model;
      for (var e : model.namedModules().entrySet()) paths.put(e.getValue(), e.getKey());
    }

    GraphProto trace(Tensor x) {
      Map<Module, Boolean> modes = new IdentityHashMap<>();
      List<Module> all = model.modules();
      for (Module m : all) modes.put(m, m.isTraining());
      List<HookHandle> hooks = new ArrayList<>();
      ForwardHook hook = new ForwardHook() {
        @Override
        public void beforeForward(Module m, List<Tensor> inputs) {
          before(m, inputs);
        }

        @Override
        public void afterForward(Module m, List<Tensor> inputs, Tensor output) {
          after(m, inputs, output);
        }
      };
      Tensor out;
      model.eval();
      try (Grad g = Grad.off()) {
        for (Module m : all) hooks.add(m.registerForwardHook(hook));
        names.put(x, INPUT);
        usedNames.add(INPUT);
        out = model.call(x);
      } finally {
        for (HookHandle h : hooks) h.remove();
        for (Module m : all) m.train(modes.get(m)); // pre-order: a parent's train(mode) is then corrected below it
      }
      String last = names.get(out);
      if (last == null) {
        throw new OnnxExportException("Onnx.export: the output of " + describe(model)
            + " is computed with tensor ops outside its layers, which export cannot follow");
      }
      graph.addNode(NodeProto.newBuilder().setOpType("Identity").addInput(last).addOutput(OUTPUT).setName(OUTPUT));
      graph.setName(model.name());
      graph.addInput(valueInfo(INPUT, x.shape(), true, elemType(x.dtype())));
      graph.addOutput(valueInfo(OUTPUT, out.shape(), out.dim() > 0 && out.size(0) == x.size(0),
          elemType(out.dtype())));
      return graph.build();
    }

    private void before(Module m, List<Tensor> inputs) {
      stack.push(m);
      if (activeLayer != null || !isLayer(m)) return;
      activeLayer = m;
      if (inputs.size() != 1) {
        throw new OnnxExportException("Onnx.export: layer " + describe(m) + " takes " + inputs.size()
            + " inputs; export supports layers of one tensor");
      }
      if (names.get(inputs.get(0)) == null) {
        Module parent = stack.size() > 1 ? stack.stream().skip(1).findFirst().orElseThrow() : m;
        throw new OnnxExportException("Onnx.export: the input of layer " + describe(m)
            + " is neither the model input nor a layer's output: " + describe(parent)
            + " computes on tensors between its layers, which export cannot follow");
      }
      translatable(m);
    }

    private void after(Module m, List<Tensor> inputs, Tensor output) {
      stack.pop();
      if (activeLayer != m) return;
      activeLayer = null;
      names.put(output, translate(m, inputs.get(0), output));
    }

    /** Ember's public layers (and any other module without children) are translated; the rest traced through. */
    private static boolean isLayer(Module m) {
      if (m instanceof Sequential) return false;
      Class<?> c = m.getClass();
      boolean library = c.getPackageName().equals("dev.ember.nn") && Modifier.isPublic(c.getModifiers());
      return library || m.namedChildren().isEmpty();
    }

    private void translatable(Module m) {
      if (QdqExport.handles(m)) return;
      boolean known = m instanceof Linear || m instanceof ReLU || m instanceof Sigmoid || m instanceof Tanh
          || m instanceof GELU || m instanceof SiLU || m instanceof Softmax || m instanceof LogSoftmax
          || m instanceof Flatten || m instanceof Dropout || m instanceof Dropout2d || m instanceof Identity || m instanceof Conv1d
          || m instanceof Conv2d || m instanceof MaxPool2d || m instanceof AvgPool2d || m instanceof BatchNorm1d
          || m instanceof BatchNorm2d || m instanceof LayerNorm || m instanceof Embedding || m instanceof LSTM
          || m instanceof GRU || m instanceof RNN || m instanceof ConvTranspose2d;
      if (!known) {
        throw new OnnxExportException("Onnx.export: layer " + describe(m) + " has no ONNX translation (supported: "
            + "Linear, ReLU, Sigmoid, Tanh, GELU, SiLU, Softmax, LogSoftmax, Flatten, Dropout, Identity, Conv1d, "
            + "Conv2d, MaxPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, LayerNorm, Embedding, LSTM, GRU, RNN, ConvTranspose2d)");
      }
    }

    private String describe(Module m) {
      String p = paths.get(m);
      return "'" + (p == null || p.isEmpty() ? "<root>" : p) + "' (" + m.getClass().getName() + ")";
    }

    private String translate(Module m, Tensor input, Tensor output) {
      String x = names.get(input);
      String p = paths.get(m);
      String at = p == null || p.isEmpty() ? m.name() : p;
      int rank = input.dim();
      if (QdqExport.handles(m)) return QdqExport.translate(this, m, at, x, rank);
      if (m instanceof Linear l) return linear(at, x, l, rank);
      if (m instanceof ReLU) return node("Relu", at, x);
      if (m instanceof Sigmoid) return node("Sigmoid", at, x);
      if (m instanceof Tanh) return node("Tanh", at, x);
      if (m instanceof SiLU) return node("Mul", at, x, node("Sigmoid", at, x));
      if (m instanceof GELU g) return gelu(at, x, g.tanhApproximation());
      if (m instanceof Softmax s) return node("Softmax", at, List.of(x), intAttr("axis", s.dim()));
      if (m instanceof LogSoftmax s) return node("LogSoftmax", at, List.of(x), intAttr("axis", s.dim()));
      if (m instanceof Flatten f) return flatten(at, x, f, input.shape());
      if (m instanceof Dropout || m instanceof Dropout2d || m instanceof Identity) return node("Identity", at, x);
      if (m instanceof Conv2d c) {
        return conv(m, at, x, c.weight(), c.bias(), c.kernelSize(), c.stride(), c.padding(), c.paddingString(),
            c.dilation(), c.groups(), c.paddingMode());
      }
      if (m instanceof Conv1d c) {
        return conv(m, at, x, c.weight(), c.bias(), c.kernelSize(), c.stride(), c.padding(), c.paddingString(),
            c.dilation(), c.groups(), c.paddingMode());
      }
      if (m instanceof MaxPool2d mp) return maxPool(at, x, mp);
      if (m instanceof AvgPool2d ap) return avgPool(m, at, x, ap, input, output);
      if (m instanceof BatchNormBase bn) return batchNorm(m, at, x, bn);
      if (m instanceof LayerNorm ln) return layerNorm(at, x, ln);
      if (m instanceof Embedding e) return embedding(m, at, x, e);
      if (m instanceof LSTM || m instanceof GRU || m instanceof RNN) return recurrent(m, at, x, (RNNBase) m, rank);
      if (m instanceof ConvTranspose2d c) {
        int[] p2 = c.padding();
        String w = initializer(at + ".weight", c.weight());
        List<String> in = c.bias() == null ? List.of(x, w) : List.of(x, w, initializer(at + ".bias", c.bias()));
        return node("ConvTranspose", at, in, intsAttr("kernel_shape", c.kernelSize()), intsAttr("strides", c.stride()),
            intsAttr("dilations", c.dilation()), intsAttr("pads", p2[0], p2[1], p2[0], p2[1]),
            intsAttr("output_padding", c.outputPadding()), intAttr("group", c.groups()));
      }
      throw new OnnxExportException("Onnx.export: layer " + describe(m) + " has no ONNX translation");
    }

    private String linear(String at, String x, Linear l, int rank) {
      String w = initializer(at + ".weight", l.weight());
      String b = l.bias() == null ? null : initializer(at + ".bias", l.bias());
      if (rank == 2) {
        List<String> in = b == null ? List.of(x, w) : List.of(x, w, b);
        return node("Gemm", at, in, intAttr("transB", 1));
      }
      String wt = node("Transpose", at, List.of(w), intsAttr("perm", 1, 0));
      String y = node("MatMul", at, x, wt);
      return b == null ? y : node("Add", at, y, b);
    }

    private String gelu(String at, String x, boolean tanh) {
      String half = constant(at + "/half", 0.5f);
      String one = constant(at + "/one", 1f);
      String inner;
      if (tanh) {
        // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        String cube = node("Mul", at, x, node("Mul", at, x, x));
        String sum = node("Add", at, x, node("Mul", at, cube, constant(at + "/coef", 0.044715f)));
        inner = node("Tanh", at, node("Mul", at, sum, constant(at + "/sqrt_2_over_pi", (float) Math.sqrt(2 / Math.PI))));
      } else {
        // 0.5 x (1 + erf(x / sqrt 2))
        inner = node("Erf", at, node("Mul", at, x, constant(at + "/inv_sqrt2", (float) (1 / Math.sqrt(2)))));
      }
      return node("Mul", at, node("Mul", at, x, half), node("Add", at, inner, one));
    }

    private String flatten(String at, String x, Flatten f, int[] shape) {
      int r = shape.length;
      int s = f.startDim() < 0 ? f.startDim() + r : f.startDim();
      int e = f.endDim() < 0 ? f.endDim() + r : f.endDim();
      if (r == 0 || s >= e) return node("Identity", at, x);
      if (s == 1 && e == r - 1) return node("Flatten", at, List.of(x), intAttr("axis", 1));
      // dims before start copied (0), the flattened run inferred (-1), the dims after it as traced
      long[] target = new long[s + 1 + (r - 1 - e)];
      for (int i = 0; i < s; i++) target[i] = 0;
      target[s] = -1;
      for (int i = e + 1; i < r; i++) target[s + 1 + i - e - 1] = shape[i];
      return node("Reshape", at, x, constantLongs(at + "/shape", target));
    }

    private String conv(Module m, String at, String x, Tensor weight, Tensor bias, int[] k, int[] stride, int[] pad,
        String padString, int[] dilation, int groups, String mode) {
      int nd = k.length;
      long[] pads = new long[2 * nd];
      if ("same".equals(padString)) {
        // PyTorch's 'same': the odd pixel of the total padding goes after (right/bottom)
        for (int i = 0; i < nd; i++) {
          int total = dilation[i] * (k[i] - 1);
          pads[i] = total / 2;
          pads[nd + i] = total - total / 2;
        }
      } else if (padString == null) {
        for (int i = 0; i < nd; i++) {
          pads[i] = pad[i];
          pads[nd + i] = pad[i];
        }
      }
      if (!mode.equals("zeros") && Arrays.stream(pads).anyMatch(v -> v != 0)) {
        if (mode.equals("circular")) {
          throw new OnnxExportException("Onnx.export: layer " + describe(m) + " uses padding_mode='circular', which "
              + "needs ONNX Pad mode 'wrap' (opset 19); opset " + OPSET + " cannot express it");
        }
        // pad first with Pad (reflect or edge), then convolve unpadded
        long[] padPads = new long[2 * (nd + 2)];
        for (int i = 0; i < nd; i++) {
          padPads[2 + i] = pads[i];
          padPads[nd + 2 + 2 + i] = pads[nd + i];
        }
        x = node("Pad", at, List.of(x, constantLongs(at + "/pads", padPads)),
            stringAttr("mode", mode.equals("reflect") ? "reflect" : "edge"));
        pads = new long[2 * nd];
      }
      String w = initializer(at + ".weight", weight);
      List<String> in = bias == null ? List.of(x, w) : List.of(x, w, initializer(at + ".bias", bias));
      return node("Conv", at, in, intsAttr("kernel_shape", k), intsAttr("strides", stride),
          intsAttr("dilations", dilation), longsAttr("pads", pads), intAttr("group", groups));
    }

    private String maxPool(String at, String x, MaxPool2d mp) {
      int[] pad = two(mp.padding());
      return node("MaxPool", at, List.of(x), intsAttr("kernel_shape", two(mp.kernelSize())),
          intsAttr("strides", two(mp.stride())), intsAttr("pads", pad[0], pad[1], pad[0], pad[1]),
          intsAttr("dilations", two(mp.dilation())), intAttr("ceil_mode", mp.ceilMode() ? 1 : 0));
    }

    private String avgPool(Module m, String at, String x, AvgPool2d ap, Tensor in, Tensor out) {
      int[] pad = two(ap.padding());
      int[] k = two(ap.kernelSize());
      int[] s = two(ap.stride());
      Integer divisor = ap.divisorOverride();
      if (!ap.ceilMode()) {
        // every window lies inside the padded input: ONNX's divisors are PyTorch's
        boolean includePad = divisor != null || ap.countIncludePad();
        String y = node("AveragePool", at, List.of(x), intsAttr("kernel_shape", k), intsAttr("strides", s),
            intsAttr("pads", pad[0], pad[1], pad[0], pad[1]), intAttr("count_include_pad", includePad ? 1 : 0));
        if (divisor == null) return y;
        return node("Mul", at, y, constant(at + "/divisor_scale", (float) ((double) k[0] * k[1] / divisor)));
      }
      // Ceil mode: the last windows run past the padded input, and PyTorch divides them by their part inside
      // it (or inside the input, without count_include_pad), which ONNX AveragePool does not reproduce. So:
      // zero-pad until every window is whole, take window means (sum / k0 k1), keep the traced output size,
      // and rescale each position by k0 k1 / (PyTorch's divisor there), a constant of the traced shapes.
      int[] size = {in.size(2), in.size(3)};
      int[] outSize = {out.size(2), out.size(3)};
      long[] pads = new long[8];
      for (int d = 0; d < 2; d++) {
        pads[2 + d] = pad[d];
        pads[6 + d] = Math.max(pad[d], (long) (outSize[d] - 1) * s[d] + k[d] - size[d] - pad[d]);
      }
      String padded = node("Pad", at, x, constantLongs(at + "/pads", pads));
      String means = node("AveragePool", at, List.of(padded), intsAttr("kernel_shape", k), intsAttr("strides", s),
          intsAttr("pads", 0, 0, 0, 0), intAttr("count_include_pad", 1));
      String cut = node("Slice", at, means, constantLongs(at + "/starts", new long[] {0, 0}),
          constantLongs(at + "/ends", new long[] {outSize[0], outSize[1]}), constantLongs(at + "/axes", new long[] {2, 3}));
      float[] scale = new float[outSize[0] * outSize[1]];
      for (int i = 0; i < outSize[0]; i++) {
        for (int j = 0; j < outSize[1]; j++) {
          long count = divisor != null ? divisor
              : windowCount(i, s[0], k[0], pad[0], size[0], ap.countIncludePad())
                  * windowCount(j, s[1], k[1], pad[1], size[1], ap.countIncludePad());
          scale[i * outSize[1] + j] = (float) ((double) k[0] * k[1] / count);
        }
      }
      return node("Mul", at, cut, constantTensor(floatTensor(at + "/divisor_scale", scale,
          new long[] {outSize[0], outSize[1]})));
    }

    /** PyTorch's avg_pool2d divisor along one dimension for output position {@code o}. */
    private static long windowCount(int o, int stride, int k, int pad, int size, boolean includePad) {
      int start = o * stride - pad;
      int end = Math.min(start + k, size + pad);
      if (includePad) return end - start;
      return Math.min(end, size) - Math.max(start, 0);
    }

    private String batchNorm(Module m, String at, String x, BatchNormBase bn) {
      if (!bn.trackRunningStats()) {
        throw new OnnxExportException("Onnx.export: layer " + describe(m) + " has track_running_stats=False, so it "
            + "normalizes with batch statistics even in eval mode; ONNX BatchNormalization needs running statistics");
      }
      int c = bn.numFeatures();
      String scale = bn.weight() == null ? constantFill(at + "/scale", 1f, c) : initializer(at + ".weight", bn.weight());
      String b = bn.bias() == null ? constantFill(at + "/bias", 0f, c) : initializer(at + ".bias", bn.bias());
      String mean = initializer(at + ".running_mean", bn.runningMean());
      String var = initializer(at + ".running_var", bn.runningVar());
      return node("BatchNormalization", at, List.of(x, scale, b, mean, var), floatAttr("epsilon", bn.eps()));
    }

    private String layerNorm(String at, String x, LayerNorm ln) {
      int[] shape = ln.normalizedShape();
      String scale = ln.weight() == null ? constantFill(at + "/scale", 1f, shape) : initializer(at + ".weight", ln.weight());
      String b = ln.bias() == null ? constantFill(at + "/bias", 0f, shape) : initializer(at + ".bias", ln.bias());
      return node("LayerNormalization", at, List.of(x, scale, b), intAttr("axis", -shape.length),
          floatAttr("epsilon", ln.eps()));
    }

    private String embedding(Module m, String at, String x, Embedding e) {
      if (e.maxNorm() != null) {
        throw new OnnxExportException("Onnx.export: layer " + describe(m) + " has max_norm=" + e.maxNorm()
            + ", which renormalizes its weight during forward; export the model after renormalizing, without max_norm");
      }
      return node("Gather", at, List.of(initializer(at + ".weight", e.weight()), x), intAttr("axis", 0));
    }

    /**
     * RNN, LSTM and GRU: one ONNX node per layer (both directions in it), weights with the gates reordered from
     * PyTorch's (LSTM i f g o, GRU r z n) to ONNX's (i o f c, z r h), GRU with linear_before_reset as PyTorch.
     */
    private String recurrent(Module m, String at, String x, RNNBase rnn, int rank) {
      if (rank != 3) {
        throw new OnnxExportException("Onnx.export: layer " + describe(m) + " got a " + rank + "-d input; export "
            + "supports batched 3-d inputs");
      }
      boolean lstm = m instanceof LSTM;
      boolean gru = m instanceof GRU;
      int[] order = lstm ? new int[] {0, 3, 1, 2} : gru ? new int[] {1, 0, 2} : new int[] {0};
      int hs = rnn.hiddenSize();
      int dirs = rnn.bidirectional() ? 2 : 1;
      String y = rnn.batchFirst() ? node("Transpose", at, List.of(x), intsAttr("perm", 1, 0, 2)) : x; // [T, N, in]
      for (int layer = 0; layer < rnn.numLayers(); layer++) {
        int in = layer == 0 ? rnn.inputSize() : hs * dirs;
        List<float[]> w = new ArrayList<>(), r = new ArrayList<>(), b = new ArrayList<>();
        for (int d = 0; d < dirs; d++) {
          String sfx = "_l" + layer + (d == 1 ? "_reverse" : "");
          w.add(gates(rnn.param("weight_ih" + sfx).toFloatArray(), order, hs * in));
          r.add(gates(rnn.param("weight_hh" + sfx).toFloatArray(), order, hs * hs));
          if (rnn.hasBias()) {
            b.add(gates(rnn.param("bias_ih" + sfx).toFloatArray(), order, hs));
            b.add(gates(rnn.param("bias_hh" + sfx).toFloatArray(), order, hs));
          }
        }
        int g = order.length;
        String pre = at + ".l" + layer;
        List<String> inputs = new ArrayList<>(List.of(y,
            constantTensor(floatTensor(pre + "/W", concat(w), new long[] {dirs, (long) g * hs, in})),
            constantTensor(floatTensor(pre + "/R", concat(r), new long[] {dirs, (long) g * hs, hs}))));
        if (rnn.hasBias()) inputs.add(constantTensor(floatTensor(pre + "/B", concat(b), new long[] {dirs, 2L * g * hs})));
        List<AttributeProto> attrs = new ArrayList<>(List.of(intAttr("hidden_size", hs),
            stringAttr("direction", dirs == 2 ? "bidirectional" : "forward")));
        if (gru) attrs.add(intAttr("linear_before_reset", 1));
        if (m instanceof RNN plain) {
          String act = plain.nonlinearity().equals("relu") ? "Relu" : "Tanh";
          AttributeProto.Builder a = AttributeProto.newBuilder().setName("activations")
              .setType(AttributeProto.AttributeType.STRINGS);
          for (int d = 0; d < dirs; d++) a.addStrings(ByteString.copyFromUtf8(act));
          attrs.add(a.build());
        }
        String out = node(lstm ? "LSTM" : gru ? "GRU" : "RNN", at, inputs, attrs.toArray(new AttributeProto[0])); // [T, dirs, N, H]
        String t = node("Transpose", at, List.of(out), intsAttr("perm", 0, 2, 1, 3));
        y = node("Reshape", at, t, constantLongs(at + "/shape", new long[] {0, 0, -1})); // [T, N, dirs H]
      }
      return rnn.batchFirst() ? node("Transpose", at, List.of(y), intsAttr("perm", 1, 0, 2)) : y;
    }

    /** The gate blocks of {@code v} (each {@code block} long) in the order {@code order}. */
    private static float[] gates(float[] v, int[] order, int block) {
      float[] out = new float[v.length];
      for (int j = 0; j < order.length; j++) System.arraycopy(v, order[j] * block, out, j * block, block);
      return out;
    }

    private static float[] concat(List<float[]> parts) {
      int n = 0;
      for (float[] p : parts) n += p.length;
      float[] out = new float[n];
      int at = 0;
      for (float[] p : parts) {
        System.arraycopy(p, 0, out, at, p.length);
        at += p.length;
      }
      return out;
    }

    private static int[] two(int[] v) {
      return v.length == 1 ? new int[] {v[0], v[0]} : v;
    }

    // ---- graph building ----

    private String node(String op, String at, String... inputs) {
      return node(op, at, List.of(inputs));
    }

    @Override
    public String node(String op, String at, List<String> inputs, AttributeProto... attrs) {
      String out = unique(at + "/" + op);
      NodeProto.Builder n = NodeProto.newBuilder().setOpType(op).setName(out).addOutput(out);
      for (String i : inputs) n.addInput(i);
      for (AttributeProto a : attrs) n.addAttribute(a);
      graph.addNode(n);
      return out;
    }

    @Override
    public List<String> nodeOutputs(String op, String at, List<String> inputs, int outputs, AttributeProto... attrs) {
      String out = unique(at + "/" + op);
      NodeProto.Builder n = NodeProto.newBuilder().setOpType(op).setName(out).addOutput(out);
      List<String> outs = new ArrayList<>(List.of(out));
      for (int k = 1; k < outputs; k++) outs.add(unique(out + ":" + k));
      for (int k = 1; k < outputs; k++) n.addOutput(outs.get(k));
      for (String i : inputs) n.addInput(i);
      for (AttributeProto a : attrs) n.addAttribute(a);
      graph.addNode(n);
      return outs;
    }

    private String unique(String base) {
      String name = base;
      for (int i = 1; !usedNames.add(name); i++) name = base + "_" + i;
      return name;
    }

    /** A weight as a float32 initializer named by its state dict key (added once if the layer runs twice). */
    private String initializer(String name, Tensor t) {
      if (initializers.add(name)) {
        usedNames.add(name);
        int[] shape = t.shape();
        long[] dims = new long[shape.length];
        for (int i = 0; i < shape.length; i++) dims[i] = shape[i];
        graph.addInitializer(floatTensor(name, t.toFloatArray(), dims));
      }
      return name;
    }

    private String constant(String name, float value) {
      return constantTensor(floatTensor(name, new float[] {value}, new long[0]));
    }

    private String constantFill(String name, float value, int... shape) {
      long[] dims = new long[shape.length];
      int n = 1;
      for (int i = 0; i < shape.length; i++) {
        dims[i] = shape[i];
        n *= shape[i];
      }
      float[] v = new float[n];
      Arrays.fill(v, value);
      return constantTensor(floatTensor(name, v, dims));
    }

    private String constantLongs(String name, long[] values) {
      ByteBuffer buf = ByteBuffer.allocate(8 * values.length).order(ByteOrder.LITTLE_ENDIAN);
      for (long v : values) buf.putLong(v);
      return constantTensor(TensorProto.newBuilder().setName(name).setDataType(TensorProto.DataType.INT64_VALUE)
          .addDims(values.length).setRawData(ByteString.copyFrom(buf.array())).build());
    }

    @Override
    public String constantTensor(TensorProto t) {
      String name = unique(t.getName());
      initializers.add(name);
      graph.addInitializer(t.toBuilder().setName(name));
      return name;
    }

    private static TensorProto floatTensor(String name, float[] values, long[] dims) {
      ByteBuffer buf = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
      for (float v : values) buf.putFloat(v);
      TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(TensorProto.DataType.FLOAT_VALUE)
          .setRawData(ByteString.copyFrom(buf.array()));
      for (long d : dims) t.addDims(d);
      return t.build();
    }

    /** float32 for floating tensors (half and float64 models export as float32), else the index type. */
    private static int elemType(DType dt) {
      if (dt == DType.I64) return TensorProto.DataType.INT64_VALUE;
      if (dt == DType.I32) return TensorProto.DataType.INT32_VALUE;
      return TensorProto.DataType.FLOAT_VALUE;
    }

    private static ValueInfoProto valueInfo(String name, int[] shape, boolean dynamicBatch, int elemType) {
      TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
      for (int i = 0; i < shape.length; i++) {
        TensorShapeProto.Dimension.Builder d = TensorShapeProto.Dimension.newBuilder();
        if (i == 0 && dynamicBatch) d.setDimParam(BATCH);
        else if (i > 0) d.setDimValue(shape[i]);
        s.addDim(d);
      }
      TypeProto.Tensor.Builder tt = TypeProto.Tensor.newBuilder().setElemType(elemType)
          .setShape(s);
      return ValueInfoProto.newBuilder().setName(name).setType(TypeProto.newBuilder().setTensorType(tt)).build();
    }

    private static AttributeProto intAttr(String name, long v) {
      return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INT).setI(v).build();
    }

    private static AttributeProto floatAttr(String name, double v) {
      return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.FLOAT).setF((float) v)
          .build();
    }

    private static AttributeProto stringAttr(String name, String v) {
      return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.STRING)
          .setS(ByteString.copyFromUtf8(v)).build();
    }

    private static AttributeProto intsAttr(String name, int... v) {
      AttributeProto.Builder a = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
      for (int x : v) a.addInts(x);
      return a.build();
    }

    private static AttributeProto longsAttr(String name, long... v) {
      AttributeProto.Builder a = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
      for (long x : v) a.addInts(x);
      return a.build();
    }
  }
}
