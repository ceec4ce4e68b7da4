package dev.ember.onnx;

import com.google.protobuf.ByteString;
import dev.ember.autograd.Grad;
import dev.ember.autograd.Node;
import dev.ember.nn.AdaptiveAvgPool2d;
import dev.ember.nn.AdaptiveMaxPool2d;
import dev.ember.nn.AvgPool1d;
import dev.ember.nn.Bilinear;
import dev.ember.nn.ConvReLU2d;
import dev.ember.nn.ELU;
import dev.ember.nn.GroupNorm;
import dev.ember.nn.Hardswish;
import dev.ember.nn.LeakyReLU;
import dev.ember.nn.LearnedPositionalEmbedding;
import dev.ember.nn.LinearReLU;
import dev.ember.nn.MaxPool1d;
import dev.ember.nn.Mish;
import dev.ember.nn.ModuleDict;
import dev.ember.nn.ModuleList;
import dev.ember.nn.MultiheadAttention;
import dev.ember.nn.RMSNorm;
import dev.ember.nn.Residual;
import dev.ember.nn.SinusoidalPositionalEncoding;
import dev.ember.nn.Softplus;
import dev.ember.nn.Transformer;
import dev.ember.nn.TransformerDecoder;
import dev.ember.nn.TransformerDecoderLayer;
import dev.ember.nn.TransformerEncoder;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.nn.Unflatten;
import dev.ember.nn.Upsample;
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
 * composite modules with their own {@code forward} (LeNet-5's features then classifier) export, with the
 * tensor ops they run between their layers (see below). The graph has one input, {@value #INPUT}, and one output, {@value #OUTPUT},
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
 *
 * <p>Also: GroupNorm (InstanceNormalization over the groups) and
 * RMSNorm (composed from ReduceMean, Sqrt and Div: opset 17 has no RMSNormalization, ONNX Runtime 1.22 runs
 * opset 23's only partly, and the export stays at one opset); ELU, LeakyReLU, Hardswish, Softplus (beta,
 * threshold) and Mish; AdaptiveAvgPool2d and AdaptiveMaxPool2d (any output size: PyTorch's windows, per row then
 * column, when the sizes do not divide); AvgPool1d and MaxPool1d; Upsample (nearest and bilinear, align_corners,
 * sizes or scale factors: Gathers of PyTorch's own source indices and weights); Unflatten; Bilinear (Einsum);
 * LinearReLU and ConvReLU2d; SinusoidalPositionalEncoding and LearnedPositionalEmbedding; MultiheadAttention
 * (self- and cross-attention, key padding masks, [L, S] and [N*heads, L, S] attention masks, bool or float);
 * TransformerEncoderLayer, TransformerDecoderLayer, TransformerEncoder, TransformerDecoder and Transformer
 * (norm_first either way, relu or gelu, batch-first or not, LayerNorm or RMSNorm as the stacks' final norm). Models
 * of several inputs (cross-attention, decoders, masks as inputs) export with {@link #toModelProto(Module, List)}.
 * Sequential, ModuleList, ModuleDict and Residual are traced through (a Residual's sum becomes an Add), and so are
 * the user's own modules (checkpoint_sequential included): their layer calls become the layers' nodes, and the
 * tensor ops their forward runs between layers are read back from the autograd tape (the trace runs with
 * recording on and a floating input that requires grad) and translated: add, sub, mul, div, pow, maximum, minimum
 * (scalars become constants), matmul, F.linear, addmm, the unary ops without parameters (neg, abs, exp, log,
 * sqrt, rsqrt, square, reciprocal, sin, cos, tanh, sigmoid, relu, gelu, silu, mish, ...), views and reshapes,
 * permutes and transposes, slices and selects (x[:, 0]), expand, sum, mean, amax and amin over dims, softmax and
 * log_softmax, cat. The tape records no attributes, so they are read off the traced shapes, strides and offsets (a
 * softmax's dim off its output, the one dim it sums to 1 along), and export fails where that is ambiguous (a sum
 * over one of two equal dims, say).
 *
 * <p>Sequence-first attention modules exported as the model take their batch in dimension 1. An attention or
 * transformer layer inside a model is called with masks its call does not show; export re-runs it without masks and then causal, exports whichever gives the traced output,
 * and fails otherwise. An op with no translation fails naming the op and the path of the module whose forward
 * runs it.
 *
 * <p>What cannot be exported, and why: tensor ops with parameters the tape does not record (clamp, leaky_relu,
 * pow by a scalar, index_select, gather, ...) or that need values rather than shapes (a tensor
 * computed without gradient from an integer input, such as a mask made from token ids, which the tape does not
 * record): wrap them in a layer of dev.ember.nn, or make the mask an input; a reshape that moves the batch
 * dimension is placed by the example's batch size (the first later dimension that is a multiple of it is the
 * inferred one), and an expand to the batch is told by its size, so export with a batch size (above 1) that no
 * other dimension is a multiple of; a slice or select of a dimension of the example's batch size is refused (its
 * bounds would be fixed for every batch: x.narrow(0, 1, n - 1) kept 2 rows at every batch). Conv2d with padding_mode
 * 'circular' (ONNX Pad's 'wrap' is opset 19); BatchNorm without running statistics (batch statistics in eval);
 * Embedding with max_norm (renormalizes its weight during forward); unbatched (2-d) attention and transformer
 * inputs; a nested attention layer called with a key padding mask or a non-causal attention mask (its call does
 * not show them: export the layer itself with its masks as inputs); attention masks and causal layers fix the
 * sequence lengths in the graph (the batch stays dynamic, [N*heads, L, S] masks' first dimension with it); the
 * quantized modules of {@code dev.ember.nn.quant} until their QDQ translation.
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
    write(toModelProto(model, exampleInput).toByteArray(), path);
  }

  /**
   * Writes a model of several inputs (see {@link #toModelProto(Module, List)}) as {@link #export(Module, Tensor,
   * Path)} does.
   */
  public static void export(Module model, List<Tensor> exampleInputs, Path path) throws IOException {
    write(toModelProto(model, exampleInputs).toByteArray(), path);
  }

  private static void write(byte[] bytes, Path path) throws IOException {
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
    return toModelProto(model, List.of(exampleInput));
  }

  /**
   * The ONNX model of a model called with several tensors, in the order of its {@code forward}'s parameters; a null
   * entry is an optional input left out (a mask not used). The graph inputs are {@value #INPUT}, then
   * {@value #INPUT}{@code _1}, {@value #INPUT}{@code _2}, ... for the non-null entries, by position; a tensor given
   * twice (self-attention's query, key and value) is one graph input.
   * <ul>
   *   <li>MultiheadAttention: query, key, value, key_padding_mask [N, S], attn_mask [L, S] or [N*heads, L, S]
   *       (bool: true masks; float: added), as {@code forward(query, key, value, keyPaddingMask, attnMask, false,
   *       false)}; key and value default to the query, value to the key;</li>
   *   <li>TransformerEncoderLayer and TransformerEncoder: src, src_mask, src_key_padding_mask;</li>
   *   <li>TransformerDecoderLayer and TransformerDecoder: tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
   *       memory_key_padding_mask;</li>
   *   <li>Transformer: src, tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask, tgt_key_padding_mask,
   *       memory_key_padding_mask;</li>
   *   <li>Bilinear: input1, input2;</li>
   *   <li>any other module: its one input.</li>
   * </ul>
   * A causal mask is given as a mask (PyTorch's is_causal is only a hint that the mask is causal:
   * {@code Transformer.generateSquareSubsequentMask}); it fixes the sequence lengths in the graph, as any
   * [L, S] mask does. The dynamic dimension of each sequence input is its batch: dimension 1 for sequence-first
   * ({@code batchFirst=false}) attention modules, else 0.
   */
  public static ModelProto toModelProto(Module model, List<Tensor> exampleInputs) {
    if (model == null || exampleInputs == null || exampleInputs.isEmpty() || exampleInputs.get(0) == null) {
      throw new IllegalArgumentException("Onnx.export: model and a first example input must not be null");
    }
    for (int i = 1; i < exampleInputs.size(); i++) {
      Tensor t = exampleInputs.get(i);
      if (t != null && !t.dtype().isFloatingPoint() && t.dtype() != DType.BOOL) {
        throw new IllegalArgumentException("Onnx.export: example input " + i + " of " + model.getClass().getSimpleName()
            + " must be floating point or bool, got " + t.dtype() + " " + Arrays.toString(t.shape()));
      }
    }
    Tensor exampleInput = exampleInputs.get(0);
    DType dt = exampleInput.dtype();
    if (!dt.isFloatingPoint() && dt != DType.I64 && dt != DType.I32) {
      throw new IllegalArgumentException("Onnx.export: the example input must be floating point (or int64/int32 "
          + "indices for an Embedding), got " + dt + " " + Arrays.toString(exampleInput.shape()));
    }
    if (exampleInput.dim() == 0) {
      throw new IllegalArgumentException("Onnx.export: the example input needs a batch dimension, got a scalar");
    }
    Tracer tracer = new Tracer(model);
    GraphProto graph = tracer.trace(exampleInputs);
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
    private final Map<Module, Tensor> lastOutput = new IdentityHashMap<>();
    private final Map<Tensor, String> stateNames = new IdentityHashMap<>();
    private List<Tensor> rootArgs;
    private final GraphProto.Builder graph = GraphProto.newBuilder();
    private Module activeLayer;

    Tracer(Module model) {
      this.model = model;
      for (var e : model.namedModules().entrySet()) paths.put(e.getValue(), e.getKey());
    }

    GraphProto trace(List<Tensor> given0) {
      // floating data inputs require grad, so that the tape records the ops a forward runs between its layers
      List<Tensor> args = new ArrayList<>(given0);
      Map<Tensor, Tensor> copies = new IdentityHashMap<>(); // one graph input per distinct tensor
      for (int i = 0; i < args.size(); i++) {
        Tensor t = args.get(i);
        if (t != null && t.dtype().isFloatingPoint() && role(model, i) == Role.DATA) {
          args.set(i, copies.computeIfAbsent(t, c -> c.detach().requiresGrad(true)));
        }
      }
      Tensor x = args.get(0);
      rootArgs = args;
      for (var e : model.namedParameters().entrySet()) stateNames.putIfAbsent(e.getValue(), e.getKey());
      for (var e : model.namedBuffers().entrySet()) stateNames.putIfAbsent(e.getValue(), e.getKey());
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
      try (Grad g = Grad.on()) {
        for (Module m : all) hooks.add(m.registerForwardHook(hook));
        List<Tensor> given = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
          Tensor t = args.get(i);
          if (t == null || names.containsKey(t)) continue;
          String name = given.isEmpty() ? INPUT : INPUT + "_" + given.size();
          names.put(t, name);
          usedNames.add(name);
          graph.addInput(valueInfo(name, t.shape(), batchAxis(model, i, t), elemType(t.dtype())));
          given.add(t);
        }
        out = given.size() == 1 && args.size() == 1 ? model.call(x) : model.call(given, () -> rootForward(model, args));
      } finally {
        for (HookHandle h : hooks) h.remove();
        for (Module m : all) m.train(modes.get(m)); // pre-order: a parent's train(mode) is then corrected below it
      }
      String last = resolve(out, model);
      graph.addNode(NodeProto.newBuilder().setOpType("Identity").addInput(last).addOutput(OUTPUT).setName(OUTPUT));
      graph.setName(model.name());
      int inAxis = batchAxis(model, 0, x);
      int outAxis = inAxis >= 0 && inAxis < out.dim() && out.size(inAxis) == x.size(inAxis) ? inAxis : -1;
      graph.addOutput(valueInfo(OUTPUT, out.shape(), outAxis, elemType(out.dtype())));
      return graph.build();
    }

    private void before(Module m, List<Tensor> inputs) {
      stack.push(m);
      if (activeLayer != null || !isLayer(m)) return;
      activeLayer = m;
      if (inputs.size() != 1 && m != model && !multiInput(m, inputs.size())) {
        throw new OnnxExportException("Onnx.export: layer " + describe(m) + " takes " + inputs.size()
            + " inputs; export supports layers of one tensor, and attention, transformer and Bilinear layers of"
            + " their documented inputs");
      }
      Module parent = stack.size() > 1 ? stack.stream().skip(1).findFirst().orElseThrow() : m;
      for (Tensor t : inputs) resolve(t, parent);
      translatable(m);
    }

    private void after(Module m, List<Tensor> inputs, Tensor output) {
      stack.pop();
      lastOutput.put(m, output);
      if (activeLayer == null && m instanceof Residual r) {
        names.put(output, residual(m, r, inputs.get(0)));
        return;
      }
      if (activeLayer == null && m != model) {
        resolve(output, m); // a module traced through: the ops its forward ran after its last layer
        return;
      }
      if (activeLayer != m) return;
      Masks masks = m == model ? Masks.root(m, rootArgs) : Masks.none(verifyUnmasked(m, inputs, output));
      activeLayer = null;
      names.put(output, translate(m, inputs, output, masks));
    }

    /**
     * Ember's public layers (of dev.ember.nn and its subpackages, such as the quantized ones) are translated;
     * containers and the user's own modules are traced through (their layer calls, and the tensor ops their forward
     * runs between them, from the tape).
     */
    private static boolean isLayer(Module m) {
      if (m instanceof Sequential || m instanceof ModuleList || m instanceof ModuleDict || m instanceof Residual) {
        return false;
      }
      Class<?> c = m.getClass();
      String pkg = c.getPackageName();
      return (pkg.equals("dev.ember.nn") || pkg.startsWith("dev.ember.nn.")) && Modifier.isPublic(c.getModifiers());
    }

    private void translatable(Module m) {
      if (QdqExport.handles(m)) return;
      boolean known = m instanceof Linear || m instanceof ReLU || m instanceof Sigmoid || m instanceof Tanh
          || m instanceof GELU || m instanceof SiLU || m instanceof Softmax || m instanceof LogSoftmax
          || m instanceof Flatten || m instanceof Dropout || m instanceof Dropout2d || m instanceof Identity || m instanceof Conv1d
          || m instanceof Conv2d || m instanceof MaxPool2d || m instanceof AvgPool2d || m instanceof BatchNorm1d
          || m instanceof BatchNorm2d || m instanceof LayerNorm || m instanceof Embedding || m instanceof LSTM
          || m instanceof GRU || m instanceof RNN || m instanceof ConvTranspose2d || Layers.known(m);
      if (!known) {
        throw new OnnxExportException("Onnx.export: layer " + describe(m) + " has no ONNX translation (supported: "
            + "Linear, ReLU, Sigmoid, Tanh, GELU, SiLU, Softmax, LogSoftmax, Flatten, Dropout, Identity, Conv1d, "
            + "Conv2d, MaxPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, LayerNorm, Embedding, LSTM, GRU, RNN, ConvTranspose2d, "
            + Layers.NAMES + ")");
      }
    }

    private String describe(Module m) {
      String p = paths.get(m);
      return "'" + (p == null || p.isEmpty() ? "<root>" : p) + "' (" + m.getClass().getName() + ")";
    }

    private String translate(Module m, List<Tensor> inputs, Tensor output, Masks masks) {
      Tensor input = inputs.get(0);
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
      if (Layers.known(m)) return translateMore(m, at, inputs, output, masks);
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
      return avgPool(at, x, two(ap.kernelSize()), two(ap.stride()), two(ap.padding()), ap.ceilMode(),
          ap.countIncludePad(), ap.divisorOverride(), new int[] {in.size(2), in.size(3)},
          new int[] {out.size(2), out.size(3)});
    }

    /** A 2-d average pool of a 4-d input of spatial size {@code size} to {@code outSize}, as PyTorch's. */
    private String avgPool(String at, String x, int[] k, int[] s, int[] pad, boolean ceilMode, boolean countIncludePad,
        Integer divisor, int[] size, int[] outSize) {
      if (!ceilMode) {
        // every window lies inside the padded input: ONNX's divisors are PyTorch's
        boolean includePad = divisor != null || countIncludePad;
        String y = node("AveragePool", at, List.of(x), intsAttr("kernel_shape", k), intsAttr("strides", s),
            intsAttr("pads", pad[0], pad[1], pad[0], pad[1]), intAttr("count_include_pad", includePad ? 1 : 0));
        if (divisor == null) return y;
        return node("Mul", at, y, constant(at + "/divisor_scale", (float) ((double) k[0] * k[1] / divisor)));
      }
      // Ceil mode: the last windows run past the padded input, and PyTorch divides them by their part inside
      // it (or inside the input, without count_include_pad), which ONNX AveragePool does not reproduce. So:
      // zero-pad until every window is whole, take window means (sum / k0 k1), keep the traced output size,
      // and rescale each position by k0 k1 / (PyTorch's divisor there), a constant of the traced shapes.
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
              : windowCount(i, s[0], k[0], pad[0], size[0], countIncludePad)
                  * windowCount(j, s[1], k[1], pad[1], size[1], countIncludePad);
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

    // ---- the layers added for issue #36 item 5: norms, activations, pools, attention and transformers ----

    /** The root's forward with its documented inputs (see {@link Onnx#toModelProto(Module, List)}). */
    private static Tensor rootForward(Module model, List<Tensor> args) {
      int n = args.size();
      int most = model instanceof MultiheadAttention ? 5 : model instanceof TransformerEncoderLayer
          || model instanceof TransformerEncoder ? 3 : model instanceof TransformerDecoderLayer
          || model instanceof TransformerDecoder ? 6 : model instanceof Transformer ? 8 : model instanceof Bilinear ? 2 : 1;
      if (n > most || (model instanceof Bilinear && (n != 2 || args.get(1) == null))
          || ((model instanceof TransformerDecoderLayer || model instanceof TransformerDecoder
              || model instanceof Transformer) && (n < 2 || args.get(1) == null))) {
        throw new OnnxExportException("Onnx.export: " + model.getClass().getName() + " was given " + n
            + " example inputs; see Onnx.toModelProto(Module, List) for the inputs each model takes");
      }
      Tensor a0 = args.get(0), a1 = arg(args, 1), a2 = arg(args, 2), a3 = arg(args, 3), a4 = arg(args, 4);
      Tensor a5 = arg(args, 5), a6 = arg(args, 6), a7 = arg(args, 7);
      if (model instanceof MultiheadAttention a) {
        Tensor k = a1 == null ? a0 : a1;
        return a.forward(a0, k, a2 == null ? k : a2, a3, a4, false, false).output();
      }
      if (model instanceof TransformerEncoderLayer l) return l.forward(a0, a1, a2, false);
      if (model instanceof TransformerEncoder e) return e.forward(a0, a1, a2, false);
      if (model instanceof TransformerDecoderLayer l) return l.forward(a0, a1, a2, a3, a4, a5, false, false);
      if (model instanceof TransformerDecoder d) return d.forward(a0, a1, a2, a3, a4, a5, false, false);
      if (model instanceof Transformer t) return t.forward(a0, a1, a2, a3, a4, a5, a6, a7, false, false, false);
      if (model instanceof Bilinear b) return b.forward(a0, a1);
      return model.call(a0);
    }

    private static Tensor arg(List<Tensor> args, int i) {
      return i < args.size() ? args.get(i) : null;
    }

    /** What input {@code i} of the root is: a sequence (or plain) input, an [L, S] mask or a key padding mask. */
    private enum Role { DATA, MASK, KEY_PADDING }

    private static Role role(Module model, int i) {
      if (model instanceof MultiheadAttention) return i < 3 ? Role.DATA : i == 3 ? Role.KEY_PADDING : Role.MASK;
      if (model instanceof TransformerEncoderLayer || model instanceof TransformerEncoder) {
        return i == 0 ? Role.DATA : i == 1 ? Role.MASK : Role.KEY_PADDING;
      }
      if (model instanceof TransformerDecoderLayer || model instanceof TransformerDecoder) {
        return i < 2 ? Role.DATA : i < 4 ? Role.MASK : Role.KEY_PADDING;
      }
      if (model instanceof Transformer) return i < 2 ? Role.DATA : i < 5 ? Role.MASK : Role.KEY_PADDING;
      return Role.DATA;
    }

    /** Whether an attention-family module takes [L, N, E] (batchFirst=false). */
    private static boolean seqFirst(Module m) {
      if (m instanceof MultiheadAttention a) return !a.batchFirst();
      if (m instanceof TransformerEncoderLayer l) return !l.batchFirst();
      if (m instanceof TransformerDecoderLayer l) return !l.batchFirst();
      if (m instanceof TransformerEncoder e) return !e.layer(0).batchFirst();
      if (m instanceof TransformerDecoder d) return !d.layer(0).batchFirst();
      if (m instanceof Transformer t) return !t.encoder().layer(0).batchFirst();
      return false;
    }

    /** The dynamic (batch) dimension of root input {@code i}, or -1 for none. */
    private static int batchAxis(Module model, int i, Tensor t) {
      Role r = role(model, i);
      int axis = r == Role.MASK ? (t.dim() == 3 ? 0 : -1) : r == Role.KEY_PADDING ? 0 : seqFirst(model) && t.dim() == 3 ? 1 : 0;
      return axis < t.dim() ? axis : -1;
    }

    private static boolean multiInput(Module m, int n) {
      return (m instanceof MultiheadAttention || m instanceof TransformerDecoderLayer || m instanceof TransformerDecoder
          || m instanceof Transformer || m instanceof Bilinear) && n == 2;
    }

    /** The masks an attention-family layer applies: the root's given ones, or causality found by re-running it. */
    private record Masks(Tensor mask, Tensor keyPadding, Tensor tgtMask, Tensor memoryMask, Tensor tgtKeyPadding,
        Tensor memoryKeyPadding, boolean causal) {
      static Masks none(boolean causal) {
        return new Masks(null, null, null, null, null, null, causal);
      }

      static Masks root(Module m, List<Tensor> a) {
        if (m instanceof MultiheadAttention) return new Masks(arg(a, 4), arg(a, 3), null, null, null, null, false);
        if (m instanceof TransformerEncoderLayer || m instanceof TransformerEncoder) {
          return new Masks(arg(a, 1), arg(a, 2), null, null, null, null, false);
        }
        if (m instanceof TransformerDecoderLayer || m instanceof TransformerDecoder) {
          return new Masks(null, null, arg(a, 2), arg(a, 3), arg(a, 4), arg(a, 5), false);
        }
        if (m instanceof Transformer) return new Masks(arg(a, 2), arg(a, 5), arg(a, 3), arg(a, 4), arg(a, 6), arg(a, 7), false);
        return none(false);
      }
    }

    /**
     * An attention-family layer inside the model is called with masks its call's inputs do not show: re-run it
     * without masks, then causal, and keep the one that gives the traced output; if neither does, it had masks
     * that export cannot see, and fails.
     */
    private boolean verifyUnmasked(Module m, List<Tensor> in, Tensor output) {
      boolean attention = m instanceof MultiheadAttention || m instanceof TransformerEncoderLayer
          || m instanceof TransformerEncoder || m instanceof TransformerDecoderLayer || m instanceof TransformerDecoder
          || m instanceof Transformer;
      if (!attention) return false;
      for (boolean causal : new boolean[] {false, true}) {
        Tensor again;
        Tensor a = in.get(0), b = in.size() > 1 ? in.get(1) : null;
        if (m instanceof MultiheadAttention mha) {
          Tensor kv = b == null ? a : b;
          again = mha.forward(a, kv, kv, null, null, false, causal).output();
        } else if (m instanceof TransformerEncoderLayer l) {
          again = l.forward(a, null, null, causal);
        } else if (m instanceof TransformerEncoder e) {
          again = e.forward(a, null, null, causal);
        } else if (m instanceof TransformerDecoderLayer l) {
          again = l.forward(a, b, null, null, null, null, causal, false);
        } else if (m instanceof TransformerDecoder d) {
          again = d.forward(a, b, null, null, null, null, causal, false);
        } else {
          again = ((Transformer) m).forward(a, b, null, null, null, null, null, null, false, causal, false);
        }
        if (close(again, output)) return causal;
      }
      throw new OnnxExportException("Onnx.export: layer " + describe(m) + " was called with masks (attention or key "
          + "padding) that its call's inputs do not show, so export cannot follow them; export the layer itself with "
          + "its masks as inputs (Onnx.toModelProto(Module, List))");
    }

    private static boolean close(Tensor a, Tensor b) {
      if (!Arrays.equals(a.shape(), b.shape())) return false;
      float[] x = a.toFloatArray(), y = b.toFloatArray();
      for (int i = 0; i < x.length; i++) {
        if (!(Math.abs(x[i] - y[i]) <= 1e-6 * Math.max(1, Math.abs(y[i]))) && !(Float.isNaN(x[i]) && Float.isNaN(y[i]))) {
          return false;
        }
      }
      return true;
    }

    /** A Residual traced through: its body's output plus its shortcut's (or its input). */
    private String residual(Module m, Residual r, Tensor input) {
      Module body = r.child("body");
      Tensor y = lastOutput.get(body);
      Tensor s = r.namedChildren().containsKey("shortcut") ? lastOutput.get(r.child("shortcut")) : input;
      String yn = resolve(y, m), sn = resolve(s, m);
      String p = paths.get(m);
      return node("Add", p == null || p.isEmpty() ? m.name() : p, yn, sn);
    }

    private String at(Module m) {
      String p = paths.get(m);
      return p == null || p.isEmpty() ? m.name() : p;
    }

    private String translateMore(Module m, String at, List<Tensor> inputs, Tensor output, Masks masks) {
      Tensor input = inputs.get(0);
      String x = names.get(input);
      int rank = input.dim();
      if (m instanceof GroupNorm gn) return groupNorm(at, x, gn, input.shape());
      if (m instanceof RMSNorm rn) return rmsNorm(at, x, rn);
      if (m instanceof ELU e) return node("Elu", at, List.of(x), floatAttr("alpha", e.alpha()));
      if (m instanceof LeakyReLU l) return node("LeakyRelu", at, List.of(x), floatAttr("alpha", l.negativeSlope()));
      if (m instanceof Hardswish) return node("HardSwish", at, x);
      if (m instanceof Softplus sp) return softplus(at, x, sp.beta(), sp.threshold());
      if (m instanceof Mish) return node("Mul", at, x, node("Tanh", at, softplus(at, x, 1, 20)));
      if (m instanceof AdaptiveAvgPool2d || m instanceof AdaptiveMaxPool2d) {
        return adaptivePool(m, at, x, input, output, m instanceof AdaptiveAvgPool2d);
      }
      if (m instanceof AvgPool1d p) {
        String y4 = node("Unsqueeze", at, x, constantLongs(at + "/axes", new long[] {2}));
        String pooled = avgPool(at, y4, new int[] {1, p.kernelSize()}, new int[] {1, p.stride()},
            new int[] {0, p.padding()}, p.ceilMode(), p.countIncludePad(), null, new int[] {1, input.size(2)},
            new int[] {1, output.size(2)});
        return node("Squeeze", at, pooled, constantLongs(at + "/axes", new long[] {2}));
      }
      if (m instanceof MaxPool1d p) {
        return node("MaxPool", at, List.of(x), intsAttr("kernel_shape", p.kernelSize()), intsAttr("strides", p.stride()),
            intsAttr("pads", p.padding(), p.padding()), intsAttr("dilations", p.dilation()),
            intAttr("ceil_mode", p.ceilMode() ? 1 : 0));
      }
      if (m instanceof Upsample u) return upsample(m, at, x, u, input, output);
      if (m instanceof Unflatten) return reshapeTo(at, x, output.shape(), output.dim() > 0 && input.dim() > 0
          && output.size(0) == input.size(0) && !Arrays.equals(output.shape(), input.shape()) ? 1 : 0);
      if (m instanceof Bilinear b) {
        String w = initializer(at + ".weight", b.weight());
        String y = node("Einsum", at, List.of(x, w, names.get(inputs.get(1))), stringAttr("equation", "...i,oij,...j->...o"));
        return b.bias() == null ? y : node("Add", at, y, initializer(at + ".bias", b.bias()));
      }
      if (m instanceof LinearReLU lr) return node("Relu", at, linear(at(lr.linear()), x, lr.linear(), rank));
      if (m instanceof ConvReLU2d cr) {
        Conv2d c = cr.conv();
        return node("Relu", at, conv(c, at(c), x, c.weight(), c.bias(), c.kernelSize(), c.stride(), c.padding(),
            c.paddingString(), c.dilation(), c.groups(), c.paddingMode()));
      }
      if (m instanceof SinusoidalPositionalEncoding pe) {
        int t = input.size(rank - 2);
        Tensor table = pe.table().narrow(0, 0, t);
        return node("Add", at, x, constantTensor(floatTensor(at + "/pe", table.toFloatArray(),
            new long[] {t, table.size(1)})));
      }
      if (m instanceof LearnedPositionalEmbedding pe) {
        int t = input.size(rank - 2);
        String rows = node("Slice", at, initializer(at + ".weight", pe.weight()), constantLongs(at + "/starts",
            new long[] {0}), constantLongs(at + "/ends", new long[] {t}), constantLongs(at + "/axes", new long[] {0}));
        return node("Add", at, x, rows);
      }
      if (rank != 3) {
        throw new OnnxExportException("Onnx.export: layer " + describe(m) + " got a " + rank + "-d input; export "
            + "supports batched 3-d inputs of attention and transformer layers");
      }
      boolean sf = seqFirst(m);
      // the sequence inputs: the layer call's (one, or two for cross-attention), or the root's by position
      boolean twoSeq = m instanceof TransformerDecoderLayer || m instanceof TransformerDecoder || m instanceof Transformer;
      Tensor second = m == model ? (m instanceof MultiheadAttention || twoSeq ? arg(rootArgs, 1) : null)
          : inputs.size() > 1 ? inputs.get(1) : null;
      Tensor value = m == model && m instanceof MultiheadAttention ? arg(rootArgs, 2) : null;
      int seq = sf ? 0 : 1;
      int l = input.size(seq);
      int s2 = second != null ? second.size(seq) : l;
      String q = sfIn(at, input, sf);
      String k = second == null ? q : sfIn(at, second, sf);
      String y;
      if (m instanceof MultiheadAttention a) {
        String v = value == null ? k : sfIn(at, value, sf);
        y = attend(a, q, k, v, masks.mask(), masks.keyPadding(), masks.causal(), l, s2);
      } else if (m instanceof TransformerEncoderLayer el) {
        y = encoderLayer(el, q, masks.mask(), masks.keyPadding(), masks.causal(), l);
      } else if (m instanceof TransformerEncoder e) {
        y = encoder(e, q, masks.mask(), masks.keyPadding(), masks.causal(), l);
      } else if (m instanceof TransformerDecoderLayer dl) {
        y = decoderLayer(dl, q, k, masks, l, s2);
      } else if (m instanceof TransformerDecoder d) {
        y = decoder(d, q, k, masks, l, s2);
      } else {
        // Transformer: src is the first input, tgt the second; the decoder's queries are tgt's
        Transformer t = (Transformer) m;
        String mem = encoder(t.encoder(), q, masks.mask(), masks.keyPadding(), false, l);
        y = decoder(t.decoder(), k, mem, masks, s2, l);
      }
      return sf ? node("Transpose", at, List.of(y), intsAttr("perm", 1, 0, 2)) : y;
    }

    /** A root input (the value of a cross-attention) in the batch-first layout. */
    private String sfIn(String at, Tensor t, boolean seqFirst) {
      String n = names.get(t);
      return seqFirst ? node("Transpose", at, List.of(n), intsAttr("perm", 1, 0, 2)) : n;
    }

    /** Reshape to the traced shape, the first {@code copied} dims copied from the input (the dynamic batch). */
    private String reshapeTo(String at, String x, int[] shape, int copied) {
      long[] target = new long[shape.length];
      for (int i = 0; i < shape.length; i++) target[i] = i < copied ? 0 : shape[i];
      return node("Reshape", at, x, constantLongs(at + "/shape", target));
    }

    /** GroupNorm as InstanceNormalization over [N, G, rest] (opset 17 has no GroupNormalization). */
    private String groupNorm(String at, String x, GroupNorm gn, int[] shape) {
      int g = gn.numGroups();
      String grouped = node("Reshape", at, x, constantLongs(at + "/grouped", new long[] {0, g, -1}));
      String normed = node("InstanceNormalization", at, List.of(grouped, constantFill(at + "/ones", 1f, g),
          constantFill(at + "/zeros", 0f, g)), floatAttr("epsilon", gn.eps()));
      long[] back = new long[shape.length];
      for (int i = 1; i < shape.length; i++) back[i] = shape[i];
      String y = node("Reshape", at, normed, constantLongs(at + "/shape", back));
      if (gn.weight() == null) return y;
      long[] perChannel = new long[shape.length - 1];
      Arrays.fill(perChannel, 1);
      perChannel[0] = gn.numChannels();
      String w = node("Reshape", at, initializer(at + ".weight", gn.weight()), constantLongs(at + "/cshape", perChannel));
      String b = node("Reshape", at, initializer(at + ".bias", gn.bias()), constantLongs(at + "/cshape", perChannel));
      return node("Add", at, node("Mul", at, y, w), b);
    }

    /**
     * RMSNorm composed from ReduceMean, Add, Sqrt and Div: opset 17 has no RMSNormalization (opset 23 does), and this
     * stays at opset 17.
     */
    private String rmsNorm(String at, String x, RMSNorm rn) {
      int k = rn.normalizedShape().length;
      long[] axes = new long[k];
      for (int i = 0; i < k; i++) axes[i] = i - k;
      double eps = rn.eps() != null ? rn.eps() : Math.ulp(1.0f); // torch.finfo(float32).eps
      String ms = node("ReduceMean", at, List.of(node("Mul", at, x, x)), longsAttr("axes", axes), intAttr("keepdims", 1));
      String rms = node("Sqrt", at, node("Add", at, ms, constant(at + "/eps", (float) eps)));
      String y = node("Div", at, x, rms);
      return rn.weight() == null ? y : node("Mul", at, y, initializer(at + ".weight", rn.weight()));
    }

    /** log(1 + exp(beta x)) / beta, and x where beta x &gt; threshold. */
    private String softplus(String at, String x, double beta, double threshold) {
      String bx = beta == 1 ? x : node("Mul", at, x, constant(at + "/beta", (float) beta));
      String sp = node("Softplus", at, bx);
      if (beta != 1) sp = node("Div", at, sp, constant(at + "/beta", (float) beta));
      String over = node("Greater", at, bx, constant(at + "/threshold", (float) threshold));
      return node("Where", at, over, x, sp);
    }

    /**
     * Adaptive pools over the traced spatial sizes: one pool when the sizes divide, else one window per output
     * row then column (PyTorch's windows [floor(i H / h), ceil((i + 1) H / h)); mean and max are separable).
     */
    private String adaptivePool(Module m, String at, String x, Tensor in, Tensor out, boolean avg) {
      if (in.dim() != 4) {
        throw new OnnxExportException("Onnx.export: layer " + describe(m) + " got a " + in.dim() + "-d input; "
            + "export supports batched 4-d inputs");
      }
      int[] size = {in.size(2), in.size(3)};
      int[] outSize = {out.size(2), out.size(3)};
      if (size[0] % outSize[0] == 0 && size[1] % outSize[1] == 0) {
        int[] k = {size[0] / outSize[0], size[1] / outSize[1]};
        return node(avg ? "AveragePool" : "MaxPool", at, List.of(x), intsAttr("kernel_shape", k), intsAttr("strides", k));
      }
      String y = x;
      for (int d = 0; d < 2; d++) {
        List<String> parts = new ArrayList<>();
        for (int i = 0; i < outSize[d]; i++) {
          long start = Math.floorDiv((long) i * size[d], outSize[d]);
          long end = -Math.floorDiv(-(long) (i + 1) * size[d], outSize[d]);
          String win = node("Slice", at, y, constantLongs(at + "/starts", new long[] {start}),
              constantLongs(at + "/ends", new long[] {end}), constantLongs(at + "/axes", new long[] {2 + d}));
          parts.add(node(avg ? "ReduceMean" : "ReduceMax", at, List.of(win), intsAttr("axes", 2 + d),
              intAttr("keepdims", 1)));
        }
        y = parts.size() == 1 ? parts.get(0) : node("Concat", at, parts, intAttr("axis", 2 + d));
      }
      return y;
    }

    /**
     * Upsample as Gathers of PyTorch's source indices (nearest) or two Gathers and weights per axis (bilinear), so
     * the traced output sizes and PyTorch's index rules are reproduced exactly, whatever ONNX Resize's modes do.
     */
    private String upsample(Module m, String at, String x, Upsample u, Tensor in, Tensor out) {
      int nd = in.dim() - 2;
      double[] sf = u.scaleFactor();
      boolean useScale = sf != null && !Boolean.TRUE.equals(u.recomputeScaleFactor());
      boolean f32 = in.dtype() != DType.F64; // half inputs compute in float32
      boolean ac = Boolean.TRUE.equals(u.alignCorners());
      String y = x;
      for (int d = 0; d < nd; d++) {
        int axis = 2 + d;
        int isz = in.size(axis), osz = out.size(axis);
        Double scale = useScale ? sf[sf.length == 1 ? 0 : d] : null;
        if ("nearest".equals(u.mode())) {
          float r = (float) (scale != null ? 1.0 / scale : (double) ((float) isz / osz));
          long[] idx = new long[osz];
          for (int o = 0; o < osz; o++) idx[o] = Math.min((int) Math.floor(o * r), isz - 1);
          y = node("Gather", at, List.of(y, constantLongs(at + "/index", idx)), intAttr("axis", axis));
          continue;
        }
        if (isz == osz) continue;
        long[] i0 = new long[osz], i1 = new long[osz];
        float[] l0 = new float[osz], l1 = new float[osz];
        double ratio = ac ? (osz > 1 ? (f32 ? (double) ((float) (isz - 1) / (osz - 1)) : (double) (isz - 1) / (osz - 1)) : 0)
            : scale != null ? (f32 ? (double) (float) (1.0 / scale) : 1.0 / scale)
            : f32 ? (double) ((float) isz / osz) : (double) isz / osz;
        for (int o = 0; o < osz; o++) {
          double src = f32 ? (ac ? (float) ratio * o : (float) ratio * (o + 0.5f) - 0.5f) : (ac ? ratio * o : ratio * (o + 0.5) - 0.5);
          if (!ac && src < 0) src = 0;
          int i = Math.min((int) Math.floor(src), isz - 1);
          double lam = Math.min(Math.max(f32 ? (float) src - i : src - i, 0), 1);
          i0[o] = i;
          i1[o] = i + (i < isz - 1 ? 1 : 0);
          l1[o] = (float) lam;
          l0[o] = f32 ? 1f - (float) lam : (float) (1 - lam);
        }
        long[] wshape = axis == in.dim() - 1 ? new long[] {osz} : new long[] {osz, 1};
        String a = node("Gather", at, List.of(y, constantLongs(at + "/index0", i0)), intAttr("axis", axis));
        String b = node("Gather", at, List.of(y, constantLongs(at + "/index1", i1)), intAttr("axis", axis));
        y = node("Add", at, node("Mul", at, a, constantTensor(floatTensor(at + "/lambda0", l0, wshape))),
            node("Mul", at, b, constantTensor(floatTensor(at + "/lambda1", l1, wshape))));
      }
      return y;
    }

    /**
     * Multi-head attention on batch-first [N, L, E] query and [N, S, E] key and value: the three projections, heads
     * [N, H, L, hd], softmax(q k^T / sqrt(hd) + masks) v, the heads joined and the output projection.
     */
    private String attend(MultiheadAttention a, String q, String k, String v, Tensor mask, Tensor keyPadding,
        boolean causal, int l, int s) {
      String at = at(a);
      int e = a.embedDim(), h = a.numHeads(), hd = e / h;
      Tensor w = a.param("in_proj_weight");
      Tensor b = a.hasParam("in_proj_bias") ? a.param("in_proj_bias") : null;
      String[] proj = new String[3];
      String[] in = {q, k, v};
      String[] which = {"q", "k", "v"};
      for (int i = 0; i < 3; i++) {
        Tensor wi = w.narrow(0, i * e, e).t().contiguous();
        String y = node("MatMul", at, in[i], constantTensor(floatTensor(at + ".in_proj_weight/" + which[i] + "_t",
            wi.toFloatArray(), new long[] {e, e})));
        if (b != null) {
          y = node("Add", at, y, constantTensor(floatTensor(at + ".in_proj_bias/" + which[i],
              b.narrow(0, i * e, e).contiguous().toFloatArray(), new long[] {e})));
        }
        proj[i] = node("Reshape", at, y, constantLongs(at + "/heads", new long[] {0, 0, h, hd}));
      }
      String qh = node("Transpose", at, List.of(proj[0]), intsAttr("perm", 0, 2, 1, 3)); // [N, H, L, hd]
      String kt = node("Transpose", at, List.of(proj[1]), intsAttr("perm", 0, 2, 3, 1)); // [N, H, hd, S]
      String vh = node("Transpose", at, List.of(proj[2]), intsAttr("perm", 0, 2, 1, 3)); // [N, H, S, hd]
      String scores = node("Mul", at, node("MatMul", at, qh, kt), constant(at + "/scale", (float) (1 / Math.sqrt(hd))));
      if (mask != null) {
        String mb = additive(at, mask);
        if (mask.dim() == 3) mb = node("Reshape", at, mb, constantLongs(at + "/mask_shape", new long[] {-1, h, l, s}));
        scores = node("Add", at, scores, mb);
      }
      if (keyPadding != null) {
        String kp = node("Unsqueeze", at, additive(at, keyPadding), constantLongs(at + "/axes", new long[] {1, 2}));
        scores = node("Add", at, scores, kp);
      }
      if (causal) {
        float[] c = new float[l * s];
        for (int i = 0; i < l; i++) for (int j = i + 1; j < s; j++) c[i * s + j] = Float.NEGATIVE_INFINITY;
        scores = node("Add", at, scores, constantTensor(floatTensor(at + "/causal", c, new long[] {l, s})));
      }
      String attn = node("Softmax", at, List.of(scores), intAttr("axis", -1));
      String ctx = node("Transpose", at, List.of(node("MatMul", at, attn, vh)), intsAttr("perm", 0, 2, 1, 3));
      String joined = node("Reshape", at, ctx, constantLongs(at + "/joined", new long[] {0, 0, e}));
      Linear out = (Linear) a.child("out_proj");
      return linear(at(out), joined, out, 3);
    }

    /** A mask as an additive float mask: bool true becomes -inf, float masks are added as they are. */
    private String additive(String at, Tensor mask) {
      String n = names.get(mask);
      if (mask.dtype() != DType.BOOL) return n;
      return node("Where", at, n, constant(at + "/minus_inf", Float.NEGATIVE_INFINITY), constant(at + "/zero", 0f));
    }

    private String encoderLayer(TransformerEncoderLayer layer, String x, Tensor mask, Tensor keyPadding, boolean causal,
        int l) {
      String at = at(layer);
      MultiheadAttention sa = layer.selfAttn();
      if (layer.normFirst()) {
        String n1 = norm(layer.child("norm1"), x);
        x = node("Add", at, x, attend(sa, n1, n1, n1, mask, keyPadding, causal, l, l));
        return node("Add", at, x, feedForward(layer, layer.activation(), norm(layer.child("norm2"), x)));
      }
      x = norm(layer.child("norm1"), node("Add", at, x, attend(sa, x, x, x, mask, keyPadding, causal, l, l)));
      return norm(layer.child("norm2"), node("Add", at, x, feedForward(layer, layer.activation(), x)));
    }

    private String decoderLayer(TransformerDecoderLayer layer, String x, String mem, Masks ms, int l, int s) {
      String at = at(layer);
      MultiheadAttention sa = (MultiheadAttention) layer.child("self_attn");
      MultiheadAttention ca = (MultiheadAttention) layer.child("multihead_attn");
      boolean causal = ms.causal();
      if (layer.normFirst()) {
        String n1 = norm(layer.child("norm1"), x);
        x = node("Add", at, x, attend(sa, n1, n1, n1, ms.tgtMask(), ms.tgtKeyPadding(), causal, l, l));
        x = node("Add", at, x, attend(ca, norm(layer.child("norm2"), x), mem, mem, ms.memoryMask(),
            ms.memoryKeyPadding(), false, l, s));
        return node("Add", at, x, feedForward(layer, layer.activation(), norm(layer.child("norm3"), x)));
      }
      x = norm(layer.child("norm1"), node("Add", at, x, attend(sa, x, x, x, ms.tgtMask(), ms.tgtKeyPadding(), causal, l,
          l)));
      x = norm(layer.child("norm2"), node("Add", at, x, attend(ca, x, mem, mem, ms.memoryMask(), ms.memoryKeyPadding(),
          false, l, s)));
      return norm(layer.child("norm3"), node("Add", at, x, feedForward(layer, layer.activation(), x)));
    }

    private String encoder(TransformerEncoder e, String x, Tensor mask, Tensor keyPadding, boolean causal, int l) {
      for (int i = 0; i < e.numLayers(); i++) x = encoderLayer(e.layer(i), x, mask, keyPadding, causal, l);
      return e.namedChildren().containsKey("norm") ? norm(e.child("norm"), x) : x;
    }

    private String decoder(TransformerDecoder d, String x, String mem, Masks ms, int l, int s) {
      for (int i = 0; i < d.numLayers(); i++) x = decoderLayer(d.layer(i), x, mem, ms, l, s);
      return d.namedChildren().containsKey("norm") ? norm(d.child("norm"), x) : x;
    }

    private String feedForward(Module layer, String activation, String x) {
      Linear l1 = (Linear) layer.child("linear1");
      Linear l2 = (Linear) layer.child("linear2");
      String h = linear(at(l1), x, l1, 3);
      h = "relu".equals(activation) ? node("Relu", at(layer), h) : gelu(at(layer), h, false);
      return linear(at(l2), h, l2, 3);
    }

    /** The norm of a transformer layer or stack: LayerNorm or RMSNorm. */
    private String norm(Module n, String x) {
      if (n instanceof LayerNorm ln) return layerNorm(at(n), x, ln);
      if (n instanceof RMSNorm rn) return rmsNorm(at(n), x, rn);
      throw new OnnxExportException("Onnx.export: norm " + describe(n) + " of a transformer has no ONNX translation "
          + "(supported: LayerNorm, RMSNorm)");
    }

    // ---- tensor ops between layers, read from the autograd tape ----

    /**
     * The graph value of {@code t}: the model input, a layer's output, a parameter or buffer (an initializer named by
     * its state dict key), a 0-d constant, or an op the tape recorded (translated after its inputs). Ops record no
     * attributes, so those that have some are read off the traced shapes and strides, and refused where that is
     * ambiguous. {@code where} is the module whose forward computes it, named in the failure.
     */
    private String resolve(Tensor t, Module where) {
      String n = names.get(t);
      if (n != null) return n;
      String key = stateNames.get(t);
      if (key != null) {
        n = initializer(key, t);
        names.put(t, n);
        return n;
      }
      Node f = t.gradFn();
      if (f == null) {
        if (t.dim() == 0) {
          n = t.dtype().isFloatingPoint() ? constant("const", (float) t.item())
              : constantLongs("const", new long[] {t.toLongArray()[0]});
          if (!t.dtype().isFloatingPoint()) n = node("Reshape", "const", n, constantLongs("scalar", new long[0]));
          names.put(t, n);
          return n;
        }
        throw new OnnxExportException("Onnx.export: " + describe(where) + " computes a " + t.dtype() + " "
            + Arrays.toString(t.shape()) + " tensor outside its layers without gradient (from an integer input, a "
            + "constant or under Grad.off()), which the tape does not record, so export cannot follow it");
      }
      List<Tensor> saved = f.savedTensors();
      int self = -1;
      for (int i = 0; i < saved.size(); i++) if (saved.get(i) == t) self = i;
      if (self < 0) {
        throw new OnnxExportException("Onnx.export: op '" + f.name() + "' in the forward of " + describe(where)
            + " wrote its result in place, which export cannot follow");
      }
      List<Tensor> in = saved.subList(0, self);
      List<String> x = new ArrayList<>();
      for (Tensor i : in) x.add(resolve(i, where));
      n = op(f.name(), in, x, t, where);
      names.put(t, n);
      return n;
    }

    private String op(String name, List<Tensor> in, List<String> x, Tensor out, Module where) {
      String at = at(where) + "/" + name;
      String onnx = switch (name) {
        case "add" -> "Add";
        case "sub" -> "Sub";
        case "mul" -> "Mul";
        case "div" -> "Div";
        case "pow" -> "Pow";
        case "maximum" -> "Max";
        case "minimum" -> "Min";
        case "matmul" -> "MatMul";
        case "neg" -> "Neg";
        case "abs" -> "Abs";
        case "exp" -> "Exp";
        case "log" -> "Log";
        case "sqrt" -> "Sqrt";
        case "reciprocal" -> "Reciprocal";
        case "sin" -> "Sin";
        case "cos" -> "Cos";
        case "tanh" -> "Tanh";
        case "sigmoid" -> "Sigmoid";
        case "relu" -> "Relu";
        case "clone", "contiguous", "cast", "to" -> out.dtype().isFloatingPoint() && in.size() == 1
            && in.get(0).dtype().isFloatingPoint() ? "Identity" : null;
        default -> null;
      };
      if (onnx != null && x.size() == (List.of("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "MatMul").contains(onnx) ? 2 : 1)) {
        return node(onnx, at, x);
      }
      if (x.size() == 1) {
        String a = x.get(0);
        Tensor i = in.get(0);
        switch (name) {
          case "rsqrt": return node("Reciprocal", at, node("Sqrt", at, a));
          case "square": return node("Mul", at, a, a);
          case "log1p": return node("Log", at, node("Add", at, a, constant(at + "/one", 1f)));
          case "expm1": return node("Sub", at, node("Exp", at, a), constant(at + "/one", 1f));
          case "gelu": return gelu(at, a, false);
          case "gelu_tanh": return gelu(at, a, true);
          case "silu": return node("Mul", at, a, node("Sigmoid", at, a));
          case "mish": return node("Mul", at, a, node("Tanh", at, softplus(at, a, 1, 20)));
          case "sum": return reduce("ReduceSum", at, a, i, out, where);
          case "amax": return reduce("ReduceMax", at, a, i, out, where);
          case "amin": return reduce("ReduceMin", at, a, i, out, where);
          case "softmax", "log_softmax": return softmax(name, at, a, out, where);
          case "slice": return slice(at, a, i, out, where);
          case "expand": return expand(at, a, i, out);
          case "select": return select(at, a, i, out, where);
          case "permute": return permute(at, a, i, out, where);
          case "reshape", "view": // also flatten, squeeze, unsqueeze, unflatten: row-major order is kept
            if (i.numel() == out.numel()) return reshapeLike(at, a, i, out);
            break;
          default:
            break;
        }
      }
      if ("cat".equals(name) && !in.isEmpty()) {
        int axis = -1;
        for (int d = 0; d < out.dim(); d++) if (out.size(d) != in.get(0).size(d)) axis = d;
        return node("Concat", at, x, intAttr("axis", Math.max(axis, 0)));
      }
      if ("linear".equals(name) && (x.size() == 2 || x.size() == 3)) {
        String y = node("MatMul", at, x.get(0), node("Transpose", at, List.of(x.get(1)), intsAttr("perm", 1, 0)));
        return x.size() == 3 ? node("Add", at, y, x.get(2)) : y;
      }
      if ("addmm".equals(name) && x.size() == 3) return node("Add", at, node("MatMul", at, x.get(1), x.get(2)), x.get(0));
      throw new OnnxExportException("Onnx.export: op '" + name + "' (" + in.size() + " inputs, output "
          + Arrays.toString(out.shape()) + ") in the forward of " + describe(where) + " has no ONNX translation: the "
          + "tape records ops without their attributes, and export reads only those it can infer from shapes (add, "
          + "sub, mul, div, pow, maximum, minimum, matmul, linear, addmm, unary ops without parameters, views and "
          + "reshapes, permute, slice, select, expand, sum, mean, amax, amin, softmax, log_softmax, cat); wrap it in a layer "
          + "of dev.ember.nn");
    }

    /**
     * Reshape to the traced shape with the batch left dynamic: the leading dims both shapes share are copied (0);
     * after them, the first dim that is a multiple of the example's batch size is inferred (-1), which is also
     * right for a tensor that does not depend on the batch, whose other dims are then all fixed.
     */
    private String reshapeLike(String at, String x, Tensor in, Tensor out) {
      long[] target = new long[out.dim()];
      int d = 0;
      for (; d < out.dim() && d < in.dim() && out.size(d) == in.size(d); d++) target[d] = 0;
      int batch = exampleBatch();
      boolean inferred = false;
      for (; d < out.dim(); d++) {
        boolean here = !inferred && batch > 0 && out.size(d) % batch == 0 && out.size(d) > 0;
        target[d] = here ? -1 : out.size(d);
        inferred |= here;
      }
      return node("Reshape", at, x, constantLongs(at + "/shape", target));
    }

    /** The example input's batch size (its dynamic dimension), or 0 without one. */
    private int exampleBatch() {
      Tensor x = rootArgs.get(0);
      int axis = batchAxis(model, 0, x);
      return axis >= 0 ? x.size(axis) : 0;
    }

    /** A permutation read off the view's strides; refused where two dims of equal stride and size differ. */
    private String permute(String at, String x, Tensor in, Tensor out, Module where) {
      int r = in.dim();
      int[] perm = new int[r];
      boolean[] used = new boolean[r];
      int[] is = in.strides(), os = out.strides();
      for (int d = 0; d < r; d++) {
        int pick = -1;
        for (int j = 0; j < r; j++) {
          if (!used[j] && is[j] == os[d] && in.size(j) == out.size(d)) {
            if (pick >= 0 && in.size(j) != 1) {
              throw new OnnxExportException("Onnx.export: a permute in the forward of " + describe(where)
                  + " of a " + Arrays.toString(in.shape()) + " tensor is ambiguous from its strides");
            }
            if (pick < 0) pick = j;
          }
        }
        if (pick < 0) {
          throw new OnnxExportException("Onnx.export: a permute in the forward of " + describe(where)
              + " cannot be read off the strides of " + Arrays.toString(in.shape()));
        }
        used[pick] = true;
        perm[d] = pick;
      }
      return node("Transpose", at, List.of(x), intsAttr("perm", perm));
    }

    /** A reduction over the dims the traced shapes show; refused where two choices of dims fit them. */
    private String reduce(String op, String at, String x, Tensor in, Tensor out, Module where) {
      int r = in.dim();
      List<long[]> fits = new ArrayList<>();
      boolean keep = out.dim() == r && r > 0;
      for (int mask = 1; mask < (1 << r); mask++) {
        List<Integer> kept = new ArrayList<>();
        long[] axes = new long[Integer.bitCount(mask)];
        int k = 0;
        for (int d = 0; d < r; d++) {
          if ((mask & (1 << d)) != 0) axes[k++] = d;
          else kept.add(in.size(d));
        }
        boolean fit;
        if (keep) {
          fit = true;
          for (int d = 0; d < r; d++) fit &= (mask & (1 << d)) != 0 ? out.size(d) == 1 : out.size(d) == in.size(d);
        } else {
          fit = kept.size() == out.dim();
          for (int d = 0; fit && d < kept.size(); d++) fit = kept.get(d) == out.size(d);
        }
        // reducing a dim of size 1 changes nothing: keep the fits that reduce only dims of length > 1
        boolean minimal = true;
        for (long a : axes) minimal &= in.size((int) a) > 1 || !keep;
        if (fit && minimal) fits.add(axes);
      }
      if (r == 0 || out.numel() == in.numel() && keep) return node("Identity", at, x);
      if (fits.size() != 1) {
        throw new OnnxExportException("Onnx.export: a " + op + " in the forward of " + describe(where) + " from "
            + Arrays.toString(in.shape()) + " to " + Arrays.toString(out.shape()) + " is "
            + (fits.isEmpty() ? "not a sum over dims" : "ambiguous: " + fits.size() + " choices of dims fit")
            + "; trace with an example input whose sizes differ");
      }
      if (op.equals("ReduceSum")) {
        return node(op, at, List.of(x, constantLongs(at + "/axes", fits.get(0))), intAttr("keepdims", keep ? 1 : 0));
      }
      return node(op, at, List.of(x), longsAttr("axes", fits.get(0)), intAttr("keepdims", keep ? 1 : 0)); // opset 17
    }

    /**
     * softmax or log_softmax: the tape does not keep the dim, so it is the one dim along which the traced output's
     * probabilities sum to 1; refused when that is not a single dim.
     */
    private String softmax(String name, String at, String x, Tensor out, Module where) {
      boolean log = name.equals("log_softmax");
      List<Integer> dims = new ArrayList<>();
      try (Grad off = Grad.off()) {
        Tensor p = log ? out.exp() : out;
        for (int d = 0; d < out.dim(); d++) {
          float[] sums = p.sum(new int[] {d}, false).toFloatArray();
          boolean one = sums.length > 0;
          for (float v : sums) one &= Math.abs(v - 1) <= 1e-4;
          if (one) dims.add(d);
        }
      }
      if (dims.size() != 1) {
        throw new OnnxExportException("Onnx.export: the dim of a " + name + " in the forward of " + describe(where)
            + " over " + Arrays.toString(out.shape()) + " cannot be told from its output (" + dims.size()
            + " dims sum to 1); use a Softmax/LogSoftmax layer");
      }
      return node(log ? "LogSoftmax" : "Softmax", at, List.of(x), intAttr("axis", dims.get(0)));
    }

    /** A slice (narrow, x[a:b:s]) read off the view: the one dim whose size or stride changed, start from the offset. */
    private String slice(String at, String x, Tensor in, Tensor out, Module where) {
      int[] is = in.strides(), os = out.strides();
      int axis = -1;
      for (int d = 0; d < in.dim(); d++) {
        if (in.size(d) != out.size(d) || (is[d] != os[d] && out.size(d) > 1)) {
          if (axis >= 0 || is[d] == 0) {
            throw new OnnxExportException("Onnx.export: a slice in the forward of " + describe(where) + " from "
                + Arrays.toString(in.shape()) + " to " + Arrays.toString(out.shape()) + " cannot be read off its view");
          }
          axis = d;
        }
      }
      if (axis < 0) return node("Identity", at, x);
      batchSized("slice", axis, in, out, where);
      long start = (out.offset() - in.offset()) / is[axis];
      long step = out.size(axis) > 1 ? os[axis] / is[axis] : 1;
      long end = start + (out.size(axis) - 1) * step + 1;
      return node("Slice", at, x, constantLongs(at + "/starts", new long[] {start}), constantLongs(at + "/ends",
          new long[] {end}), constantLongs(at + "/axes", new long[] {axis}), constantLongs(at + "/steps", new long[] {step}));
    }

    /**
     * An expand as ONNX Expand (broadcasting): the dims it grows get their traced size, except one of the example's
     * batch size, which is the model input's batch at run time (Shape, Gather); the others stay 1.
     */
    private String expand(String at, String x, Tensor in, Tensor out) {
      int lead = out.dim() - in.dim();
      int batch = exampleBatch();
      List<String> parts = new ArrayList<>();
      List<Long> fixed = new ArrayList<>();
      for (int d = 0; d < out.dim(); d++) {
        boolean grown = d < lead || (in.size(d - lead) == 1 && out.size(d) != 1);
        if (grown && out.size(d) == batch && batch > 1) {
          if (!fixed.isEmpty()) parts.add(constantLongs(at + "/shape", fixed.stream().mapToLong(Long::longValue).toArray()));
          fixed.clear();
          String shape = node("Shape", at, INPUT);
          parts.add(node("Gather", at, List.of(shape, constantLongs(at + "/batch_axis",
              new long[] {batchAxis(model, 0, rootArgs.get(0))})), intAttr("axis", 0)));
        } else {
          fixed.add(grown ? (long) out.size(d) : 1L);
        }
      }
      if (!fixed.isEmpty()) parts.add(constantLongs(at + "/shape", fixed.stream().mapToLong(Long::longValue).toArray()));
      String shape = parts.size() == 1 ? parts.get(0) : node("Concat", at, parts, intAttr("axis", 0));
      return node("Expand", at, x, shape);
    }

    /**
     * Refuses a slice or select along a dim of the example's batch size (above 1): its bounds or index were computed
     * for that size (x.narrow(0, 1, x.size(0) - 1), x.select(0, n - 1)), and the graph, whose batch is dynamic, would
     * keep them for every batch: wrong rows, or an index error, at any other size. A dim that only happens to have
     * that size is refused too; the message says to export with another example batch size then.
     */
    private void batchSized(String op, int axis, Tensor in, Tensor out, Module where) {
      int batch = exampleBatch();
      if (batch <= 1 || in.size(axis) != batch) return;
      throw new OnnxExportException("Onnx.export: a " + op + " in the forward of " + describe(where) + " from "
          + Arrays.toString(in.shape()) + " to " + Arrays.toString(out.shape()) + " cuts dim " + axis + ", whose size "
          + batch + " is the example's batch size: its bounds would be fixed for every batch of the exported graph;"
          + " keep the batch whole in the forward, or, if dim " + axis + " is not the batch, export with an example"
          + " input of another batch size");
    }

    /** A select (x[:, i]) read off the view: the dim whose removal leaves the output's sizes and strides. */
    private String select(String at, String x, Tensor in, Tensor out, Module where) {
      int[] is = in.strides(), os = out.strides();
      List<Integer> fits = new ArrayList<>();
      for (int a = 0; a < in.dim(); a++) {
        boolean fit = out.dim() == in.dim() - 1;
        for (int d = 0, o = 0; fit && d < in.dim(); d++) {
          if (d == a) continue;
          fit = in.size(d) == out.size(o) && (is[d] == os[o] || out.size(o) == 1);
          o++;
        }
        long delta = out.offset() - in.offset();
        if (fit && is[a] != 0 && delta % is[a] == 0 && delta / is[a] < in.size(a)) fits.add(a);
      }
      if (fits.size() != 1) {
        throw new OnnxExportException("Onnx.export: a select in the forward of " + describe(where) + " from "
            + Arrays.toString(in.shape()) + " to " + Arrays.toString(out.shape()) + " cannot be read off its view ("
            + fits.size() + " dims fit)");
      }
      int a = fits.get(0);
      batchSized("select", a, in, out, where);
      long index = (out.offset() - in.offset()) / is[a];
      ByteBuffer buf = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(index);
      String idx = constantTensor(TensorProto.newBuilder().setName(at + "/index")
          .setDataType(TensorProto.DataType.INT64_VALUE).setRawData(ByteString.copyFrom(buf.array())).build());
      return node("Gather", at, List.of(x, idx), intAttr("axis", a));
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
      if (dt == DType.BOOL) return TensorProto.DataType.BOOL_VALUE;
      return TensorProto.DataType.FLOAT_VALUE;
    }

    private static ValueInfoProto valueInfo(String name, int[] shape, int batchAxis, int elemType) {
      TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
      for (int i = 0; i < shape.length; i++) {
        TensorShapeProto.Dimension.Builder d = TensorShapeProto.Dimension.newBuilder();
        if (i == batchAxis) d.setDimParam(BATCH);
        else d.setDimValue(shape[i]);
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

  /** The layers added for issue #36 item 5, translated by {@code Tracer.translateMore}. */
  private static final class Layers {
    static final String NAMES = "GroupNorm, RMSNorm, ELU, LeakyReLU, Hardswish, Softplus, Mish, AdaptiveAvgPool2d, "
        + "AdaptiveMaxPool2d, AvgPool1d, MaxPool1d, Upsample, Unflatten, Bilinear, LinearReLU, ConvReLU2d, "
        + "SinusoidalPositionalEncoding, LearnedPositionalEmbedding, MultiheadAttention, TransformerEncoderLayer, "
        + "TransformerEncoder, TransformerDecoderLayer, TransformerDecoder, Transformer; containers: Sequential, "
        + "ModuleList, ModuleDict, Residual";

    private Layers() {}

    static boolean known(Module m) {
      return m instanceof GroupNorm || m instanceof RMSNorm || m instanceof ELU || m instanceof LeakyReLU
          || m instanceof Hardswish || m instanceof Softplus || m instanceof Mish || m instanceof AdaptiveAvgPool2d
          || m instanceof AdaptiveMaxPool2d || m instanceof AvgPool1d || m instanceof MaxPool1d || m instanceof Upsample
          || m instanceof Unflatten || m instanceof Bilinear || m instanceof LinearReLU || m instanceof ConvReLU2d
          || m instanceof SinusoidalPositionalEncoding || m instanceof LearnedPositionalEmbedding
          || m instanceof MultiheadAttention || m instanceof TransformerEncoderLayer || m instanceof TransformerEncoder
          || m instanceof TransformerDecoderLayer || m instanceof TransformerDecoder || m instanceof Transformer;
    }
  }
}
