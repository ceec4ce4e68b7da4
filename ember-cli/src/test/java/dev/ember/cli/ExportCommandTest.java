package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.io.SafeTensors;
import dev.ember.onnx.proto.OnnxProto.ModelProto;
import dev.ember.onnx.proto.OnnxProto.TensorProto;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ExportCommandTest {
  @TempDir Path dir;

  private record Run(int status, String out, String err) {}

  private static Run export(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
    String[] full = new String[args.length + 1];
    full[0] = "export";
    System.arraycopy(args, 0, full, 1, args.length);
    int status = Main.run(full, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  /** A run folder as train leaves it, as far as export reads it: run.properties and model.safetensors. */
  private Module run(String model) throws IOException {
    Module m = TrainCommand.model(model);
    Files.writeString(dir.resolve("run.properties"), "model=" + model + "\nepochs=1\n");
    SafeTensors.save(m.stateDict(), dir.resolve("model.safetensors"));
    return m;
  }

  @Test
  void exportsTheRunsTrainedWeights() throws IOException {
    Module lenet = run("lenet");
    Run r = export("--format", "onnx", dir.toString());
    assertEquals(0, r.status(), r.err());
    Path file = dir.resolve("model.onnx");
    assertTrue(r.out().startsWith("wrote " + file + " (ONNX opset 17, lenet"), r.out());
    ModelProto model = ModelProto.parseFrom(Files.readAllBytes(file));
    TensorProto w = model.getGraph().getInitializerList().stream()
        .filter(t -> t.getName().equals("features.0.weight")).findFirst().orElseThrow();
    float[] values = new float[6 * 25];
    ByteBuffer.wrap(w.getRawData().toByteArray()).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(values);
    assertArrayEquals(lenet.stateDict().get("features.0.weight").toFloatArray(), values);
  }

  @Test
  void writesWhereOutputSays() throws IOException {
    run("mlp");
    Path file = dir.resolve("out/mlp.onnx");
    Run r = export(dir.toString(), "--output", file.toString());
    assertEquals(0, r.status(), r.err());
    assertEquals(17, ModelProto.parseFrom(Files.readAllBytes(file)).getOpsetImport(0).getVersion());
  }

  @Test
  void refusesWhatItCannotExport() throws IOException {
    Run r = export(dir.toString());
    assertEquals(2, r.status());
    assertTrue(r.err().contains("not a run folder (it has no run.properties)"), r.err());
    run("mlp");
    r = export("--format", "tflite", dir.toString());
    assertEquals(2, r.status());
    assertTrue(r.err().contains("--format must be onnx, got 'tflite'"), r.err());
    r = export();
    assertEquals(2, r.status());
    assertTrue(r.err().contains("give the run folder"), r.err());
  }
}
