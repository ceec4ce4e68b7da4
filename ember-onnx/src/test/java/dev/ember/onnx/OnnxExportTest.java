package dev.ember.onnx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.BatchNorm2d;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Dropout;
import dev.ember.nn.Linear;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.onnx.proto.OnnxProto.GraphProto;
import dev.ember.onnx.proto.OnnxProto.ModelProto;
import dev.ember.onnx.proto.OnnxProto.NodeProto;
import dev.ember.onnx.proto.OnnxProto.TensorProto;
import dev.ember.onnx.proto.OnnxProto.TensorShapeProto;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The exported protobuf's structure, the layers export refuses, and the file handling. */
class OnnxExportTest {
  @TempDir
  Path dir;

  @Test
  void modelHeaderDynamicBatchAndWeightsUnderStateDictKeys() throws Exception {
    Module mlp = Models.mlp(784, 256, 128, 10);
    Path file = dir.resolve("mlp.onnx");
    Onnx.export(mlp, Tensor.randn(new Generator(0), 4, 1, 28, 28), file);
    ModelProto model = ModelProto.parseFrom(Files.readAllBytes(file));
    assertEquals(8, model.getIrVersion());
    assertEquals(1, model.getOpsetImportCount());
    assertEquals("", model.getOpsetImport(0).getDomain());
    assertEquals(17, model.getOpsetImport(0).getVersion());
    GraphProto g = model.getGraph();
    assertEquals(List.of(Onnx.INPUT), g.getInputList().stream().map(v -> v.getName()).toList());
    List<TensorShapeProto.Dimension> in = g.getInput(0).getType().getTensorType().getShape().getDimList();
    assertEquals(Onnx.BATCH, in.get(0).getDimParam());
    assertEquals(List.of(1L, 28L, 28L), in.subList(1, 4).stream().map(d -> d.getDimValue()).toList());
    assertEquals(TensorProto.DataType.FLOAT_VALUE, g.getInput(0).getType().getTensorType().getElemType());
    List<TensorShapeProto.Dimension> out = g.getOutput(0).getType().getTensorType().getShape().getDimList();
    assertEquals(Onnx.BATCH, out.get(0).getDimParam());
    assertEquals(10, out.get(1).getDimValue());
    assertEquals(List.of("Flatten", "Gemm", "Relu", "Gemm", "Relu", "Gemm", "Identity"),
        g.getNodeList().stream().map(NodeProto::getOpType).toList());
    // every weight is an initializer under its state dict key, with its shape and float32 values
    for (var e : mlp.stateDict().entrySet()) {
      TensorProto t = g.getInitializerList().stream().filter(i -> i.getName().equals(e.getKey())).findFirst()
          .orElseThrow(() -> new AssertionError("no initializer " + e.getKey()));
      assertEquals(TensorProto.DataType.FLOAT_VALUE, t.getDataType());
      assertArrayEquals(java.util.Arrays.stream(e.getValue().shape()).asLongStream().toArray(),
          t.getDimsList().stream().mapToLong(Long::longValue).toArray());
      float[] values = new float[(int) e.getValue().numel()];
      ByteBuffer.wrap(t.getRawData().toByteArray()).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(values);
      assertArrayEquals(e.getValue().toFloatArray(), values, e.getKey());
    }
  }

  @Test
  void compositeModulesExportUnderTheirPaths() {
    ModelProto model = Onnx.toModelProto(Models.lenet5(10), Tensor.randn(new Generator(1), 2, 1, 28, 28));
    Set<String> names = model.getGraph().getInitializerList().stream().map(TensorProto::getName)
        .collect(Collectors.toSet());
    assertTrue(names.containsAll(Set.of("features.0.weight", "features.3.bias", "classifier.1.weight",
        "classifier.5.bias")), names.toString());
  }

  @Test
  void exportRunsInEvalModeAndRestoresTheModes() {
    BatchNorm2d bn = new BatchNorm2d(3);
    Sequential model = new Sequential(new Conv2d(2, 3, 3), bn, new Dropout(0.5), new ReLU());
    model.train();
    float[] mean = bn.runningMean().toFloatArray();
    ModelProto m = Onnx.toModelProto(model, Tensor.randn(new Generator(2), 4, 2, 6, 6));
    for (Module sub : model.modules()) assertTrue(sub.isTraining(), sub.name() + " left in eval mode");
    assertArrayEquals(mean, bn.runningMean().toFloatArray(), "export must not update running statistics");
    assertEquals(List.of("Conv", "BatchNormalization", "Identity", "Relu", "Identity"),
        m.getGraph().getNodeList().stream().map(NodeProto::getOpType).toList());
    Sequential evalModel = new Sequential(new Dropout(0.5));
    evalModel.eval();
    Onnx.toModelProto(evalModel, Tensor.randn(new Generator(3), 2, 3));
    assertFalse(evalModel.isTraining());
    assertFalse(evalModel.get(0).isTraining());
  }

  @Test
  void unsupportedOpIsNamedWithTheModulePath() {
    Module model = new Sequential(new Linear(4, 4), new Sequential(new ReLU(), new Cumulative()));
    OnnxExportException e = assertThrows(OnnxExportException.class,
        () -> Onnx.toModelProto(model, Tensor.randn(new Generator(4), 2, 4)));
    assertTrue(e.getMessage().contains("op 'clamp' (1 inputs, output [2, 4]) in the forward of '1.1' ("
        + Cumulative.class.getName() + ") has no ONNX translation"), e.getMessage());
  }

  @Test
  void settingsOpset17CannotExpressAreRefused() {
    Module circular = new Sequential(new Conv2d(2, 2, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1},
        new int[] {1, 1}, 1, true, "circular", new Generator(5)));
    OnnxExportException e = assertThrows(OnnxExportException.class,
        () -> Onnx.toModelProto(circular, Tensor.randn(new Generator(5), 1, 2, 5, 5)));
    assertTrue(e.getMessage().contains("'0' (dev.ember.nn.Conv2d) uses padding_mode='circular'"), e.getMessage());
    Module batchStats = new Sequential(new Linear(3, 3), new dev.ember.nn.BatchNorm1d(3, 1e-5, 0.1, true, false));
    e = assertThrows(OnnxExportException.class,
        () -> Onnx.toModelProto(batchStats, Tensor.randn(new Generator(6), 4, 3)));
    assertTrue(e.getMessage().contains("'1' (dev.ember.nn.BatchNorm1d) has track_running_stats=False"),
        e.getMessage());
    Module maxNorm = new Sequential(new dev.ember.nn.Embedding(5, 2, null, 1.0, 2, new Generator(6)));
    e = assertThrows(OnnxExportException.class,
        () -> Onnx.toModelProto(maxNorm, Tensor.of(new long[] {1, 2, 3, 4}, 2, 2)));
    assertTrue(e.getMessage().contains("'0' (dev.ember.nn.Embedding) has max_norm=1.0"), e.getMessage());
  }

  /** Drops the first sample: a slice whose bounds come from the example's batch size. */
  static final class DropFirst extends Module {
    @Override
    public Tensor forward(Tensor x) {
      return x.narrow(0, 1, x.size(0) - 1);
    }
  }

  /** Takes the last sample. */
  static final class LastSample extends Module {
    @Override
    public Tensor forward(Tensor x) {
      return x.select(0, x.size(0) - 1);
    }
  }

  /** The first two features: a slice of a dim that is not the batch. */
  static final class FirstFeatures extends Module {
    @Override
    public Tensor forward(Tensor x) {
      return x.narrow(1, 0, 2);
    }
  }

  @Test
  void slicesAndSelectsAlongTheBatchAreRefusedNotFixedToTheExamplesBatch() {
    // exported as-is, the graph kept [1, 3) and index 2 for every batch: 2 rows at batch 5, an index error at 2
    for (Module m : List.of(new DropFirst(), new LastSample())) {
      OnnxExportException e = assertThrows(OnnxExportException.class,
          () -> Onnx.toModelProto(m, Tensor.randn(new Generator(8), 3, 4)));
      assertTrue(e.getMessage().contains("cuts dim 0, whose size 3 is the example's batch size"), e.getMessage());
    }
    assertEquals(List.of("Slice", "Identity"), Onnx.toModelProto(new FirstFeatures(), Tensor.randn(new Generator(8), 3, 4))
        .getGraph().getNodeList().stream().map(NodeProto::getOpType).toList());
    // a dim that only has the batch's size: refused, and exported with another example batch
    assertThrows(OnnxExportException.class, () -> Onnx.toModelProto(new FirstFeatures(),
        Tensor.randn(new Generator(8), 4, 4)));
  }

  /** Doubles between its two layers with a tensor op, which the tape records. */
  static final class ScaledBetween extends Module {
    final Linear a;
    final Linear b;

    ScaledBetween() {
      a = registerModule("a", new Linear(3, 3));
      b = registerModule("b", new Linear(3, 2));
    }

    @Override
    public Tensor forward(Tensor x) {
      return b.call(a.call(x).mul(2));
    }
  }

  /** Ends with a tensor op after its layer. */
  static final class ScaledOutput extends Module {
    final Linear a;

    ScaledOutput() {
      a = registerModule("a", new Linear(3, 3));
    }

    @Override
    public Tensor forward(Tensor x) {
      return a.call(x).mul(2);
    }
  }

  @Test
  void tensorOpsBetweenLayersBecomeNodes() {
    ModelProto m = Onnx.toModelProto(new Sequential(new ScaledBetween()), Tensor.randn(new Generator(7), 2, 3));
    assertEquals(List.of("Gemm", "Mul", "Gemm", "Identity"),
        m.getGraph().getNodeList().stream().map(NodeProto::getOpType).toList());
    m = Onnx.toModelProto(new ScaledOutput(), Tensor.randn(new Generator(7), 2, 3));
    assertEquals(List.of("Gemm", "Mul", "Identity"), m.getGraph().getNodeList().stream().map(NodeProto::getOpType).toList());
    // a sum whose dims the traced shapes do not tell apart is refused, naming the module
    OnnxExportException e = assertThrows(OnnxExportException.class,
        () -> Onnx.toModelProto(new Summed(), Tensor.randn(new Generator(7), 3, 3, 3)));
    assertTrue(e.getMessage().contains("a ReduceSum in the forward of '<root>' (" + Summed.class.getName() + ") from "
        + "[3, 3, 3] to [3, 3] is ambiguous"), e.getMessage());
  }

  @Test
  void badExampleInputsAreRefused() {
    Module model = new Linear(3, 2);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Onnx.toModelProto(model, Tensor.of(new boolean[] {true, false, true}, 1, 3)));
    assertTrue(e.getMessage().contains("must be floating point (or int64/int32 indices for an Embedding), got"),
        e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Onnx.toModelProto(model, Tensor.of(new float[] {1}, new int[0])));
  }

  @Test
  void writesAtomicallyAndLeavesTheOldFileOnFailure() throws Exception {
    Path file = dir.resolve("model.onnx");
    Files.writeString(file, "old");
    Module model = new Sequential(new Linear(3, 2), new Cumulative());
    assertThrows(OnnxExportException.class, () -> Onnx.export(model, Tensor.randn(new Generator(8), 2, 3), file));
    assertEquals("old", Files.readString(file));
    Onnx.export(new Linear(3, 2), Tensor.randn(new Generator(8), 2, 3), file);
    assertEquals(17, ModelProto.parseFrom(Files.readAllBytes(file)).getOpsetImport(0).getVersion());
    try (Stream<Path> files = Files.list(dir)) {
      assertEquals(new HashSet<>(List.of(file)), files.collect(Collectors.toSet()), "no temporary file left");
    }
  }

  /** A clamp, an op whose bounds the tape does not record. */
  static final class Cumulative extends Module {
    @Override
    public Tensor forward(Tensor x) {
      return x.clamp(-0.5, 0.5);
    }
  }

  /** A sum over dim 1 of a cube: which dim cannot be read off the shapes. */
  static final class Summed extends Module {
    @Override
    public Tensor forward(Tensor x) {
      return x.sum(new int[] {1}, false);
    }
  }
}
